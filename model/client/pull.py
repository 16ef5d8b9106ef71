"""The pull loop of one queue: flow control, the broker's pull with tag filtering and long polling, and the
client's handling of FOUND / NO_NEW_MSG / NO_MATCHED_MSG / OFFSET_ILLEGAL (spec/07-pull.md)."""

from __future__ import annotations

from typing import TYPE_CHECKING

from model.broker.pull_handler import get_broker_pull
from model.client.consume_common import get_live_consumer, put_consumer, record_offset, schedule
from model.client.consume_mode import get_consume_service
from model.client.flow_control import CACHE_FLOW_CONTROL_MILLIS, compute_cache_flow_control
from model.client.observations import PullObserved
from model.client.offset_store import get_offset
from model.client.process_queue import put_message
from model.client.remote_offsets import commit_broker_offset
from model.client.timer_items import OffsetIllegalFix, PullDue
from model.values.message import MessageQueue, is_retry_topic
from model.values.records import discard, evolve

if TYPE_CHECKING:  # the cluster state these steps transform (built and stepped by model/system/)
    from model.system.state import System

BROKER_SUSPEND_MAX_TIME_MILLIS = 15_000
OFFSET_ILLEGAL_FIX_DELAY_MILLIS = 10_000


def schedule_pull(system: System, client_id: str, mq: MessageQueue, at: int, suspended: bool = False) -> System:
    """A new pull of the queue; any older pending pull of it becomes stale (its token no longer matches)."""
    consumer = system.consumers[client_id]
    token = consumer.pull_tokens.get(mq, 0) + 1
    consumer = evolve(consumer, pull_tokens=consumer.pull_tokens.set(mq, token))
    return schedule(system, at, PullDue(client_id, consumer.incarnation, mq, token, suspended),
                    consumers=system.consumers.set(client_id, consumer))


def compute_flow_control(system: System, client_id: str, mq: MessageQueue, pq) -> tuple[int | None, tuple]:
    """[PL-02] Before each pull: the cache's count and size thresholds, then the consume service's own check
    (span, lock) [PL-03]."""
    delay, rules = compute_cache_flow_control(system.config, pq)
    if delay is not None:
        return delay, rules
    return get_consume_service(system.config).allows_pull(system, client_id, mq, pq)


def get_subscribed_codes(system: System, mq: MessageQueue) -> frozenset | None:
    """The tags codes the broker lets through for the queue, None for all (a "*" subscription, a retry topic)."""
    if system.subscription is None or is_retry_topic(mq.topic):
        return None
    return system.subscription_codes


def request_pull(system: System, mq: MessageQueue, offset: int) -> tuple[str, list, int]:
    """The broker's answer to a pull of the queue from `offset` (PULL_MESSAGE with the group's subscription)."""
    return get_broker_pull(system.broker, mq, offset, system.min_offsets.get(mq, 0), get_subscribed_codes(system, mq),
                           system.config.pull_batch_size)


def get_subscribed_tags(system: System, mq: MessageQueue) -> frozenset | None:
    """[PL-05] PullAPIWrapper.processPullResult re-checks the tag string (collisions are dropped there): the tags
    it keeps, None for all."""
    return None if system.subscription is None or is_retry_topic(mq.topic) else system.subscription


def commit_piggyback(system: System, consumer, mq: MessageQueue) -> tuple[System, list]:
    """[PL-07] A CLUSTERING pull carries the in-memory offset (if > 0) and the broker commits it."""
    offset = get_offset(consumer.offset_store, mq)
    if not system.config.is_clustering or offset is None or offset <= 0:
        return system, []
    lifetime = (consumer.incarnation, consumer.generations.get(mq, 0))
    return commit_broker_offset(system, mq, offset, "pull", ("PL-07",), lifetime)


def process_pull(system: System, due: PullDue) -> tuple[System, list]:
    """[PL-01] One pull of a queue: flow control, the broker's answer, and the client's reaction."""
    consumer = get_live_consumer(system, due.client_id, due.incarnation)
    if consumer is None or consumer.pull_tokens.get(due.queue) != due.token:
        return system, []
    mq = due.queue
    pq = consumer.process_queues.get(mq)
    if pq is None or pq.dropped:
        return system, []
    # LK-08: every pull of a live ProcessQueue, even one held back below, stamps lastPullTimestamp.
    pq = evolve(pq, last_pull_timestamp=system.now)
    system = put_consumer(system, evolve(consumer, process_queues=consumer.process_queues.set(mq, pq)))
    delay, rules = compute_flow_control(system, due.client_id, mq, pq)
    if delay is not None:
        seen = [PullObserved(due.client_id, mq, "FLOW_CONTROL", -1, -1, 0, system.now, rules)]
        if rules in (("PL-02",), ("PL-03",)):
            parked = (system.now, consumer.incarnation, due.token)
            return evolve(system, flow_parked=system.flow_parked.set((due.client_id, mq), parked)), seen
        return schedule_pull(system, due.client_id, mq, system.now + delay), seen
    system, observations = get_consume_service(system.config).prepare_pull(system, due.client_id, mq)
    consumer = system.consumers[due.client_id]
    system, piggybacked = commit_piggyback(system, consumer, mq)
    observations += piggybacked
    offset = consumer.next_offsets[mq]
    status, found, next_offset = request_pull(system, mq, offset)
    if status == "NO_NEW_MSG" and not due.suspended:
        # Long polling: the broker holds the request until a message arrives or 15 s pass.
        system = evolve(system, parked=system.parked.set((due.client_id, mq), offset))
        return schedule_pull(system, due.client_id, mq, system.now + BROKER_SUSPEND_MAX_TIME_MILLIS, True), []
    system = set_next_offset(system, due.client_id, mq, next_offset)
    seen = PullObserved(due.client_id, mq, status, offset, next_offset, len(found), system.now, ("PL-04",))
    handler = {"FOUND": on_found, "OFFSET_ILLEGAL": on_offset_illegal}.get(status, on_no_message)
    system, more = handler(system, due.client_id, mq, found, next_offset)
    return system, observations + [seen] + more


