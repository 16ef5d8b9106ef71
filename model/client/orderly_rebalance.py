"""Rebalance of orderly queues (spec/12-orderly.md): adding a queue needs its lock, removing one gives it back.

RebalancePushImpl.removeUnnecessaryMessageQueue decides whether a queue the consumer no longer owns leaves the
ProcessQueue table now. For an orderly CLUSTERING consumer it must first get the ProcessQueue's consume lock, which
the running listener holds; failing that the queue stays (dropped) in the table and the next rebalance tries again.
"""

from __future__ import annotations

from attrs import frozen

from model.client.offset_store import OffsetStore, persist, remove_offset
from model.client.queue_locks import UNLOCK_DELAY_TIME_MILLS
from model.values.config import Config
from model.values.message import MessageQueue
from model.values.records import evolve
from model.values.wire import UnlockBatchRequest, exchange


@frozen
class Removal:
    """The effect of removing one queue: the peer after the unlock, the new offset store and ProcessQueue; whether
    it left the table; the offsets persisted to the broker; when a delayed unlock is due (None: none scheduled)."""

    peer: object
    offset_store: OffsetStore
    pq: object
    removed: bool
    persisted: tuple
    unlock_at: int | None
    rules: tuple[str, ...]


def is_force_unlock(config: Config, pq, now: int) -> bool:
    """[OR-12] 5.x: a dropped queue whose lock was last renewed more than 20 s ago is unlocked even while the
    listener runs."""
    return config.profile.orderly_rebalance_force_unlock and pq.dropped and now > pq.last_lock_timestamp + 20_000


def request_unlock(peer, group: str, client_id: str, mq: MessageQueue):
    """UNLOCK_BATCH_MQ of one queue exchanged with `peer`: the peer after it answered."""
    return exchange(peer, UnlockBatchRequest(group, client_id, (mq,)))[0]


def process_remove_queue(peer, offset_store: OffsetStore, config: Config, group: str, client_id: str,
                         mq: MessageQueue, pq, now: int, listener_running: bool) -> Removal:
    """[OR-12] removeUnnecessaryMessageQueue: persist the queue's offset; an orderly CLUSTERING queue then needs the
    consume lock (not available while the listener runs, unless 5.x forces it) and is unlocked at the broker —
    in 4.9 20 s later if messages are still cached, in 5.x at once; any other queue just leaves."""
    pq = evolve(pq, dropped=True)
    store, persisted = persist(offset_store, mq)
    if not (config.is_orderly and config.is_clustering):
        return Removal(peer, remove_offset(store, mq), pq, True, persisted, None, ("OR-12",))
    if not config.profile.orderly_rebalance_force_unlock:
        # 4.9.8 removes the cached offset before it knows whether the queue can leave.
        store = remove_offset(store, mq)
        if listener_running:
            return Removal(peer, store, pq, False, persisted, None, ("OR-12",))
        if bool(pq.msg_tree_map):
            return Removal(peer, store, pq, True, persisted, now + UNLOCK_DELAY_TIME_MILLS, ("OR-12",))
        return Removal(request_unlock(peer, group, client_id, mq), store, pq, True, persisted, None, ("OR-12",))
    if listener_running and not is_force_unlock(config, pq, now):
        return Removal(peer, store, pq, False, persisted, None, ("OR-12",))
    store = remove_offset(store, mq)
    peer = request_unlock(peer, group, client_id, mq)
    return Removal(peer, store, evolve(pq, locked=False), True, persisted, None, ("OR-12",))
