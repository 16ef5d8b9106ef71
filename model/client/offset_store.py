"""The client's consume-offset store as an immutable value (spec/06-offset-store.md).

CLUSTERING uses RemoteBrokerOffsetStore (persisting = one-way UPDATE_CONSUMER_OFFSET messages to the broker);
BROADCASTING uses LocalFileOffsetStore (persisting = writing offsets.json, here the `file` map of the value).
"""

from __future__ import annotations

import enum
from typing import NamedTuple

import immutables
from attrs import field

from model.values.config import Config
from model.values.errors import IllegalTransition
from model.values.message import MessageQueue
from model.values.outcome import Outcome
from model.values.profiles import BASELINE, Profile, get_profile
from model.values.records import discard, evolve, new_tuple, record


class OffsetStoreKind(enum.Enum):
    REMOTE_BROKER = "RemoteBrokerOffsetStore"
    LOCAL_FILE = "LocalFileOffsetStore"


class ReadOffsetType(enum.Enum):
    READ_FROM_MEMORY = "READ_FROM_MEMORY"
    READ_FROM_STORE = "READ_FROM_STORE"
    MEMORY_FIRST_THEN_STORE = "MEMORY_FIRST_THEN_STORE"


class FetchError(enum.Enum):
    """Why a broker offset query failed (what `fetchConsumeOffsetFromBroker` throws)."""

    OFFSET_NOT_FOUND = "QUERY_NOT_FOUND"  # 4.9: an MQBrokerException; 5.x: OffsetNotFoundException
    BROKER_ERROR = "MQBrokerException"  # any other error response code
    CLIENT_ERROR = "RemotingException"  # timeout, connection, unknown broker (MQClientException)


class ControllableOffset(NamedTuple):
    """[OS-03] One cached offset; `frozen` (5.2.0+) makes ordinary updates no-ops until the entry is removed.

    A named tuple: one is built per consumed message (benchmarks/NOTES.md)."""

    value: int
    frozen: bool = False


@record  # copied several times per event: model.values.records.evolve copies its __dict__
class OffsetStore:
    """[OS-01] The in-memory offset table (MessageQueue → ControllableOffset) of one consumer, and for the local
    file store the persisted content of offsets.json (MessageQueue → offset)."""

    kind: OffsetStoreKind
    profile: Profile = field(factory=lambda: get_profile(BASELINE))
    offsets: immutables.Map = field(factory=immutables.Map)
    file: immutables.Map = field(factory=immutables.Map)


def create_offset_store(config: Config) -> OffsetStore:
    """[OS-01] CLUSTERING → RemoteBrokerOffsetStore, BROADCASTING → LocalFileOffsetStore (DMPCI.start)."""
    kind = OffsetStoreKind.REMOTE_BROKER if config.is_clustering else OffsetStoreKind.LOCAL_FILE
    return OffsetStore(kind=kind, profile=config.profile)


def update_offset(store: OffsetStore, mq: MessageQueue, offset: int, increase_only: bool) -> OffsetStore:
    """[OS-01] A queue's first offset is stored whatever `increase_only` says; afterwards [OS-02] an increase-only
    update keeps the larger value (MixAll.compareAndIncreaseOnly) and a plain one may move it back. A frozen
    entry ignores both [OS-03]."""
    current = store.offsets.get(mq)
    if current is None:
        entry = new_tuple(ControllableOffset, (offset, False))
    elif current.frozen or (increase_only and offset <= current.value):
        return store
    else:
        entry = new_tuple(ControllableOffset, (offset, False))
    return evolve(store, offsets=store.offsets.set(mq, entry))


def compare_and_increase_only(current: int, target: int) -> tuple[int, bool]:
    """[OS-02] MixAll.compareAndIncreaseOnly: (new value, whether it changed); only a strictly larger target wins."""
    return (target, True) if target > current else (current, False)


def update_and_freeze_offset(store: OffsetStore, mq: MessageQueue, offset: int) -> OffsetStore:
    """[OS-03] 5.2.0+ (OFFSET_ILLEGAL): set the offset and freeze it until `remove_offset` drops the entry."""
    if not store.profile.offset_illegal_freezes_immediately:
        raise IllegalTransition(f"profile {store.profile.name}", "update_and_freeze_offset",
                                "ControllableOffset exists from 5.2.0 on")
    return evolve(store, offsets=store.offsets.set(mq, ControllableOffset(offset, frozen=True)))


