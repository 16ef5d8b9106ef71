"""A persistent min-priority queue of timed events (a leftist heap) for the discrete-event simulation.

Every timed component of the system (pulls, 5 s resubmissions, offset persistence, cleanExpiredMsg, ...) puts its
next firing here; the system pops them in (time, sequence) order, so two events due at the same virtual
millisecond fire in the order they were scheduled. Insert and pop are O(log n) and share structure with the old
heap, so keeping old states around costs nothing.
"""

from __future__ import annotations

from typing import Any

# A node is (rank, key, item, left, right); the empty heap is None. Keys are (time, sequence) tuples.
Heap = tuple | None


def _rank(node: Heap) -> int:
    return node[0] if node is not None else 0


def _make(key: tuple, item: Any, a: Heap, b: Heap) -> tuple:
    if _rank(a) >= _rank(b):
        return (_rank(b) + 1, key, item, a, b)
    return (_rank(a) + 1, key, item, b, a)


def _merge(a: Heap, b: Heap) -> Heap:
    if a is None:
        return b
    if b is None:
        return a
    if b[1] < a[1]:
        a, b = b, a
    return _make(a[1], a[2], a[3], _merge(a[4], b))


def heap_push(heap: Heap, key: tuple, item: Any) -> Heap:
    return _merge(heap, (1, key, item, None, None))


def heap_peek(heap: Heap) -> tuple[tuple, Any] | None:
    return None if heap is None else (heap[1], heap[2])


def heap_pop(heap: Heap) -> tuple[tuple, Any, Heap]:
    """The smallest (key, item) and the heap without it; the heap must not be empty."""
    return heap[1], heap[2], _merge(heap[3], heap[4])


def get_heap_items(heap: Heap) -> list[tuple[tuple, Any]]:
    """Every (key, item) in the heap, in no particular order (for checks over pending timers)."""
    items, stack = [], [heap]
    while stack:
        node = stack.pop()
        if node is not None:
            items.append((node[1], node[2]))
            stack.extend((node[3], node[4]))
    return items


def get_sorted_heap_items(heap: Heap) -> list[tuple[tuple, Any]]:
    """Every (key, item) in firing order: two heaps of different shapes hold the same timers iff these are equal."""
    return sorted(get_heap_items(heap), key=lambda entry: entry[0])


def heap_from_sorted(entries: list[tuple[tuple, Any]]) -> Heap:
    """The heap of (key, item) entries given in ascending key order, built in O(n): each node's left child is the
    rest of the list (a valid leftist heap of rank 1, popped in O(1))."""
    heap = None
    for key, item in reversed(entries):
        heap = (1, key, item, heap, None)
    return heap
