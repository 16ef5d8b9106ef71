"""The broker's queue locks (RebalanceLockManager, spec/12-orderly.md): one lease per (group, MessageQueue), held
by a client id and renewed by every grant; a lease is free again once it is older than 60 s."""

from __future__ import annotations

from attrs import frozen

from model.broker.state import Broker
from model.values.message import MessageQueue
from model.values.records import discard, evolve

BROKER_LOCK_MAX_LIVE_TIME = 60_000


@frozen
class QueueLock:
    """A broker-side queue lock held by one client, renewed at `last_update_timestamp` (lease 60 s)."""

    client_id: str
    last_update_timestamp: int


def is_lock_expired(lock: QueueLock, now: int) -> bool:
    """[LK-01] A broker lock lease lapses strictly more than 60 s after its last renewal."""
    return now - lock.last_update_timestamp > BROKER_LOCK_MAX_LIVE_TIME


def is_lock_all_expired(broker: Broker, group: str, now: int) -> bool:
    """RebalanceLockManager.isLockAllExpired: no queue lock of the group is still within its 60 s lease."""
    return all(is_lock_expired(lock, now) for (g, _mq), lock in broker.queue_locks.items() if g == group)


@frozen
class LockResult:
    """What a lock request returns: the new broker and the queues granted to the caller."""

    broker: Broker
    granted: frozenset
    rules: tuple[str, ...] = ("LK-01",)


def get_lock_owner(broker: Broker, group: str, mq: MessageQueue, now: int) -> str | None:
    """The client whose lease on `mq` is still valid at `now`, or None when the queue is free."""
    lock = broker.queue_locks.get((group, mq))
    if lock is None or is_lock_expired(lock, now):
        return None
    return lock.client_id


def is_grantable(lock: QueueLock | None, client_id: str, now: int) -> bool:
    """[LK-01] A lock is granted when the queue has no entry, the entry is the caller's, or its lease expired."""
    return lock is None or lock.client_id == client_id or is_lock_expired(lock, now)


def on_lock_batch(broker: Broker, group: str, mqs, client_id: str, now: int) -> LockResult:
    """[LK-01] tryLockBatch: every grantable queue is (re)leased to the caller at `now`; the rest stay untouched."""
    locks = broker.queue_locks
    granted = []
    for mq in sorted(mqs):
        key = (group, mq)
        if is_grantable(locks.get(key), client_id, now):
            locks = locks.set(key, QueueLock(client_id, now))
            granted.append(mq)
    return LockResult(evolve(broker, queue_locks=locks), frozenset(granted))


def on_unlock_batch(broker: Broker, group: str, mqs, client_id: str) -> Broker:
    """[LK-02] unlockBatch removes the caller's own entries, expired or not, and leaves other clients' entries."""
    locks = broker.queue_locks
    for mq in mqs:
        lock = locks.get((group, mq))
        if lock is not None and lock.client_id == client_id:
            locks = discard(locks, (group, mq))
    return evolve(broker, queue_locks=locks)
