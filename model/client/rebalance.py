"""Rebalance, persistence of offsets, crash and restart of consumer instances (spec/10-rebalance.md)."""

from __future__ import annotations

from attrs import frozen

from model.client.cluster import Cluster
from model.client.consume_common import GROUP_RETRY_TOPIC, get_live_consumer, put_consumer, schedule
from model.client.consume_mode import get_consume_service
from model.client.consumer import ConsumerInstance
from model.client.observations import Note
from model.client.offset_store import (
    create_offset_store,
    persist,
    persist_all,
    remove_offset,
    update_and_freeze_offset,
    update_offset,
)
from model.client.process_queue import create_process_queue, is_pull_expired
from model.client.pull import schedule_pull
from model.client.remote_offsets import compute_pull_from_where, send_oneway
from model.client.timer_items import OffsetIllegalFix, PersistDue, RebalanceDue
from model.values.allocation import compute_averagely
from model.values.message import MessageQueue
from model.values.names import GROUP, TOPIC
from model.values.records import discard, evolve
from model.values.wire import GetRoute, exchange

REBALANCE_INTERVAL_MILLIS = 20_000
PERSIST_INITIAL_DELAY_MILLIS = 10_000


def get_subscribed_queues(cluster: Cluster) -> list[MessageQueue]:
    """The group's queues: the topic's, and in CLUSTERING those of %RETRY%<group> [PL-09]."""
    queues = [MessageQueue(TOPIC, i) for i in range(cluster.topic_queue_nums)]
    if cluster.config.is_clustering:
        route = exchange(cluster, GetRoute(GROUP_RETRY_TOPIC))[1]
        queues += [MessageQueue(GROUP_RETRY_TOPIC, i) for i in range(route.read_queue_nums)]
    return sorted(queues)


def compute_allocation(cluster: Cluster, client_id: str) -> frozenset:
    """[RB-01] Each subscribed topic (%RETRY% included) is split on its own by AllocateMessageQueueAveragely over its
    sorted queues and the sorted live members (rebalanceByTopic); BROADCASTING: every queue."""
    queues = get_subscribed_queues(cluster)
    if not cluster.config.is_clustering:
        return frozenset(queues)
    members = sorted(cluster.members)
    if client_id not in members:
        return frozenset()
    by_topic: dict[str, list] = {}
    for mq in queues:
        by_topic.setdefault(mq.topic, []).append(mq)
    index = members.index(client_id)
    return frozenset(mq for topic in by_topic.values() for mq in compute_averagely(sorted(topic), len(members), index))


def start_consumer(cluster: Cluster, client_id: str) -> Cluster:
    """A new instance (a fresh incarnation: nothing of a crashed predecessor survives but the broker's state)."""
    incarnation = cluster.incarnations + 1
    consumer = ConsumerInstance(client_id, incarnation, create_offset_store(cluster.config))
    cluster = put_consumer(evolve(cluster, incarnations=incarnation), consumer)
    cluster = schedule(cluster, cluster.now + PERSIST_INITIAL_DELAY_MILLIS, PersistDue(client_id, incarnation))
    cluster = schedule(cluster, cluster.now + REBALANCE_INTERVAL_MILLIS, RebalanceDue(client_id, incarnation))
    return get_consume_service(cluster.config).start(cluster, client_id)


def process_persist(cluster: Cluster, due: PersistDue) -> tuple[Cluster, list]:
    """[RB-05] Every persistConsumerOffsetInterval: persistAll over the queues in the ProcessQueue table."""
    consumer = get_live_consumer(cluster, due.client_id, due.incarnation)
    if consumer is None:
        return cluster, []
    store, updates = persist_all(consumer.offset_store, frozenset(consumer.process_queues))
    if store is not consumer.offset_store:
        cluster = put_consumer(cluster, evolve(consumer, offset_store=store))
    cluster, observations = send_oneway(cluster, due.client_id, updates, ("RB-05",))
    at = cluster.now + cluster.config.persist_consumer_offset_interval
    return schedule(cluster, at, due), observations


