"""A persistent sorted map keyed by int: the immutable counterpart of Java's `TreeMap<Long, MessageExt>`.

An AVL tree with path copying: every update copies the O(log n) nodes on one root-to-leaf path and shares the
rest, so an old map stays valid and a new one costs O(log n) time and space. Deterministic (no random
priorities), so two maps built by the same operations have the same shape.

No PyPI package fits: pyrsistent has no sorted map, `sortedcontainers` is mutable, and the persistent tree
packages on the index are unmaintained alphas.
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator


class _Node:
    """One tree node; never mutated after construction (so nodes can be shared between maps)."""

    __slots__ = ("key", "value", "left", "right", "height", "size")

    def __init__(self, key: int, value: object, left: _Node | None, right: _Node | None) -> None:
        self.key = key
        self.value = value
        self.left = left
        self.right = right
        # Inlined _height/_size: node construction is the hot path of every update.
        left_height, left_size = (left.height, left.size) if left is not None else (0, 0)
        right_height, right_size = (right.height, right.size) if right is not None else (0, 0)
        self.height = 1 + (left_height if left_height > right_height else right_height)
        self.size = 1 + left_size + right_size


def _height(node: _Node | None) -> int:
    return node.height if node is not None else 0


def _size(node: _Node | None) -> int:
    return node.size if node is not None else 0


def _balance(key: int, value: object, left: _Node | None, right: _Node | None) -> _Node:
    """A node for (key, value) over subtrees whose heights differ by at most 2, rotated back into AVL shape."""
    left_height, right_height = _height(left), _height(right)
    if left_height > right_height + 1:
        assert left is not None
        if _height(left.left) < _height(left.right):
            pivot = left.right
            assert pivot is not None
            return _Node(pivot.key, pivot.value, _Node(left.key, left.value, left.left, pivot.left),
                         _Node(key, value, pivot.right, right))
        return _Node(left.key, left.value, left.left, _Node(key, value, left.right, right))
    if right_height > left_height + 1:
        assert right is not None
        if _height(right.right) < _height(right.left):
            pivot = right.left
            assert pivot is not None
            return _Node(pivot.key, pivot.value, _Node(key, value, left, pivot.left),
                         _Node(right.key, right.value, pivot.right, right.right))
        return _Node(right.key, right.value, _Node(key, value, left, right.left), right.right)
    return _Node(key, value, left, right)


def _insert(node: _Node | None, key: int, value: object) -> _Node:
    if node is None:
        return _Node(key, value, None, None)
    if key < node.key:
        return _balance(node.key, node.value, _insert(node.left, key, value), node.right)
    if key > node.key:
        return _balance(node.key, node.value, node.left, _insert(node.right, key, value))
    return _Node(key, value, node.left, node.right)


def _remove_min(node: _Node) -> tuple[_Node | None, _Node]:
    """The tree without its lowest node, and that node."""
    if node.left is None:
        return node.right, node
    rest, lowest = _remove_min(node.left)
    return _balance(node.key, node.value, rest, node.right), lowest


def _remove(node: _Node | None, key: int) -> _Node | None:
    if node is None:
        return None
    if key < node.key:
        left = _remove(node.left, key)
        return node if left is node.left else _balance(node.key, node.value, left, node.right)
    if key > node.key:
        right = _remove(node.right, key)
        return node if right is node.right else _balance(node.key, node.value, node.left, right)
    if node.right is None:
        return node.left
    rest, successor = _remove_min(node.right)
    return _balance(successor.key, successor.value, node.left, rest)


def _find(node: _Node | None, key: int) -> _Node | None:
    while node is not None and node.key != key:
        node = node.left if key < node.key else node.right
    return node



class SortedMap:
    """An immutable map from int keys to values, iterated in ascending key order.

    `set`, `discard` and `pop_lowest` return new maps; the receiver is unchanged. `first_key` and `last_key`
    raise KeyError on an empty map, as Java's TreeMap throws NoSuchElementException.
    """

    __slots__ = ("_root",)

    def __init__(self, items: Iterable[tuple[int, object]] = ()) -> None:
        root = None
        for key, value in items:
            root = _insert(root, key, value)
        self._root = root

    @classmethod
    def _of(cls, root: _Node | None) -> SortedMap:
        new = cls.__new__(cls)
        new._root = root
        return new

    def __len__(self) -> int:
        return _size(self._root)

    def __bool__(self) -> bool:
        return self._root is not None

    def __contains__(self, key: object) -> bool:
        return isinstance(key, int) and _find(self._root, key) is not None

    def get(self, key: int, default: object = None) -> object:
        node = _find(self._root, key)
        return default if node is None else node.value

    def __getitem__(self, key: int) -> object:
        node = _find(self._root, key)
        if node is None:
            raise KeyError(key)
        return node.value

    def set(self, key: int, value: object) -> SortedMap:
        return SortedMap._of(_insert(self._root, key, value))

    def discard(self, key: int) -> SortedMap:
        root = _remove(self._root, key)
        return self if root is self._root else SortedMap._of(root)

    def update(self, items: Iterable[tuple[int, object]]) -> SortedMap:
        root = self._root
        for key, value in items:
            root = _insert(root, key, value)
        return SortedMap._of(root)

    def first_key(self) -> int:
        return self._extreme_key("left")

    def last_key(self) -> int:
        return self._extreme_key("right")

    def _extreme_key(self, side: str) -> int:
        node = self._root
        if node is None:
            raise KeyError(f"no {side}most key in an empty map")
        while getattr(node, side) is not None:
            node = getattr(node, side)
        return node.key

    def first_item(self) -> tuple[int, object]:
        key = self.first_key()
        return key, self[key]

    def pop_lowest(self, n: int) -> tuple[tuple[tuple[int, object], ...], SortedMap]:
        """The up-to-n lowest items in ascending order, and the map without them (Java's n × pollFirstEntry)."""
        root, taken = self._root, []
        while root is not None and len(taken) < n:
            root, lowest = _remove_min(root)
            taken.append((lowest.key, lowest.value))
        return tuple(taken), SortedMap._of(root)

    def items(self) -> Iterator[tuple[int, object]]:
        stack, node = [], self._root
        while stack or node is not None:
            while node is not None:
                stack.append(node)
                node = node.left
            node = stack.pop()
            yield node.key, node.value
            node = node.right

    def __iter__(self) -> Iterator[int]:
        return (key for key, _ in self.items())

    def values(self) -> Iterator[object]:
        return (value for _, value in self.items())

    def __eq__(self, other: object) -> bool:
        if not isinstance(other, SortedMap):
            return NotImplemented
        return self._root is other._root or (len(self) == len(other) and list(self.items()) == list(other.items()))

    def __hash__(self) -> int:
        return hash(tuple(self.items()))

    def __repr__(self) -> str:
        return f"SortedMap({list(self.items())!r})"


EMPTY = SortedMap()
