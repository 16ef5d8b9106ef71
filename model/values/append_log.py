"""An append-only persistent sequence: the shape of the store's commit log and consume queues (spec/03-store.md).

Entries live in tuples of 32 (chunks) kept in an immutables.Map by chunk number, plus the last, partly filled
chunk as the tail. An append copies at most the 32 references of the tail, and every 32nd append sets one map entry;
an index is one map lookup and one tuple index.

A log of named tuples (its `kind`) keeps each entry as a plain tuple of the same values and gives it back as the
named tuple: CPython's cyclic collector stops tracking a plain tuple whose items are atoms (and then the chunk
that holds it), never a named tuple, and every full collection walks each tracked object the store holds.

Why not a vector or a map by index, and why a plain slotted class (as SortedMap) rather than an attrs record:
benchmarks/NOTES.md.
"""

from __future__ import annotations

from bisect import bisect_left
from collections.abc import Callable, Iterator
from functools import partial

import immutables

CHUNK_BITS = 5
CHUNK_SIZE = 1 << CHUNK_BITS
CHUNK_MASK = CHUNK_SIZE - 1


class AppendLog:
    """Entries 0 .. len - 1; full chunks by chunk number, then the tail. Immutable: `append` returns a new log."""

    __slots__ = ("chunks", "tail", "length", "kind")

    def __init__(self, chunks: immutables.Map | None = None, tail: tuple = (), length: int = 0,
                 kind: type | None = None) -> None:
        self.chunks = immutables.Map() if chunks is None else chunks
        self.tail, self.length = tail, length
        # The named tuple class of the entries (stored as plain tuples); None: entries are kept as given.
        self.kind = kind

    def __eq__(self, other: object) -> bool:
        if not isinstance(other, AppendLog):
            return NotImplemented
        return (self.length, self.tail, self.chunks) == (other.length, other.tail, other.chunks)

    def __hash__(self) -> int:
        return hash((self.length, self.tail, self.chunks))

    def __repr__(self) -> str:
        return f"AppendLog(<{self.length} entries>)"

    def __len__(self) -> int:
        return self.length

    def __getitem__(self, index: int):
        if index < 0:
            index += self.length
        if not 0 <= index < self.length:
            raise IndexError(f"AppendLog index {index} out of range for length {self.length}")
        tail_start = self.length - len(self.tail)
        if index >= tail_start:
            entry = self.tail[index - tail_start]
        else:
            entry = self.chunks[index >> CHUNK_BITS][index & CHUNK_MASK]
        return entry if self.kind is None else _new_tuple(self.kind, entry)

    def __iter__(self) -> Iterator:
        return self.iterate(0, self.length)

    def iterate(self, start: int, stop: int) -> Iterator:
        """The entries start .. stop - 1 (clipped to the log), a chunk at a time rather than an index each."""
        stored = self.iterate_stored(start, stop)
        return stored if self.kind is None else map(partial(_new_tuple, self.kind), stored)

    def iterate_stored(self, start: int, stop: int) -> Iterator:
        """`iterate`, each entry as stored (a plain tuple in a log of a `kind`)."""
        stop, tail_start = min(stop, self.length), self.length - len(self.tail)
        while start < min(stop, tail_start):
            chunk = self.chunks[start >> CHUNK_BITS]
            end = min(stop - (start & ~CHUNK_MASK), CHUNK_SIZE)
            yield from chunk[start & CHUNK_MASK:end]
            start += end - (start & CHUNK_MASK)
        if start < stop:
            yield from self.tail[start - tail_start:stop - tail_start]

    def get_entries(self, indices: list[int]) -> list:
        """The entries at `indices` (each within the log), in that order: one call for a pulled batch rather than an
        index each."""
        stored = self.get_stored(indices)
        return stored if self.kind is None else [_new_tuple(self.kind, entry) for entry in stored]

    def get_stored(self, indices: list[int]) -> list:
        """`get_entries`, each entry as stored (a plain tuple in a log of a `kind`)."""
        chunks, tail, tail_start = self.chunks, self.tail, self.length - len(self.tail)
        return [tail[index - tail_start] if index >= tail_start else chunks[index >> CHUNK_BITS][index & CHUNK_MASK]
                for index in indices]

    def bisect_left(self, value, key: Callable) -> int:
        """The first index whose entry's `key` is >= value, for entries sorted by that key (a binary search over the
        chunks' last entries, then one within the chunk found). `key` reads an entry as stored: by position, in a
        log of a `kind`."""
        low, high = 0, len(self.chunks)
        while low < high:
            middle = (low + high) // 2
            if key(self.chunks[middle][-1]) < value:
                low = middle + 1
            else:
                high = middle
        chunk = self.chunks[low] if low < len(self.chunks) else self.tail
        return low * CHUNK_SIZE + bisect_left(chunk, value, key=key)

    def append(self, entry) -> AppendLog:
        """The log with `entry` after the last; in a log of a `kind`, pass the plain tuple of its values (a named
        tuple is converted)."""
        if self.kind is not None and type(entry) is not tuple:
            entry = tuple(entry)
        # Built without __init__ (benchmarks/NOTES.md).
        log = _new(AppendLog)
        tail = self.tail + (entry,)
        log.kind = self.kind
        if len(tail) < CHUNK_SIZE:
            log.chunks, log.tail, log.length = self.chunks, tail, self.length + 1
        else:
            log.chunks, log.tail, log.length = self.chunks.set(self.length >> CHUNK_BITS, tail), (), self.length + 1
        return log


_new = object.__new__
_new_tuple = tuple.__new__


EMPTY_LOG = AppendLog()
