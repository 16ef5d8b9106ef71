"""A faster `attrs.evolve` for the model's frozen records.

The model copies a record on every event (the System alone has 19 fields), and `attrs.evolve` looks the class's
fields up and builds a keyword dict on every call: it was the largest single cost of a system step. This `evolve`
works out once per class an attribute getter and the position of every field, then calls the class positionally.
The result is the same: the class's `__init__` runs, with its converters and validators. Classes whose `__init__`
does not take every field positionally under its own name fall back to `attrs.evolve`.
"""

from __future__ import annotations

import functools
import operator
from collections.abc import Mapping
from typing import TypeVar

import attrs
import immutables

T = TypeVar("T")


@functools.cache
def get_copy_plan(cls: type) -> tuple[dict[str, int], operator.attrgetter] | None:
    """(position of each field, getter of all fields in order), or None when the class needs attrs.evolve."""
    fields = attrs.fields(cls)
    if len(fields) < 2 or any(not f.init or f.kw_only or f.alias != f.name for f in fields):
        return None
    names = tuple(f.name for f in fields)
    return {name: position for position, name in enumerate(names)}, operator.attrgetter(*names)


def evolve(inst: T, **changes) -> T:
    """A copy of the attrs instance `inst` with `changes` applied, as `attrs.evolve`."""
    cls = inst.__class__
    plan = get_copy_plan(cls)
    if plan is None:
        return attrs.evolve(inst, **changes)
    positions, get_all = plan
    values = list(get_all(inst))
    for name, value in changes.items():
        position = positions.get(name)
        if position is None:
            raise TypeError(f"{cls.__name__}.__init__() got an unexpected keyword argument {name!r}")
        values[position] = value
    return cls(*values)


def discard(mapping: Mapping, key) -> Mapping:
    """The persistent map without `key` (the same map when absent).

    The model's maps are immutables.Map (a set costs 0.4 us against 2.9 us for a pyrsistent pmap, and a map is a
    few objects for the cyclic GC rather than a pvector of buckets); tests may still hand in a pmap.
    """
    if key not in mapping:
        return mapping
    return mapping.delete(key) if isinstance(mapping, immutables.Map) else mapping.discard(key)
