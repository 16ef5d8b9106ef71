"""A persistent FIFO sequence: append at the end, read by position, remove anywhere (cheapest at either end).

The system holds one-way offset commits in such a sequence (`System.oneway`): a long clock jump persists every 5 s
and can leave thousands in the network, and the driver delivers them from the front. The items sit in a HAMT keyed
by absolute position (benchmarks/NOTES.md: why not a vector).
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import immutables
from attrs import field, frozen


@frozen(eq=False)
class Fifo:
    """Items at absolute positions head .. tail - 1; equality is by content, as for a pvector."""

    items: immutables.Map = field(factory=immutables.Map)
    head: int = 0
    tail: int = 0

    def __len__(self) -> int:
        return self.tail - self.head

    def __getitem__(self, index: int) -> Any:
        if not 0 <= index < self.tail - self.head:
            raise IndexError(index)
        return self.items[self.head + index]

    def __iter__(self) -> Iterator:
        items = self.items
        return (items[position] for position in range(self.head, self.tail))

    def __eq__(self, other: object) -> bool:
        if not isinstance(other, Fifo):
            return NotImplemented
        return len(self) == len(other) and all(a == b for a, b in zip(self, other, strict=True))

    def __hash__(self) -> int:
        return hash(tuple(self))

    def append(self, item: Any) -> Fifo:
        return Fifo(self.items.set(self.tail, item), self.head, self.tail + 1)

    def delete(self, index: int) -> Fifo:
        """Without the item at `index`; the later items move down by one (cost proportional to their number)."""
        if not 0 <= index < self.tail - self.head:
            raise IndexError(index)
        if index == 0:
            return Fifo(self.items.delete(self.head), self.head + 1, self.tail)
        items = self.items
        for position in range(self.head + index, self.tail - 1):
            items = items.set(position, self.items[position + 1])
        return Fifo(items.delete(self.tail - 1), self.head, self.tail - 1)
