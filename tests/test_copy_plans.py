"""How model.values.records copies each kind of record (its module docstring), checked on classes made inside each
test.

The model's own records get their copy plan at their first copy and keep it (`_PLANS`), and mutmut runs a mutant in
a process that has already copied them: a test reaches `get_copy_plan`, `get_record_builder` or `record` only for
a class it makes itself. So every class here is made by a `make_*` function the test calls.
"""

from __future__ import annotations

from typing import NamedTuple

import attrs
import pytest
from attrs import field, frozen

from model.values.records import (
    CopyPlan,
    bounded_repr,
    evolve,
    get_bounded_repr,
    get_copy_plan,
    get_record_builder,
    record,
)


def make_plain_record() -> type:
    @record
    class Plain:
        offset: int
        topic: str

    return Plain


def test_a_plain_record_is_copied_and_built_by_its_dict():
    """The module's first case: a `@record` of two fields without converters, validators or
    `__attrs_post_init__` is copied by copying its `__dict__`, and `get_record_builder` builds one from the dict
    of its fields."""
    plain = make_plain_record()
    assert "__slots__" not in vars(plain) and not attrs.fields(plain).offset.kw_only
    plan = get_copy_plan(plain)
    assert plan.positions == {"offset": 0, "topic": 1}
    assert plan.get_all is None and plan.set_dict is not None and not plan.is_named_tuple
    original = plain(3, "T")
    assert evolve(original, offset=4) == plain(4, "T") and type(evolve(original, offset=4)) is plain
    assert evolve(original, topic="U", offset=5).__dict__ == {"offset": 5, "topic": "U"}
    built = get_record_builder(plain)({"offset": 7, "topic": "V"})
    assert built == plain(7, "V") and type(built) is plain
    with pytest.raises(attrs.exceptions.FrozenInstanceError):
        built.offset = 8


def test_a_subclass_record_is_copied_by_the_dict_its_base_declares():
    """A record subclassing a record has no `__dict__` slot of its own: its plan takes its base's."""
    base = make_plain_record()

    @record
    class Child(base):
        queue_id: int = 0

    assert "__dict__" not in vars(Child)
    plan = get_copy_plan(Child)
    assert plan.positions == {"offset": 0, "topic": 1, "queue_id": 2} and plan.set_dict is not None
    assert evolve(Child(1, "T", 2), queue_id=3) == Child(1, "T", 3)
    assert get_record_builder(Child)({"offset": 1, "topic": "T", "queue_id": 4}) == Child(1, "T", 4)


def make_checked_records() -> tuple[type, type, type]:
    @record
    class Validated:
        offset: int
        topic: str = field(validator=attrs.validators.instance_of(str))

    @record
    class Converted:
        offset: int = field(converter=int)
        topic: str = "T"

    @record
    class PostChecked:
        low: int
        high: int

        def __attrs_post_init__(self):
            if self.low > self.high:
                raise ValueError(f"low={self.low} above high={self.high}")

    return Validated, Converted, PostChecked


def test_a_record_with_a_validator_converter_or_post_init_is_rebuilt_through_its_init():
    """The module's second case: such a record is rebuilt positionally, so its checks run on the copy; it is not
    one `get_record_builder` builds."""
    validated, converted, post_checked = make_checked_records()
    for cls, positions in ((validated, {"offset": 0, "topic": 1}), (converted, {"offset": 0, "topic": 1}),
                           (post_checked, {"low": 0, "high": 1})):
        plan = get_copy_plan(cls)
        assert plan.positions == positions and plan.set_dict is None and plan.get_all is not None
        with pytest.raises(TypeError, match=f"^{cls.__name__} is not a record evolve copies by its __dict__$"):
            get_record_builder(cls)
    with pytest.raises(TypeError):
        evolve(validated(1, "T"), topic=7)
    assert evolve(validated(1, "T"), offset=2) == validated(2, "T")
    assert evolve(converted(1), offset="12").offset == 12
    with pytest.raises(ValueError, match="low=5 above high=4"):
        evolve(post_checked(1, 4), low=5)
    assert evolve(post_checked(1, 4), high=9) == post_checked(1, 9)