def drop_queue(cluster: Cluster, client_id: str, mq: MessageQueue) -> tuple[Cluster, list]:
    """[RB-02] A queue leaves an instance: drop its ProcessQueue first, then persist(mq) and removeOffset(mq)."""
    consumer = cluster.consumers[client_id]
    store, updates = persist(consumer.offset_store, mq)
    consumer = evolve(consumer, offset_store=remove_offset(store, mq),
                      process_queues=discard(consumer.process_queues, mq),
                      next_offsets=discard(consumer.next_offsets, mq))
    cluster = evolve(put_consumer(cluster, consumer), parked=discard(cluster.parked, (client_id, mq)))
    cluster, observations = send_oneway(cluster, client_id, updates, ("RB-02",))
    return cluster, observations + [Note(f"{client_id} dropped {mq}", cluster.now, ("RB-02",))]


def add_queue(cluster: Cluster, client_id: str, mq: MessageQueue) -> tuple[Cluster, list]:
    """[RB-04] removeDirtyOffset, a new ProcessQueue (a new generation), next offset from computePullFromWhere."""
    consumer = cluster.consumers[client_id]
    store = remove_offset(consumer.offset_store, mq)
    consumer = evolve(consumer, offset_store=store)
    offset = compute_pull_from_where(cluster, consumer, mq)
    # A new ProcessQueue starts locked from 4.9.5 on (RI 4.9.8 L377, #2621); only the orderly path reads the mark.
    pq = evolve(create_process_queue(cluster.now), locked=cluster.config.profile.new_process_queue_locked)
    consumer = evolve(consumer, process_queues=consumer.process_queues.set(mq, pq),
                      generations=consumer.generations.set(mq, consumer.generations.get(mq, 0) + 1),
                      next_offsets=consumer.next_offsets.set(mq, offset))
    cluster = schedule_pull(put_consumer(cluster, consumer), client_id, mq, cluster.now)
    return cluster, [Note(f"{client_id} took {mq} at {offset}", cluster.now, ("RB-04",))]


def is_pull_stale(cluster: Cluster, client_id: str, mq: MessageQueue, pq) -> bool:
    """[LK-08] isPullExpired. A live queue's pull held back by flow control (parked, PL-02) would re-stamp
    lastPullTimestamp every 50 ms, so it is never stale."""
    if not pq.dropped and (client_id, mq) in cluster.flow_parked:
        return False
    return is_pull_expired(pq, cluster.now)


def rebalance_client(cluster: Cluster, client_id: str) -> tuple[Cluster, list]:
    """[RB-01] updateProcessQueueTableInRebalance: drop queues no longer assigned and [LK-08] assigned ones not
    pulled for 120 s (isPullExpired), then add the assigned queues missing from the table."""
    target = compute_allocation(cluster, client_id)
    table = cluster.consumers[client_id].process_queues
    stale = frozenset(mq for mq in target & frozenset(table) if is_pull_stale(cluster, client_id, mq, table[mq]))
    service = get_consume_service(cluster.config)
    observations = []
    for mq in sorted((frozenset(table) - target) | stale):
        if mq in stale:
            observations.append(Note(f"{client_id} {mq}: not pulled for 120 s", cluster.now, ("LK-08",)))
        cluster, seen = (service.remove_queue or drop_queue)(cluster, client_id, mq)
        observations.extend(seen)
    current = frozenset(cluster.consumers[client_id].process_queues)
    for mq in sorted(target - current):
        if service.lock_queue is not None:
            cluster, granted = service.lock_queue(cluster, client_id, mq)
            if not granted:
                continue
        cluster, seen = add_queue(cluster, client_id, mq)
        observations.extend(seen)
    return cluster, observations


def process_rebalance_due(cluster: Cluster, due: RebalanceDue) -> tuple[Cluster, list]:
    if get_live_consumer(cluster, due.client_id, due.incarnation) is None:
        return cluster, []
    cluster, observations = rebalance_client(cluster, due.client_id)
    return schedule(cluster, cluster.now + REBALANCE_INTERVAL_MILLIS, due), observations


