"""The persistent sorted map under ProcessQueue (spec/05-process-queue.md) against a dict oracle."""

from __future__ import annotations

import math

from hypothesis import given
from hypothesis import strategies as st

from model.sorted_map import SortedMap

KEYS = st.integers(-50, 50)
OPERATIONS = st.lists(
    st.one_of(
        st.tuples(st.just("set"), KEYS, st.integers()),
        st.tuples(st.just("discard"), KEYS, st.none()),
        st.tuples(st.just("pop_lowest"), st.integers(0, 6), st.none()),
    ),
    max_size=80,
)


def height(node) -> int:
    """The height, asserting on the way that every node is AVL-balanced and caches its height and size."""
    if node is None:
        return 0
    left, right = height(node.left), height(node.right)
    assert abs(left - right) <= 1 and node.height == 1 + max(left, right)
    assert node.size == 1 + (node.left.size if node.left else 0) + (node.right.size if node.right else 0)
    return node.height


@given(OPERATIONS)
def test_sorted_map_behaves_like_a_sorted_dict(operations):
    """Every operation agrees with a dict; every earlier version is unchanged (persistence); the tree stays AVL."""
    current, oracle = SortedMap(), {}
    history = [(current, dict(oracle))]
    for name, argument, value in operations:
        if name == "set":
            current = current.set(argument, value)
            oracle[argument] = value
        elif name == "discard":
            current = current.discard(argument)
            oracle.pop(argument, None)
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
        assert height(current._root) <= 1.45 * math.log2(len(oracle) + 2)
        for key in range(-3, 4):
            assert (key in current) == (key in oracle) and current.get(key) == oracle.get(key)
    for version, snapshot in history:
        assert dict(version.items()) == snapshot