def set_next_offset(system: System, client_id: str, mq: MessageQueue, next_offset: int) -> System:
    """The pull request's next offset, and the queue no longer held by the broker; one System copy at most (an
    idle queue's pull every 15 s changes neither)."""
    consumer, changes = system.consumers[client_id], {}
    if consumer.next_offsets.get(mq) != next_offset:
        consumer = evolve(consumer, next_offsets=consumer.next_offsets.set(mq, next_offset))
        changes["consumers"] = system.consumers.set(client_id, consumer)
    parked = discard(system.parked, (client_id, mq))
    if parked is not system.parked:
        changes["parked"] = parked
    return evolve(system, **changes) if changes else system


def on_found(system: System, client_id: str, mq: MessageQueue, found: list, next_offset: int):
    """[PL-05] FOUND: drop tag mismatches, cache the rest (putMessage), submit them, pull again."""
    tags = get_subscribed_tags(system, mq)
    msgs = tuple(found) if tags is None else tuple(m for m in found if m.tags in tags)
    observations = []
    if msgs:
        consumer = system.consumers[client_id]
        pq, dispatch = put_message(consumer.process_queues[mq], msgs)
        system = put_consumer(system, evolve(consumer, process_queues=consumer.process_queues.set(mq, pq)))
        system, observations = get_consume_service(system.config).submit(system, client_id, mq, msgs, dispatch)
    return schedule_pull(system, client_id, mq, system.now + system.config.pull_interval), observations


def on_no_message(system: System, client_id: str, mq: MessageQueue, _found, next_offset: int):
    """[PL-06] NO_NEW_MSG / NO_MATCHED_MSG: correctTagsOffset — with nothing cached, the offset store jumps to
    nextBeginOffset (increase-only) — then pull again at once."""
    consumer = system.consumers[client_id]
    observations = []
    if consumer.process_queues[mq].msg_count == 0:
        system, observations = record_offset(system, consumer, mq, next_offset, True, ("PL-06",))
    return schedule_pull(system, client_id, mq, system.now), observations


def on_offset_illegal(system: System, client_id: str, mq: MessageQueue, _found, next_offset: int):
    """[PL-08] OFFSET_ILLEGAL: the queue is dropped; 10 s later (4.9) or at once (5.2.0+) the offset is set to
    nextBeginOffset, persisted, and the queue removed, to be re-added by the next rebalance (5.2.0+: at once)."""
    consumer = system.consumers[client_id]
    pq = evolve(consumer.process_queues[mq], dropped=True)
    system = put_consumer(system, evolve(consumer, process_queues=consumer.process_queues.set(mq, pq)))
    fix = OffsetIllegalFix(client_id, consumer.incarnation, mq, consumer.generations[mq], next_offset)
    immediate = system.config.profile.offset_illegal_freezes_immediately
    return schedule(system, system.now + (0 if immediate else OFFSET_ILLEGAL_FIX_DELAY_MILLIS), fix), []


def wake_flow_controlled_pulls(system: System) -> System:
    """[PL-02] [PL-03] A pull held back by the cache checks again every 50 ms; only an event can shrink the cache,
    so instead of firing every 50 ms the retry is scheduled at the first 50 ms tick after the check would pass
    (the same pull at the same virtual time, without thousands of no-op timers during a long wait)."""
    for key, (since, incarnation, token) in sorted(system.flow_parked.items()):
        client_id, mq = key
        consumer = get_live_consumer(system, client_id, incarnation)
        pq = None if consumer is None else consumer.process_queues.get(mq)
        if pq is None or pq.dropped or consumer.pull_tokens.get(mq) != token:
            system = evolve(system, flow_parked=discard(system.flow_parked, key))
        elif compute_flow_control(system, client_id, mq, pq)[0] is None:
            at = since + CACHE_FLOW_CONTROL_MILLIS * ((system.now - since) // CACHE_FLOW_CONTROL_MILLIS + 1)
            system = schedule_pull(evolve(system, flow_parked=discard(system.flow_parked, key)), client_id, mq, at)
    return system


def wake_parked_pulls(system: System, woken_store=None) -> System:
    """[PL-04] A held pull answers as soon as its queue has a message at or past the requested offset.

    `woken_store` is the store of the last call's result, if the caller's loop made it: a pull is held only at
    the end of its queue, so while the store stays that very object no held pull can have a message to wake for.
    """
    if system.flow_parked:
        system = wake_flow_controlled_pulls(system)
    if system.broker.store is woken_store:
        return system
    # Sorted: a persistent map iterates in hash order, which differs between processes; timer ties must not.
    for (client_id, mq), offset in sorted(system.parked.items()):
        if system.broker.store.get_max_offset_in_queue(mq.topic, mq.queue_id) > offset:
            system = evolve(system, parked=discard(system.parked, (client_id, mq)))
            if client_id in system.consumers:
                system = schedule_pull(system, client_id, mq, system.now)
    return system
