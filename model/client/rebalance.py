"""Rebalance, persistence of offsets, crash and restart of consumer instances (spec/10-rebalance.md)."""

from __future__ import annotations

from typing import TYPE_CHECKING

from attrs import frozen

from model.client.consume_common import get_live_consumer, put_consumer, schedule
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
from model.values.message import MessageQueue, get_retry_topic
from model.values.names import GROUP, TOPIC
from model.values.records import discard, evolve

if TYPE_CHECKING:  # the cluster state these steps transform (built and stepped by model/system/)
    from model.system.state import System

REBALANCE_INTERVAL_MILLIS = 20_000
PERSIST_INITIAL_DELAY_MILLIS = 10_000


def get_subscribed_queues(system: System) -> list[MessageQueue]:
    """The group's queues: the topic's, and in CLUSTERING those of %RETRY%<group> [PL-09]."""
    queues = [MessageQueue(TOPIC, i) for i in range(system.topic_queue_nums)]
    if system.config.is_clustering:
        retry = system.broker.topics.get(get_retry_topic(GROUP))
        queues += [MessageQueue(get_retry_topic(GROUP), i) for i in range(retry.read_queue_nums if retry else 0)]
    return sorted(queues)


def compute_allocation(system: System, client_id: str) -> frozenset:
    """[RB-01] Each subscribed topic (%RETRY% included) is split on its own by AllocateMessageQueueAveragely over its
    sorted queues and the sorted live members (rebalanceByTopic); BROADCASTING: every queue."""
    queues = get_subscribed_queues(system)
    if not system.config.is_clustering:
        return frozenset(queues)
    members = sorted(system.members)
    if client_id not in members:
        return frozenset()
    by_topic: dict[str, list] = {}
    for mq in queues:
        by_topic.setdefault(mq.topic, []).append(mq)
    index = members.index(client_id)
    return frozenset(mq for topic in by_topic.values() for mq in compute_averagely(sorted(topic), len(members), index))