def test_a_slotted_record_is_rebuilt_positionally():
    """`@frozen` (slots) without checks: no instance dict to copy, so positional, from an attribute getter."""

    @frozen
    class Slotted:
        offset: int
        topic: str

    plan = get_copy_plan(Slotted)
    assert plan.positions == {"offset": 0, "topic": 1} and plan.set_dict is None
    assert plan.get_all(Slotted(1, "T")) == (1, "T")
    assert evolve(Slotted(1, "T"), topic="U") == Slotted(1, "U")
    with pytest.raises(TypeError, match="^Slotted is not a record"):
        get_record_builder(Slotted)


def test_a_record_with_a_keyword_only_or_private_field_falls_back_to_attrs_evolve():
    """The module's last case: an `__init__` that does not take every field positionally under its own name (a
    keyword-only field; a private field, whose argument drops the underscore) gets no plan, and is copied by
    attrs.evolve. The private field is named `_fields`, the attribute a named tuple is recognised by."""

    @frozen
    class KeywordOnly:
        offset: int
        topic: str = field(kw_only=True)

    @frozen
    class Private:
        offset: int
        _fields: tuple = ()

    @frozen
    class Single:
        offset: int

    for cls in (KeywordOnly, Private, Single):
        assert get_copy_plan(cls) is None
        with pytest.raises(TypeError, match=f"^{cls.__name__} is not a record"):
            get_record_builder(cls)
    assert evolve(KeywordOnly(1, topic="T"), offset=2) == KeywordOnly(2, topic="T")
    assert evolve(Private(1, ("a",)), offset=2) == Private(2, ("a",))


def test_a_named_tuple_is_rebuilt_from_its_values():
    """The module's third case: a named tuple's plan is its `_fields`, and evolve gives what `_replace` gives."""

    class Entry(NamedTuple):
        offset: int
        topic: str = "T"

    assert get_copy_plan(Entry) == CopyPlan({"offset": 0, "topic": 1}, None, None, True)
    copy = evolve(Entry(1, "T"), topic="U")
    assert copy == Entry(1, "U") and type(copy) is Entry


def test_a_record_is_a_frozen_record_with_an_instance_dict():
    """`record`: `attrs.frozen(slots=False)` — frozen, with an instance dict (what `evolve` copies)."""
    plain = make_plain_record()
    assert attrs.has(plain) and plain(1, "T").__dict__ == {"offset": 1, "topic": "T"}
    assert get_copy_plan(plain).set_dict is not None


def test_a_text_is_shown_whole_up_to_120_characters_of_repr_and_cut_beyond():
    """SY-12: a text whose repr has 120 characters is shown whole; one more, and the repr is cut at 120 and says
    how long the text is."""
    assert get_bounded_repr("x" * 118) == "'" + "x" * 118 + "'"
    assert get_bounded_repr("x" * 119) == "'" + "x" * 119 + "… (119 long)"
    assert get_bounded_repr(b"ab") == "b'ab'"


def make_big_record() -> type:
    @frozen(repr=False)
    class Big:
        name: str
        items: list
        offset: int

        __repr__ = bounded_repr

    return Big


def test_a_big_record_shows_each_field_bounded():
    """SY-12: a record whose repr is `bounded_repr` lists its fields, ", " apart, each through get_bounded_repr."""
    big = make_big_record()
    assert repr(big("n", [1, 2, 3], 5)) == "Big(name='n', items=<list of 3>, offset=5)"
    assert get_bounded_repr(big("n", [], 5)) == "Big(name='n', items=<list of 0>, offset=5)"


def test_a_record_up_to_12_fields_and_120_characters_is_shown_whole():
    """SY-12: a small record inside a big one keeps its repr while it has at most 12 fields and its repr at most
    120 characters; past either it is named by its type, as is any other object."""
    twelve = attrs.make_class("Twelve", [f"f{i}" for i in range(12)], frozen=True)
    thirteen = attrs.make_class("Thirteen", [f"f{i}" for i in range(13)], frozen=True)
    assert get_bounded_repr(twelve(*range(12))) == "Twelve(" + ", ".join(f"f{i}={i}" for i in range(12)) + ")"
    assert get_bounded_repr(thirteen(*range(13))) == "<Thirteen>"
    short = attrs.make_class("Short", ["a", "b"], frozen=True)
    # "Short(a=1, b='')" has 16 characters: 104 more make 120.
    assert get_bounded_repr(short(1, "x" * 104)) == f"Short(a=1, b='{'x' * 104}')"
    assert get_bounded_repr(short(1, "x" * 105)) == "<Short>"

    class Other:
        def __repr__(self):
            return "Other()"

    assert get_bounded_repr(Other()) == "<Other>"
