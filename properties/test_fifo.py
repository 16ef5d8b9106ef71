"""model.values.fifo.Fifo behaves as a list under append, delete-at-index, indexing, iteration and equality."""

from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st

from model.values.fifo import Fifo

OPERATIONS = st.lists(st.one_of(st.tuples(st.just("append"), st.integers(0, 9)),
                                st.tuples(st.just("delete"), st.integers(0, 40))), max_size=40)


@given(OPERATIONS)
def test_fifo_matches_a_list(operations):
    fifo, oracle = Fifo(), []
    for name, argument in operations:
        if name == "append":
            fifo, oracle = fifo.append(argument), oracle + [argument]
        elif argument < len(oracle):
            fifo = fifo.delete(argument)
            del oracle[argument]
        assert len(fifo) == len(oracle) and list(fifo) == oracle
        assert [fifo[i] for i in range(len(oracle))] == oracle
    rebuilt = Fifo()
    for item in oracle:
        rebuilt = rebuilt.append(item)
    assert fifo == rebuilt and hash(fifo) == hash(rebuilt)


def test_fifo_index_out_of_range_raises():
    fifo = Fifo().append("a")
    for bad in (-1, 1):
        try:
            fifo[bad]
        except IndexError:
            continue
        raise AssertionError(f"index {bad} did not raise")


@given(st.integers(0, 5), st.integers(0, 10))
def test_an_index_out_of_range_is_named(length, index):
    """An IndexError names the index it refused, as a list's does (the failure report shows it)."""
    fifo = Fifo()
    for item in range(length):
        fifo = fifo.append(item)
    if index < length:
        assert fifo[index] == index
    else:
        with pytest.raises(IndexError) as refused:
            fifo[index]
        assert refused.value.args == (index,)
