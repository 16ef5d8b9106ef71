"""model.records.evolve against attrs.evolve, for each way it copies a record."""

from __future__ import annotations

import attrs
import pytest
from attrs import field, frozen

from model.records import evolve, record


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


@pytest.mark.parametrize("cls", [ByDict, Positional, KeywordOnly])
def test_evolve_refuses_a_field_the_record_does_not_have(cls):
    with pytest.raises(TypeError, match="'c'"):
        evolve(cls(1), c=5)


def test_evolve_runs_the_validators_of_a_validated_record():
    with pytest.raises(TypeError):
        evolve(Positional(1), b=7)


@record
class Recorded:
    a: int
    b: str = "x"
    c: tuple = field(factory=tuple)


@frozen(slots=False)
class AttrsBuilt:
    a: int
    b: str = "x"
    c: tuple = field(factory=tuple)


@pytest.mark.parametrize("args, kwargs", [((1,), {}), ((1, "y"), {}), ((1,), {"c": (2,)}), ((), {"a": 1, "b": "z"})])
def test_record_init_builds_what_attrs_init_builds(args, kwargs):
    made, expected = Recorded(*args, **kwargs), AttrsBuilt(*args, **kwargs)
    assert attrs.asdict(made) == attrs.asdict(expected)
    assert repr(made).replace("Recorded", "AttrsBuilt") == repr(expected)
    assert made == Recorded(*args, **kwargs) and hash(made) == hash(Recorded(*args, **kwargs))


def test_record_init_refuses_what_attrs_init_refuses():
    with pytest.raises(TypeError, match="'a'"):
        Recorded()
    with pytest.raises(TypeError):
        Recorded(1, "y", (), 4)
    with pytest.raises(attrs.exceptions.FrozenInstanceError):
        Recorded(1).a = 2  # type: ignore[misc]
