"""A persistent sorted map keyed by int: the immutable counterpart of Java's `TreeMap<Long, MessageExt>`.

A B+tree of plain tuples with path copying. A leaf is `(keys, values)`, two sorted tuples of at most `MAX_WIDTH`
entries; an inner node is `(lows, children)`, where `lows[i]` is the smallest key under `children[i]`. An update
copies the one node per level on its path, each at most `MAX_WIDTH` references (a C-level tuple slice), so an old
map stays valid and a new one costs O(log n); a full node splits in two halves. Removal does not merge half-empty
nodes (the height is that of the largest size the map ever had), but an emptied node disappears and a root with one
child gives way to it.

No PyPI package fits (benchmarks/NOTES.md says why, and why tuples rather than node objects).
"""

from __future__ import annotations

from bisect import bisect_left, bisect_right
from collections.abc import Iterable, Iterator

MAX_WIDTH = 64
HALF_WIDTH = MAX_WIDTH // 2


def _split(first: tuple, second: tuple) -> tuple[tuple, ...]:
    """One node from two parallel tuples, or as few nodes of near-equal width (at least HALF_WIDTH) as keep every
    one within MAX_WIDTH."""
    count = len(first)
    if count <= MAX_WIDTH:
        return ((first, second),)
    pieces = -(-count // MAX_WIDTH)
    bounds = [count * piece // pieces for piece in range(pieces + 1)]
    return tuple((first[start:end], second[start:end]) for start, end in zip(bounds, bounds[1:], strict=False))


def _route(lows: tuple, key: int) -> int:
    """The child whose range holds `key` (the first child for a key below every low)."""
    index = bisect_right(lows, key) - 1
    return index if index > 0 else 0


def _insert(node: tuple, height: int, key: int, value: object) -> tuple[tuple[tuple, ...], bool]:
    """The node(s) replacing `node` after the insert, and whether the key is new."""
    if height == 0:
        keys, values = node
        index = bisect_left(keys, key)
        if index < len(keys) and keys[index] == key:
            return ((keys, values[:index] + (value,) + values[index + 1:]),), False
        return _split(keys[:index] + (key,) + keys[index:], values[:index] + (value,) + values[index:]), True
    lows, children = node
    index = _route(lows, key)
    parts, added = _insert(children[index], height - 1, key, value)
    new_lows = tuple(part[0][0] for part in parts)
    return _split(lows[:index] + new_lows + lows[index + 1:], children[:index] + parts + children[index + 1:]), added


def _remove(node: tuple, height: int, key: int) -> tuple[tuple | None, bool]:
    """The node replacing `node` after the removal (None when it emptied), and whether the key was there."""
    if height == 0:
        keys, values = node
        index = bisect_left(keys, key)
        if index == len(keys) or keys[index] != key:
            return node, False
        if len(keys) == 1:
            return None, True
        return (keys[:index] + keys[index + 1:], values[:index] + values[index + 1:]), True
    lows, children = node
    index = _route(lows, key)
    child, removed = _remove(children[index], height - 1, key)
    if not removed:
        return node, False
    if child is None:
        if len(children) == 1:
            return None, True
        return (lows[:index] + lows[index + 1:], children[:index] + children[index + 1:]), True
    return (lows[:index] + (child[0][0],) + lows[index + 1:], children[:index] + (child,) + children[index + 1:]), True


def _find_leaf(node: tuple, height: int, key: int) -> tuple:
    while height:
        lows, children = node
        node = children[_route(lows, key)]
        height -= 1
    return node


def _merge_leaf(leaf: tuple, keys: tuple, values: tuple) -> tuple[tuple, tuple, int]:
    """A leaf's keys and values with a sorted run merged in (the run's value wins), and how many keys are new."""
    old_keys, old_values = leaf
    if keys[0] > old_keys[-1]:  # a pulled batch lands past every cached offset
        return old_keys + keys, old_values + values, len(keys)
    merged = dict(zip(old_keys, old_values, strict=True))
    merged.update(zip(keys, values, strict=True))
    ordered = tuple(sorted(merged))
    return ordered, tuple(merged[key] for key in ordered), len(merged) - len(old_keys)


def _insert_run(node: tuple, height: int, keys: tuple, values: tuple) -> tuple[tuple[tuple, ...], int]:
    """The node(s) replacing `node` after inserting a sorted run of distinct keys, and how many keys are new. Each
    node on the run's paths is copied once, not once per key."""
    if height == 0:
        merged_keys, merged_values, added = _merge_leaf(node, keys, values)
        return _split(merged_keys, merged_values), added
    lows, children = node
    first, last = _route(lows, keys[0]), _route(lows, keys[-1])
    cuts = [0] + [bisect_left(keys, low) for low in lows[first + 1:last + 1]] + [len(keys)]
    parts, added = list(children[:first]), 0
    for index in range(first, last + 1):
        start, end = cuts[index - first], cuts[index - first + 1]
        if start == end:
            parts.append(children[index])
            continue
        replaced, child_added = _insert_run(children[index], height - 1, keys[start:end], values[start:end])
        parts.extend(replaced)
        added += child_added
    parts.extend(children[last + 1:])
    return _split(tuple(part[0][0] for part in parts), tuple(parts)), added


def _iterate(node: tuple, height: int) -> Iterator[tuple[int, object]]:
    if height == 0:
        yield from zip(*node, strict=True)
        return
    for child in node[1]:
        yield from _iterate(child, height - 1)


class SortedMap:
    """An immutable map from int keys to values, iterated in ascending key order.

    `set`, `discard` and `pop_lowest` return new maps; the receiver is unchanged. `first_key` and `last_key`
    raise KeyError on an empty map, as Java's TreeMap throws NoSuchElementException. `size` is the number of
    entries, as `len()` (benchmarks/NOTES.md says why both exist).
    """

    __slots__ = ("_root", "_height", "size")

    def __init__(self, items: Iterable[tuple[int, object]] = ()) -> None:
        self._root, self._height, self.size = None, 0, 0
        built = self.update(items)
        self._root, self._height, self.size = built._root, built._height, built.size

    @classmethod
    def _of(cls, root: tuple | None, height: int, size: int) -> SortedMap:
        while root is not None and height and len(root[1]) == 1:
            root, height = root[1][0], height - 1
        new = _new(cls)  # object.__new__, bound once: not looked up on the class at every update
        new._root, new._height, new.size = (root, height, size) if root is not None else (None, 0, 0)
        return new

    def __len__(self) -> int:
        return self.size

    def __bool__(self) -> bool:
        return self.size > 0

    def _find_value(self, key: int, missing: object) -> object:
        if self._root is None:
            return missing
        keys, values = _find_leaf(self._root, self._height, key)
        index = bisect_left(keys, key)
        return values[index] if index < len(keys) and keys[index] == key else missing

    def __contains__(self, key: object) -> bool:
        return isinstance(key, int) and self._find_value(key, _MISSING) is not _MISSING

    def get(self, key: int, default: object = None) -> object:
        value = self._find_value(key, _MISSING)
        return default if value is _MISSING else value

    def __getitem__(self, key: int) -> object:
        value = self._find_value(key, _MISSING)
        if value is _MISSING:
            raise KeyError(key)
        return value

    def set(self, key: int, value: object) -> SortedMap:
        if self._root is None:
            return SortedMap._of(((key,), (value,)), 0, 1)
        parts, added = _insert(self._root, self._height, key, value)
        if len(parts) == 1:
            return SortedMap._of(parts[0], self._height, self.size + added)
        root = (tuple(part[0][0] for part in parts), parts)
        return SortedMap._of(root, self._height + 1, self.size + added)

    def discard(self, key: int) -> SortedMap:
        if self._root is None:
            return self
        root, removed = _remove(self._root, self._height, key)
        return SortedMap._of(root, self._height, self.size - 1) if removed else self

    def update(self, items: Iterable[tuple[int, object]]) -> SortedMap:
        """The map with every item set (a later value for a key wins), as one run: each node is copied once."""
        run = sorted(dict(items).items())
        if not run:
            return self
        keys, values = tuple(key for key, _ in run), tuple(value for _, value in run)
        if self._root is None:
            parts, added, height = _split(keys, values), len(keys), 0
        else:
            (parts, added), height = _insert_run(self._root, self._height, keys, values), self._height
        while len(parts) > 1:
            parts, height = _split(tuple(part[0][0] for part in parts), parts), height + 1
        return SortedMap._of(parts[0], height, self.size + added)

    def first_key(self) -> int:
        if self._root is None:
            raise KeyError("no leftmost key in an empty map")
        return self._root[0][0]

    def last_key(self) -> int:
        node, height = self._root, self._height
        if node is None:
            raise KeyError("no rightmost key in an empty map")
        while height:
            node, height = node[1][-1], height - 1
        return node[0][-1]

    def first_item(self) -> tuple[int, object]:
        key = self.first_key()
        return key, self[key]

    def pop_lowest(self, n: int) -> tuple[tuple[tuple[int, object], ...], SortedMap]:
        """The up-to-n lowest items in ascending order, and the map without them (Java's n × pollFirstEntry)."""
        result, taken = self, []
        while result and len(taken) < n:
            item = result.first_item()
            taken.append(item)
            result = result.discard(item[0])
        return tuple(taken), result

    def items(self) -> Iterator[tuple[int, object]]:
        return iter(()) if self._root is None else _iterate(self._root, self._height)

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


_MISSING = object()
_new = object.__new__
EMPTY = SortedMap()
