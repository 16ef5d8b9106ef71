"""The timer heap (model/values/timer_heap.py) against a sorted list, and its leftist shape: the shape is what keeps
a push or a pop O(log n), so that the model's cost per event does not grow with the number of pending timers."""

from __future__ import annotations

import math

from hypothesis import given
from hypothesis import strategies as st

from model.values.timer_heap import get_sorted_heap_items, heap_from_sorted, heap_peek, heap_pop, heap_push

OPERATIONS = st.lists(st.one_of(st.integers(0, 50).map(lambda time: ("push", time)), st.just(("pop",))), max_size=80)


def get_null_path_length(node) -> int:
    """The distance from `node` to the nearest empty child, computed from the shape alone."""
    return 0 if node is None else 1 + min(get_null_path_length(node[3]), get_null_path_length(node[4]))


def check_leftist(node) -> int:
    """Asserts the leftist property at every node (its stored rank is 1 + its right child's null path length, which
    is at most its left child's) and returns the node count."""
    if node is None:
        return 0
    rank, _key, _item, left, right = node
    assert rank == 1 + get_null_path_length(right), node
    assert get_null_path_length(left) >= get_null_path_length(right), node
    return 1 + check_leftist(left) + check_leftist(right)


def get_right_spine(node) -> int:
    return 0 if node is None else 1 + get_right_spine(node[4])


@given(OPERATIONS)
def test_the_heap_pops_in_key_order_and_stays_leftist(operations):
    heap, expected, sequence = None, [], 0
    for operation in operations:
        if operation[0] == "push":
            sequence += 1
            heap = heap_push(heap, (operation[1], sequence), f"t{sequence}")
            expected.append(((operation[1], sequence), f"t{sequence}"))
        elif expected:
            expected.sort()
            key, item, heap = heap_pop(heap)
            assert (key, item) == expected.pop(0)
        size = check_leftist(heap)
        assert size == len(expected) and get_right_spine(heap) <= math.log2(size + 1)
        assert get_sorted_heap_items(heap) == sorted(expected)
        assert heap_peek(heap) == (min(expected) if expected else None)


@given(st.lists(st.integers(0, 50), max_size=40))
def test_a_heap_built_from_sorted_entries_pops_them_in_order(times):
    entries = [((time, n), n) for n, time in enumerate(sorted(times))]
    heap, popped = heap_from_sorted(entries), []
    check_leftist(heap)
    while heap is not None:
        key, item, heap = heap_pop(heap)
        popped.append((key, item))
    assert popped == entries
