"""`evolve` for the model's frozen records: `attrs.evolve`'s result, with the way to copy worked out once per class
(benchmarks/NOTES.md has the figures that keep it):

- a record declared with `@record` (`@frozen(slots=False)`) and without converters, validators or `__attrs_post_init__`
  (the System and its big parts, copied several times per event) is copied by copying its `__dict__`: no
  `__init__` would do anything but store the values;
- any other record whose `__init__` takes every field positionally under its own name is rebuilt positionally
  from an attribute getter (its `__init__` runs, with its converters and validators);
- a named tuple (typing.NamedTuple) is rebuilt from its values, as its `_replace` does, without `_replace`'s
  Python-level `_make`;
- the rest falls back to `attrs.evolve`.
"""

from __future__ import annotations

import operator
from collections.abc import Callable, Mapping
from typing import TypeVar

import attrs
import immutables

T = TypeVar("T")


@attrs.frozen
class CopyPlan:
    positions: dict[str, int]
    get_all: operator.attrgetter | None
    # Copy the instance dict and store it with this setter (the class's `__dict__` descriptor, cheaper than
    # object.__setattr__); None: call the class positionally.
    set_dict: Callable | None
    is_named_tuple: bool = False


def get_copy_plan(cls: type) -> CopyPlan | None:
    """How to copy instances of `cls`, or None when only attrs.evolve will do."""
    if issubclass(cls, tuple) and hasattr(cls, "_fields"):
        return CopyPlan({name: position for position, name in enumerate(cls._fields)}, None, None, True)
    fields = attrs.fields(cls)
    if len(fields) < 2 or any(not f.init or f.kw_only or f.alias != f.name for f in fields):
        return None
    names = tuple(f.name for f in fields)
    positions = {name: position for position, name in enumerate(names)}
    plain = all(f.converter is None and f.validator is None for f in fields)
    if plain and "__slots__" not in cls.__dict__ and not hasattr(cls, "__attrs_post_init__"):
        descriptor = next(vars(klass)["__dict__"] for klass in cls.__mro__ if "__dict__" in vars(klass))
        return CopyPlan(positions, None, descriptor.__set__)
    return CopyPlan(positions, operator.attrgetter(*names), None)


# Bound once: a module global and an attribute lookup per copy were a measurable part of a system step.
_new = object.__new__
# `new_tuple(Cls, (a, b, ...))` is the named tuple `Cls(a, b, ...)` built without the class call (benchmarks/NOTES.md
# says why); every field is given, as no default applies.
new_tuple = tuple.__new__
# The copy plan of each class, looked up directly (cheaper per call than the functools.cache wrapper).
_PLANS: dict[type, CopyPlan | None] = {}
# For each record class copied by its `__dict__` (the big records, several copies per event): its field count and
# its `__dict__` setter, as one tuple read in one look-up; filled by the first copy through `_evolve_planned`.
_DICT_COPIERS: dict[type, tuple[int, Callable]] = {}


def evolve(inst: T, **changes) -> T:
    """A copy of the attrs instance or named tuple `inst` with `changes` applied, as `attrs.evolve` (or
    `_replace`)."""
    cls = type(inst)  # a call CPython specialises; `inst.__class__` is a generic descriptor read
    try:
        size, set_dict = _DICT_COPIERS[cls]
    except KeyError:
        return _evolve_planned(inst, changes)
    # A new dict, not `inst.__dict__ | changes`: that copies a split dict (the shared-key table attrs' __init__
    # leaves) as a split dict, and CPython 3.11 cannot specialise an attribute read of an instance whose dict is
    # split (every read takes the generic path, twice the cost). A combined dict is copied as fast.
    values = {**inst.__dict__, **changes}
    if len(values) != size:  # a change names a field the record does not have
        return _evolve_planned(inst, changes)
    copy = _new(cls)
    set_dict(copy, values)
    return copy


def _evolve_planned(inst: T, changes: dict) -> T:
    """`evolve` by the class's copy plan, worked out at its first copy."""
    cls = type(inst)
    try:
        plan = _PLANS[cls]
    except KeyError:
        plan = _PLANS[cls] = get_copy_plan(cls)
        if plan is not None and plan.set_dict is not None:
            _DICT_COPIERS[cls] = (len(plan.positions), plan.set_dict)
    if plan is None:
        return attrs.evolve(inst, **changes)
    positions = plan.positions
    if plan.set_dict is not None:
        values = {**inst.__dict__, **changes}
        if len(values) == len(positions):
            copy = _new(cls)
            plan.set_dict(copy, values)
            return copy
    elif positions.keys() >= changes.keys():
        values = list(inst) if plan.is_named_tuple else list(plan.get_all(inst))
        for name, value in changes.items():
            values[positions[name]] = value
        return new_tuple(cls, values) if plan.is_named_tuple else cls(*values)
    name = min(changes.keys() - positions.keys())
    raise TypeError(f"{cls.__name__}.__init__() got an unexpected keyword argument {name!r}")


def get_record_builder(cls: type[T]) -> Callable[[dict], T]:
    """A function building a record of `cls` from the dict of all its fields, without `__init__`, as `evolve`
    copies it: for a `@record` class without converters, validators or `__attrs_post_init__`, built at every event
    (attrs' frozen `__init__` stores each field through the instance dict, a quarter slower)."""
    plan = get_copy_plan(cls)
    if plan is None or plan.set_dict is None:
        raise TypeError(f"{cls.__name__} is not a record evolve copies by its __dict__")
    set_dict = plan.set_dict

    def build(values: dict) -> T:
        instance = _new(cls)
        set_dict(instance, values)
        return instance

    return build


def record(cls: type) -> type:
    """`attrs.frozen(slots=False)`: a dict-based frozen record, which `evolve` copies by copying its `__dict__`."""
    return attrs.frozen(slots=False)(cls)


def discard(mapping: Mapping, key) -> Mapping:
    """The persistent map without `key` (the same map when absent).

    The model's one persistent map is immutables.Map (benchmarks/NOTES.md says why).
    """
    return mapping.delete(key) if key in mapping else mapping


REPR_TEXT_LIMIT = 120


def get_bounded_repr(value: object) -> str:
    """A repr whose size does not grow with the state: collections show their type and length, long texts are
    cut, and records that use `bounded_repr` recurse. A failure report or a Ctrl-C never prints a whole System."""
    if isinstance(value, bool | int | float | None.__class__) or attrs.has(type(value)) and type(
            value).__repr__ is bounded_repr:
        return repr(value)
    if isinstance(value, str | bytes):
        text = repr(value)
        return text if len(text) <= REPR_TEXT_LIMIT else f"{text[:REPR_TEXT_LIMIT]}… ({len(value)} long)"
    if isinstance(value, Mapping | tuple | list | set | frozenset | immutables.Map) or hasattr(value, "__len__"):
        return f"<{type(value).__name__} of {len(value)}>"
    text = repr(value) if attrs.has(type(value)) and len(attrs.fields(type(value))) <= 12 else None
    if text is not None and len(text) <= REPR_TEXT_LIMIT:
        return text
    return f"<{type(value).__name__}>"


def bounded_repr(self: object) -> str:
    """`__repr__` of the big records (System, Broker, Store, ...): each field through get_bounded_repr."""
    fields = ", ".join(f"{f.name}={get_bounded_repr(getattr(self, f.name))}" for f in attrs.fields(type(self)))
    return f"{type(self).__name__}({fields})"