def compute_averagely(queues: list, n: int, index: int) -> list:
    """[RB-01] AllocateMessageQueueAveragely: member `index` of `n` gets a contiguous slice of the sorted queues."""
    total = len(queues)
    mod, average = total % n, (total // n + (1 if index < total % n else 0)) if total > n else 1
    start = index * average if mod == 0 or index < mod else index * average + mod
    return [queues[(start + i) % total] for i in range(min(average, total - start))]


def start_consumer(system: System, client_id: str) -> System:
    """A new instance (a fresh incarnation: nothing of a crashed predecessor survives but the broker's state)."""
    incarnation = system.incarnations + 1
    consumer = ConsumerInstance(client_id, incarnation, create_offset_store(system.config))
    system = put_consumer(evolve(system, incarnations=incarnation), consumer)
    system = schedule(system, system.now + PERSIST_INITIAL_DELAY_MILLIS, PersistDue(client_id, incarnation))
    system = schedule(system, system.now + REBALANCE_INTERVAL_MILLIS, RebalanceDue(client_id, incarnation))
    return get_consume_service(system.config).start(system, client_id)


def process_persist(system: System, due: PersistDue) -> tuple[System, list]:
    """[RB-05] Every persistConsumerOffsetInterval: persistAll over the queues in the ProcessQueue table."""
    consumer = get_live_consumer(system, due.client_id, due.incarnation)
    if consumer is None:
        return system, []
    store, updates = persist_all(consumer.offset_store, frozenset(consumer.process_queues))
    if store is not consumer.offset_store:
        system = put_consumer(system, evolve(consumer, offset_store=store))
    system, observations = send_oneway(system, due.client_id, updates, ("RB-05",))
    at = system.now + system.config.persist_consumer_offset_interval
    return schedule(system, at, due), observations


def drop_queue(system: System, client_id: str, mq: MessageQueue) -> tuple[System, list]:
    """[RB-02] A queue leaves an instance: drop its ProcessQueue first, then persist(mq) and removeOffset(mq)."""
    consumer = system.consumers[client_id]
    store, updates = persist(consumer.offset_store, mq)
    consumer = evolve(consumer, offset_store=remove_offset(store, mq),
                      process_queues=discard(consumer.process_queues, mq),
                      next_offsets=discard(consumer.next_offsets, mq))
    system = evolve(put_consumer(system, consumer), parked=discard(system.parked, (client_id, mq)))
    system, observations = send_oneway(system, client_id, updates, ("RB-02",))
    return system, observations + [Note(f"{client_id} dropped {mq}", system.now, ("RB-02",))]


def add_queue(system: System, client_id: str, mq: MessageQueue) -> tuple[System, list]:
    """[RB-04] removeDirtyOffset, a new ProcessQueue (a new generation), next offset from computePullFromWhere."""
    consumer = system.consumers[client_id]
    store = remove_offset(consumer.offset_store, mq)
    consumer = evolve(consumer, offset_store=store)
    offset = compute_pull_from_where(system, consumer, mq)
    # A new ProcessQueue starts locked from 4.9.5 on (RI 4.9.8 L377, #2621); only the orderly path reads the mark.
    pq = evolve(create_process_queue(system.now), locked=system.config.profile.new_process_queue_locked)
    consumer = evolve(consumer, process_queues=consumer.process_queues.set(mq, pq),
                      generations=consumer.generations.set(mq, consumer.generations.get(mq, 0) + 1),
                      next_offsets=consumer.next_offsets.set(mq, offset))
    system = schedule_pull(put_consumer(system, consumer), client_id, mq, system.now)
    return system, [Note(f"{client_id} took {mq} at {offset}", system.now, ("RB-04",))]


def is_pull_stale(system: System, client_id: str, mq: MessageQueue, pq) -> bool:
    """[LK-08] isPullExpired. A live queue's pull held back by flow control (parked, PL-02) would re-stamp
    lastPullTimestamp every 50 ms, so it is never stale."""
    if not pq.dropped and (client_id, mq) in system.flow_parked:
        return False
    return is_pull_expired(pq, system.now)


def rebalance_client(system: System, client_id: str) -> tuple[System, list]:
    """[RB-01] updateProcessQueueTableInRebalance: drop queues no longer assigned and [LK-08] assigned ones not
    pulled for 120 s (isPullExpired), then add the assigned queues missing from the table."""
    target = compute_allocation(system, client_id)
    table = system.consumers[client_id].process_queues
    stale = frozenset(mq for mq in target & frozenset(table) if is_pull_stale(system, client_id, mq, table[mq]))
    service = get_consume_service(system.config)
    observations = []
    for mq in sorted((frozenset(table) - target) | stale):
        if mq in stale:
            observations.append(Note(f"{client_id} {mq}: not pulled for 120 s", system.now, ("LK-08",)))
        system, seen = (service.remove_queue or drop_queue)(system, client_id, mq)
        observations.extend(seen)
    current = frozenset(system.consumers[client_id].process_queues)
    for mq in sorted(target - current):
        if service.lock_queue is not None:
            system, granted = service.lock_queue(system, client_id, mq)
            if not granted:
                continue
        system, seen = add_queue(system, client_id, mq)
        observations.extend(seen)
    return system, observations


def process_rebalance_due(system: System, due: RebalanceDue) -> tuple[System, list]:
    if get_live_consumer(system, due.client_id, due.incarnation) is None:
        return system, []
    system, observations = rebalance_client(system, due.client_id)
    return schedule(system, system.now + REBALANCE_INTERVAL_MILLIS, due), observations


def set_members(system: System, client_ids: tuple[str, ...]) -> tuple[System, list]:
    """[RB-01] Leavers shut down gracefully (persist), joiners start, then every member re-balances —
    leavers' drops first, so a queue's new owner reads the offset its old owner persisted (if delivered)."""
    observations = []
    for client_id in sorted(set(system.consumers) - set(client_ids)):
        system = evolve(system, members=tuple(m for m in system.members if m != client_id))
        system, seen = rebalance_client(system, client_id)
        system = evolve(system, consumers=discard(system.consumers, client_id))
        observations.extend(seen)
    system = evolve(system, members=tuple(sorted(client_ids)))
    for client_id in sorted(set(client_ids) - set(system.consumers)):
        system = start_consumer(system, client_id)
    for client_id in sorted(client_ids):
        system, seen = rebalance_client(system, client_id)
        observations.extend(seen)
    return system, observations


def crash(system: System, client_id: str) -> tuple[System, list]:
    """[RB-06] A hard crash: the instance vanishes with everything not yet persisted; in-flight results and
    timers of that incarnation are void. Survivors take its queues at their next rebalance (≤ 20 s)."""
    if client_id not in system.consumers:
        return system, []
    parked = system.parked
    for key in [k for k in parked if k[0] == client_id]:
        parked = discard(parked, key)
    system = evolve(system, consumers=discard(system.consumers, client_id), parked=parked,
                    members=tuple(m for m in system.members if m != client_id))
    return system, [Note(f"{client_id} crashed", system.now, ("RB-06",))]


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


def process_offset_illegal_fix(system: System, fix: OffsetIllegalFix) -> tuple[System, list]:
    """[PL-08] The delayed (4.9) or immediate (5.2.0+) OFFSET_ILLEGAL repair — [PL-10] the immediate one cycles
    at one instant while the broker still holds a stale offset; the queue is re-added by the next
    rebalance (4.9, up to 20 s later) or at once (5.2.0+, rebalanceImmediately)."""
    consumer = get_live_consumer(system, fix.client_id, fix.incarnation)
    if consumer is None or consumer.generations.get(fix.queue) != fix.generation:
        return system, []
    if fix.queue not in consumer.process_queues:
        return system, []
    if system.config.profile.offset_illegal_freezes_immediately:
        store = update_and_freeze_offset(consumer.offset_store, fix.queue, fix.offset)
    else:
        store = update_offset(consumer.offset_store, fix.queue, fix.offset, False)
    system = put_consumer(system, evolve(consumer, offset_store=store))
    store, updates = persist(store, fix.queue)
    system, observations = send_oneway(system, fix.client_id, updates, ("PL-08",))
    system, dropped = drop_queue(system, fix.client_id, fix.queue)
    if not system.config.profile.offset_illegal_freezes_immediately:
        return system, observations + dropped
    # 5.2.0+ calls rebalanceImmediately(); 4.9 waits for the next 20 s rebalance to re-add the queue.
    system, added = rebalance_client(system, fix.client_id)
    return system, observations + dropped + added
