"""The store's append-only log (model/values/append_log.py) against a plain list: indexing, slices, batches and the
binary search, across chunk boundaries (a chunk holds 32 entries), with the log shared by the states it came from."""

from __future__ import annotations

from bisect import bisect_left

from hypothesis import given
from hypothesis import strategies as st

from model.values.append_log import AppendLog

SIZES = st.integers(0, 200)


def build(size: int) -> tuple[AppendLog, list[int]]:
    log, entries = AppendLog(), []
    for value in range(0, 2 * size, 2):  # even numbers: sorted, with gaps for the search
        log, entries = log.append(value), entries + [value]
    return log, entries


@given(SIZES, st.integers(-5, 210), st.integers(-5, 210))
def test_a_slice_of_the_log_is_the_slice_of_its_entries(size, start, stop):
    log, entries = build(size)
    start = max(start, 0)
    assert list(log.iterate(start, stop)) == entries[start:max(stop, start)]
    assert list(log) == entries and len(log) == len(entries)


@given(SIZES, st.data())
def test_indexing_a_batch_and_the_search_agree_with_a_list(size, data):
    log, entries = build(size)
    if entries:
        indices = data.draw(st.lists(st.integers(0, size - 1), max_size=40))
        assert log.get_entries(indices) == [entries[i] for i in indices]
        assert [log[i] for i in indices] == [entries[i] for i in indices]
        assert log[-1] == entries[-1]
    value = data.draw(st.integers(-1, 2 * size + 1))
    assert log.bisect_left(value, lambda entry: entry) == bisect_left(entries, value)


@given(SIZES, SIZES)
def test_an_append_leaves_the_log_it_came_from_unchanged(first, more):
    log, entries = build(first)
    longer = log
    for value in range(more):
        longer = longer.append(-value)
    assert list(log) == entries and len(longer) == first + more
    assert (log == build(first)[0]) and (longer != log or more == 0)