def remove_offset(store: OffsetStore, mq: MessageQueue) -> OffsetStore:
    """[OS-07] Drop the queue's cached offset (and with it any freeze); the persisted value is untouched."""
    return evolve(store, offsets=discard(store.offsets, mq))


def get_offset(store: OffsetStore, mq: MessageQueue) -> int | None:
    """The cached offset of a queue, or None."""
    entry = store.offsets.get(mq)
    return None if entry is None else entry.value


def read_offset(store: OffsetStore, mq: MessageQueue, read_type: ReadOffsetType,
                stored_value_or_error: int | FetchError | None = None) -> Outcome:
    """[OS-04] readOffset; returns (store, offset).

    READ_FROM_MEMORY: the cached value or -1. MEMORY_FIRST_THEN_STORE: the cached value, else as
    READ_FROM_STORE: the stored value, which is then cached by a plain update (a no-op on a frozen entry).
    The remote store's stored value is the broker's answer, `stored_value_or_error`: an offset, or a FetchError
    mapped to -1 (not found) or -2; a broker error counts as "not found" (-1) while
    `read_offset_broker_exception_is_not_found` (4.9). The local store reads its `file` (-1 when absent [OS-08]).
    """
    cached = get_offset(store, mq)
    if read_type is not ReadOffsetType.READ_FROM_STORE and cached is not None:
        return Outcome(store, cached, ("OS-04",))
    if read_type is ReadOffsetType.READ_FROM_MEMORY:
        return Outcome(store, -1, ("OS-04",))
    if store.kind is OffsetStoreKind.LOCAL_FILE:
        stored_value_or_error = store.file.get(mq, FetchError.OFFSET_NOT_FOUND)
    if stored_value_or_error is None:
        raise IllegalTransition(store.kind.value, "read_offset", "reading from the broker needs its answer")
    if isinstance(stored_value_or_error, FetchError):
        return Outcome(store, compute_read_error_code(store.profile, stored_value_or_error), ("OS-04",))
    return Outcome(update_offset(store, mq, stored_value_or_error, False), stored_value_or_error, ("OS-04",))


def compute_read_error_code(profile: Profile, error: FetchError) -> int:
    """[OS-04] -1 means "the broker has no offset", -2 "could not ask"; 4.9 also maps any broker error to -1."""
    if error is FetchError.OFFSET_NOT_FOUND:
        return -1
    if error is FetchError.BROKER_ERROR and profile.read_offset_broker_exception_is_not_found:
        return -1
    return -2


def persist_all(store: OffsetStore, mqs: frozenset[MessageQueue] | set[MessageQueue]) -> Outcome:
    """[OS-06] persistAll(mqs); returns (store, the one-way (mq, offset) updates sent to the broker).

    An empty set does nothing. Remote store: one update per cached queue in `mqs`, and cached queues outside
    `mqs` are removed from the table. Local store [OS-08]: the cached offsets of queues in `mqs` are merged into
    the file, whose other entries stay; the table is not pruned and nothing is sent.
    """
    if not mqs:
        return Outcome(store, (), ("OS-06",))
    chosen = {mq: entry.value for mq, entry in store.offsets.items() if mq in mqs}
    if store.kind is OffsetStoreKind.LOCAL_FILE:
        return Outcome(evolve(store, file=store.file.update(chosen)), (), ("OS-06", "OS-08"))
    updates = tuple(sorted(chosen.items()))
    if len(chosen) == len(store.offsets):
        # Nothing to prune (the usual case, every 5 s): the same store, no copy of its table.
        return Outcome(store, updates, ("OS-06",))
    kept = immutables.Map({mq: entry for mq, entry in store.offsets.items() if mq in mqs})
    return Outcome(evolve(store, offsets=kept), updates, ("OS-06",))


def persist(store: OffsetStore, mq: MessageQueue) -> Outcome:
    """[OS-07] persist(mq): send (remote) or write (local) the one queue's cached offset, if it has one."""
    offset = get_offset(store, mq)
    if offset is None:
        return Outcome(store, (), ("OS-07",))
    if store.kind is OffsetStoreKind.LOCAL_FILE:
        return Outcome(evolve(store, file=store.file.set(mq, offset)), (), ("OS-07", "OS-08"))
    return Outcome(store, ((mq, offset),), ("OS-07",))
