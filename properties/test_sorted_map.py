"""The persistent sorted map under ProcessQueue (spec/05-process-queue.md) against a dict oracle."""

from __future__ import annotations

import math

from hypothesis import given
from hypothesis import strategies as st

from model.values.sorted_map import HALF_WIDTH, MAX_WIDTH, SortedMap

KEYS = st.integers(-300, 300)
OPERATIONS = st.lists(
    st.one_of(
        st.tuples(st.just("set"), KEYS, st.integers()),
        st.tuples(st.just("discard"), KEYS, st.none()),
        st.tuples(st.just("pop_lowest"), st.integers(0, 6), st.none()),
        st.tuples(st.just("update"), st.lists(st.tuples(KEYS, st.integers()), max_size=150), st.none()),
    ),
    max_size=400,
)


def check_node(node, height: int) -> list[int]:
    """The keys under a node, asserting on the way the B+tree's shape: no node wider than MAX_WIDTH, none empty,
    keys ascending within a leaf, every leaf at depth `height`, and each inner low the smallest key below it."""
    first, second = node
    assert 0 < len(first) == len(second) <= MAX_WIDTH
    if height == 0:
        assert list(first) == sorted(set(first))
        return list(first)
    keys = []
    for low, child in zip(first, second, strict=True):
        below = check_node(child, height - 1)
        assert below[0] == low
        keys.extend(below)
    return keys


def check_shape(current: SortedMap, size: int) -> None:
    """The whole map's shape, its size, and a height no more than the B+tree bound for `size` (+ 1 for the
    half-empty nodes removal leaves, which never merge)."""
    if current._root is None:
        assert len(current) == 0
        return
    keys = check_node(current._root, current._height)
    assert keys == sorted(keys) and len(keys) == len(current)
    assert current._height <= 1 + math.log(max(size, 2), HALF_WIDTH)


@given(OPERATIONS)
def test_sorted_map_behaves_like_a_sorted_dict(operations):
    """Every operation agrees with a dict (`update` sets a run of items at once, a later value for a key
    winning); every earlier version is unchanged (persistence); the tree keeps its B+tree shape. Up to 601 keys:
    enough for leaves and inner nodes to split (MAX_WIDTH is 64)."""
    current, oracle, largest = SortedMap(), {}, 0
    history = [(current, dict(oracle))]
    for name, argument, value in operations:
        if name == "set":
            current = current.set(argument, value)
            oracle[argument] = value
        elif name == "discard":
            current = current.discard(argument)
            oracle.pop(argument, None)
        elif name == "update":
            current = current.update(argument)
            oracle.update(argument)
        else:
            taken, current = current.pop_lowest(argument)
            expected = sorted(oracle.items())[:argument]
            assert taken == tuple(expected)
            for key, _ in expected:
                del oracle[key]
        history.append((current, dict(oracle)))
        assert list(current.items()) == sorted(oracle.items())
        assert len(current) == len(oracle) and bool(current) == bool(oracle)
        if oracle:
            assert (current.first_key(), current.last_key()) == (min(oracle), max(oracle))
        largest = max(largest, len(oracle))
        check_shape(current, largest)
        for key in range(-3, 4):
            assert (key in current) == (key in oracle) and current.get(key) == oracle.get(key)
    for version, snapshot in history:
        assert dict(version.items()) == snapshot


@given(st.integers(MAX_WIDTH + 1, 5_000), st.randoms(use_true_random=False), st.floats(0, 1))
def test_sorted_map_splits_and_shrinks(size, random, kept):
    """Thousands of keys in any order: the tree grows inner levels, then removal of all but a `kept` fraction
    empties and drops nodes; contents, order, size and shape agree with a dict throughout."""
    keys = list(range(size))
    random.shuffle(keys)
    current = SortedMap()
    for key in keys:
        current = current.set(key, -key)
    assert current._height >= 1
    check_shape(current, size)
    in_runs = SortedMap()
    for start in range(0, size, 97):  # runs that land across many leaves of a tree that keeps growing
        in_runs = in_runs.update((key, -key) for key in keys[start:start + 97])
    assert list(in_runs.items()) == list(current.items())
    check_shape(in_runs, size)
    overwritten = in_runs.update((key, key) for key in keys[::3])  # existing keys, among them every inner low
    expected = {key: -key for key in keys} | {key: key for key in keys[::3]}
    assert list(overwritten.items()) == sorted(expected.items())
    check_shape(overwritten, size)
    removed = keys[: int(size * (1 - kept))]
    for key in removed:
        current = current.discard(key)
    survivors = sorted(set(keys) - set(removed))
    assert list(current.items()) == [(key, -key) for key in survivors]
    check_shape(current, size)
    if survivors:
        assert (current.first_key(), current.last_key()) == (survivors[0], survivors[-1])
