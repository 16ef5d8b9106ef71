"""model.values.records.evolve against attrs.evolve, for each way it copies a record."""

from __future__ import annotations

from typing import NamedTuple

import attrs
import pytest
from attrs import field, frozen

from model.values.records import evolve, get_bounded_repr


@frozen(slots=False)
class ByDict:
    a: int
    b: str = "x"


@frozen
class Positional:
    a: int
    b: str = field(default="x", validator=attrs.validators.instance_of(str))


@frozen
class KeywordOnly:
    a: int
    b: str = field(default="x", kw_only=True)


@pytest.mark.parametrize("cls", [ByDict, Positional, KeywordOnly])
def test_evolve_copies_as_attrs_does(cls):
    original = cls(1, b="y")
    for changes in ({}, {"a": 2}, {"b": "z"}, {"a": 3, "b": "w"}):
        copy = evolve(original, **changes)
        assert copy == attrs.evolve(original, **changes) and type(copy) is cls
    assert original == cls(1, b="y")  # the original is untouched


class Named(NamedTuple):
    a: int
    b: str = "x"


def test_evolve_copies_a_named_tuple_as_replace_does():
    original = Named(1, b="y")
    for changes in ({}, {"a": 2}, {"b": "z"}, {"a": 3, "b": "w"}):
        copy = evolve(original, **changes)
        assert copy == original._replace(**changes) and type(copy) is Named
    assert original == Named(1, b="y")  # the original is untouched


@pytest.mark.parametrize("cls", [ByDict, Positional, KeywordOnly, Named])
def test_evolve_refuses_a_field_the_record_does_not_have(cls):
    with pytest.raises(TypeError, match="'c'"):
        evolve(cls(1), c=5)


def test_evolve_runs_the_validators_of_a_validated_record():
    with pytest.raises(TypeError):
        evolve(Positional(1), b=7)


@frozen
class Short:
    a: int
    b: str


def test_a_bounded_repr_shows_a_short_record_whole_and_a_long_one_by_its_type():
    """SY-12: a small record inside a big one keeps its repr; one past the limit is named by its type."""
    assert get_bounded_repr(Short(1, "x")) == "Short(a=1, b='x')"
    assert get_bounded_repr(Short(1, "x" * 200)) == "<Short>"