def set_members(cluster: Cluster, client_ids: tuple[str, ...]) -> tuple[Cluster, list]:
    """[RB-01] Leavers shut down gracefully (persist), joiners start, then every member re-balances —
    leavers' drops first, so a queue's new owner reads the offset its old owner persisted (if delivered)."""
    observations = []
    for client_id in sorted(set(cluster.consumers) - set(client_ids)):
        cluster = evolve(cluster, members=tuple(m for m in cluster.members if m != client_id))
        cluster, seen = rebalance_client(cluster, client_id)
        cluster = evolve(cluster, consumers=discard(cluster.consumers, client_id))
        observations.extend(seen)
    cluster = evolve(cluster, members=tuple(sorted(client_ids)))
    for client_id in sorted(set(client_ids) - set(cluster.consumers)):
        cluster = start_consumer(cluster, client_id)
    for client_id in sorted(client_ids):
        cluster, seen = rebalance_client(cluster, client_id)
        observations.extend(seen)
    return cluster, observations


def crash(cluster: Cluster, client_id: str) -> tuple[Cluster, list]:
    """[RB-06] A hard crash: the instance vanishes with everything not yet persisted; in-flight results and
    timers of that incarnation are void. Survivors take its queues at their next rebalance (≤ 20 s)."""
    if client_id not in cluster.consumers:
        return cluster, []
    parked = cluster.parked
    for key in [k for k in parked if k[0] == client_id]:
        parked = discard(parked, key)
    cluster = evolve(cluster, consumers=discard(cluster.consumers, client_id), parked=parked,
                    members=tuple(m for m in cluster.members if m != client_id))
    return cluster, [Note(f"{client_id} crashed", cluster.now, ("RB-06",))]


@frozen
class ShutdownRequests:
    """What a cleanly stopping instance sends, in order: one one-way UPDATE_CONSUMER_OFFSET per queue (queue, offset;
    none in BROADCASTING, whose local file takes them), then UNREGISTER_CLIENT naming its group."""

    updates: tuple[tuple[MessageQueue, int], ...]
    unregister_group: str


def compute_shutdown_requests(consumer: ConsumerInstance) -> ShutdownRequests:
    """[RB-07] A clean shutdown persists the offset of every queue in the ProcessQueue table (persistConsumerOffset,
    persistAll), then unregisters the group from the broker (unregisterConsumer)."""
    _store, updates = persist_all(consumer.offset_store, frozenset(consumer.process_queues))
    return ShutdownRequests(tuple(updates), GROUP)


def process_offset_illegal_fix(cluster: Cluster, fix: OffsetIllegalFix) -> tuple[Cluster, list]:
    """[PL-08] The delayed (4.9) or immediate (5.2.0+) OFFSET_ILLEGAL repair, by queue, not by ProcessQueue.

    Any live instance runs it whether it still owns the queue or not: the stale offset is persisted, and the
    queue's current ProcessQueue (a new one if the queue came back; none if it went away) is removed. [PL-10] The
    immediate one cycles at one instant while the broker still holds a stale offset; the queue is re-added by
    the next rebalance (4.9, up to 20 s later) or at once (5.2.0+, rebalanceImmediately)."""
    consumer = get_live_consumer(cluster, fix.client_id, fix.incarnation)
    if consumer is None:
        return cluster, []
    if cluster.config.profile.offset_illegal_freezes_immediately:
        store = update_and_freeze_offset(consumer.offset_store, fix.queue, fix.offset)
    else:
        store = update_offset(consumer.offset_store, fix.queue, fix.offset, False)
    cluster = put_consumer(cluster, evolve(consumer, offset_store=store))
    store, updates = persist(store, fix.queue)
    cluster, observations = send_oneway(cluster, fix.client_id, updates, ("PL-08",))
    dropped = []
    if fix.queue in consumer.process_queues:  # removeProcessQueue: nothing without a ProcessQueue (RI L434-L442)
        cluster, dropped = drop_queue(cluster, fix.client_id, fix.queue)
    if not cluster.config.profile.offset_illegal_freezes_immediately:
        return cluster, observations + dropped
    # 5.2.0+ calls rebalanceImmediately(); 4.9 waits for the next 20 s rebalance to re-add the queue.
    cluster, added = rebalance_client(cluster, fix.client_id)
    return cluster, observations + dropped + added
