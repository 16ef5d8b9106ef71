"""Queue locks of orderly consumption (spec/12-orderly.md): the client's side of the broker's RebalanceLockManager
(model/broker/locks.py), which it asks by LOCK_BATCH_MQ.

The broker keeps one lease per (group, MessageQueue), held by a client id and renewed by every grant; a lease is
free again once it is older than 60 s. A client marks its ProcessQueue locked when the broker grants the lock and
considers its own mark stale after 30 s, so a client that stops renewing stops consuming half a lease before
another client can take the queue.
"""

from __future__ import annotations

from collections.abc import Mapping

from model.values.config import Config
from model.values.message import MessageQueue
from model.values.records import evolve
from model.values.wire import Context, LockBatchRequest, exchange

# PQ 4.9.8 L44-46: the client's view of its lock is stale after 30 s; lockAll renews it every 20 s.
REBALANCE_LOCK_MAX_LIVE_TIME = 30_000
REBALANCE_LOCK_INTERVAL = 20_000
# CMOS 4.9.8 L95-108: lockMQPeriodically starts 1 s after start().
LOCK_ALL_INITIAL_DELAY = 1_000
# RPI 4.9.8 L36: an orderly queue removed while it still caches messages is unlocked 20 s later.
UNLOCK_DELAY_TIME_MILLS = 20_000


def is_client_lock_expired(last_lock_timestamp: int, now: int) -> bool:
    """[LK-04] The client's lock mark is stale strictly more than 30 s after the last successful lock."""
    return now - last_lock_timestamp > REBALANCE_LOCK_MAX_LIVE_TIME


def is_lock_needed_to_consume(config: Config) -> bool:
    """[LK-05] Only a CLUSTERING orderly consumer needs the broker lock to consume; BROADCASTING never checks it."""
    return config.is_clustering


def is_lock_needed_to_add_queue(config: Config) -> bool:
    """[LK-05] A rebalance adds an orderly queue only after locking it: always in CLUSTERING, and in BROADCASTING
    while the profile still passes `isOrder` there (up to 5.3.1, #8772)."""
    return config.is_clustering or config.profile.broadcast_rebalance_locks_queues


def is_lock_all_scheduled(config: Config) -> bool:
    """[LK-03] lockMQPeriodically runs in CLUSTERING only (1 s after start, then every 20 s)."""
    return config.is_clustering


def request_lock_batch(peer, group: str, client_id: str, mqs, now: int) -> tuple[object, frozenset]:
    """LOCK_BATCH_MQ of `mqs` exchanged with `peer` at `now`: (the peer after it answered, the queues granted)."""
    peer, result = exchange(peer, LockBatchRequest(group, client_id, tuple(mqs)), Context(now=now))
    return peer, result.granted


def process_lock_all(peer, group: str, client_id: str, pqs: Mapping, now: int) -> tuple[object, Mapping]:
    """[LK-03] lockAll: one lockBatch for every queue in the ProcessQueue table; a granted queue's ProcessQueue is
    marked locked at `now`, a refused one is marked unlocked (its consumption stops at the next check)."""
    peer, granted = request_lock_batch(peer, group, client_id, pqs.keys(), now)
    updated = pqs
    for mq, pq in pqs.items():
        if mq in granted:
            updated = updated.set(mq, evolve(pq, locked=True, last_lock_timestamp=now))
        else:
            updated = updated.set(mq, evolve(pq, locked=False))
    return peer, updated


def process_lock_one(peer, group: str, client_id: str, pqs: Mapping, mq: MessageQueue, now: int):
    """[LK-01] RebalanceImpl.lock(mq): one-queue lockBatch; on success the ProcessQueue (if any) is marked locked.

    Returns (peer, pqs, granted)."""
    peer, granted_queues = request_lock_batch(peer, group, client_id, (mq,), now)
    granted = mq in granted_queues
    pq = pqs.get(mq)
    if granted and pq is not None:
        pqs = pqs.set(mq, evolve(pq, locked=True, last_lock_timestamp=now))
    return peer, pqs, granted


def compute_first_pull_offset(locked: bool, previously_locked: bool, next_offset: int, computed_offset: int):
    """[LK-06] An orderly pull waits while its queue is unlocked (None); the first pull after the lock replaces the
    request's offset by computePullFromWhere's, later pulls keep their own. Returns (offset | None, previously)."""
    if not locked:
        return None, previously_locked
    return (next_offset if previously_locked else computed_offset), True
