"""The pull loop of one queue: flow control, the broker's pull with tag filtering and long polling, and the
client's handling of FOUND / NO_NEW_MSG / NO_MATCHED_MSG / OFFSET_ILLEGAL (spec/07-pull.md)."""

from __future__ import annotations

from model.client.cluster import Cluster
from model.client.consume_common import get_live_consumer, put_consumer, record_offset, schedule
from model.client.consume_mode import get_consume_service
from model.client.flow_control import CACHE_FLOW_CONTROL_MILLIS, compute_cache_flow_control
from model.client.observations import Note, PullObserved
from model.client.offset_store import get_offset
from model.client.process_queue import put_message
from model.client.remote_offsets import commit_broker_offset
from model.client.timer_items import OffsetIllegalFix, PullDue
from model.values.message import MessageQueue, is_retry_topic
from model.values.names import GROUP
from model.values.records import discard, evolve
from model.values.wire import PullMessage, PullResult, exchange

BROKER_SUSPEND_MAX_TIME_MILLIS = 15_000
OFFSET_ILLEGAL_FIX_DELAY_MILLIS = 10_000


def schedule_pull(cluster: Cluster, client_id: str, mq: MessageQueue, at: int, suspended: bool = False) -> Cluster:
    """A new pull of the queue; any older pending pull of it becomes stale (its token no longer matches)."""
    consumer = cluster.consumers[client_id]
    token = consumer.pull_tokens.get(mq, 0) + 1
    consumer = evolve(consumer, pull_tokens=consumer.pull_tokens.set(mq, token))
    return schedule(cluster, at, PullDue(client_id, consumer.incarnation, mq, token, suspended),
                    consumers=cluster.consumers.set(client_id, consumer))


def compute_flow_control(cluster: Cluster, client_id: str, mq: MessageQueue, pq) -> tuple[int | None, tuple]:
    """[PL-02] Before each pull: the cache's count and size thresholds, then the consume service's own check
    (span, lock) [PL-03]."""
    delay, rules = compute_cache_flow_control(cluster.config, pq)
    if delay is not None:
        return delay, rules
    return get_consume_service(cluster.config).allows_pull(cluster, client_id, mq, pq)


def get_subscribed_codes(cluster: Cluster, mq: MessageQueue) -> frozenset | None:
    """The tags codes the broker lets through for the queue, None for all (a "*" subscription, a retry topic)."""
    if cluster.subscription is None or is_retry_topic(mq.topic):
        return None
    return cluster.subscription_codes


def request_pull(cluster: Cluster, mq: MessageQueue, offset: int) -> tuple[Cluster, PullResult]:
    """The broker's answer to a pull of the queue from `offset` (PULL_MESSAGE with the group's subscription)."""
    request = PullMessage(GROUP, mq, offset, get_subscribed_codes(cluster, mq), cluster.config.pull_batch_size)
    return exchange(cluster, request)


def get_subscribed_tags(cluster: Cluster, mq: MessageQueue) -> frozenset | None:
    """[PL-05] PullAPIWrapper.processPullResult re-checks the tag string (collisions are dropped there): the tags
    it keeps, None for all."""
    return None if cluster.subscription is None or is_retry_topic(mq.topic) else cluster.subscription


def commit_piggyback(cluster: Cluster, consumer, mq: MessageQueue) -> tuple[Cluster, list]:
    """[PL-07] A CLUSTERING pull carries the in-memory offset (if > 0) and the broker commits it."""
    offset = get_offset(consumer.offset_store, mq)
    if not cluster.config.is_clustering or offset is None or offset <= 0:
        return cluster, []
    lifetime = (consumer.incarnation, consumer.generations.get(mq, 0))
    return commit_broker_offset(cluster, mq, offset, "pull", ("PL-07",), lifetime)


def process_pull(cluster: Cluster, due: PullDue) -> tuple[Cluster, list]:
    """[PL-01] One pull of a queue: flow control, the broker's answer, and the client's reaction."""
    consumer = get_live_consumer(cluster, due.client_id, due.incarnation)
    if consumer is None or consumer.pull_tokens.get(due.queue) != due.token:
        return cluster, []
    mq = due.queue
    pq = consumer.process_queues.get(mq)
    if pq is None or pq.dropped:
        return cluster, []
    # LK-08: every pull of a live ProcessQueue, even one held back below, stamps lastPullTimestamp.
    pq = evolve(pq, last_pull_timestamp=cluster.now)
    cluster = put_consumer(cluster, evolve(consumer, process_queues=consumer.process_queues.set(mq, pq)))
    delay, rules = compute_flow_control(cluster, due.client_id, mq, pq)
    if delay is not None:
        seen = [PullObserved(due.client_id, mq, "FLOW_CONTROL", -1, -1, 0, cluster.now, rules)]
        if rules in (("PL-02",), ("PL-03",)):
            parked = (cluster.now, consumer.incarnation, due.token)
            return evolve(cluster, flow_parked=cluster.flow_parked.set((due.client_id, mq), parked)), seen
        return schedule_pull(cluster, due.client_id, mq, cluster.now + delay), seen
    cluster, observations = get_consume_service(cluster.config).prepare_pull(cluster, due.client_id, mq)
    consumer = cluster.consumers[due.client_id]
    cluster, piggybacked = commit_piggyback(cluster, consumer, mq)
    observations += piggybacked
    offset = consumer.next_offsets[mq]
    cluster, result = request_pull(cluster, mq, offset)
    status, found, next_offset = result.status, result.messages, result.next_begin_offset
    if status == "NO_NEW_MSG" and not due.suspended:
        # Long polling: the broker holds the request until a message arrives or 15 s pass.
        cluster = evolve(cluster, parked=cluster.parked.set((due.client_id, mq), offset))
        at = cluster.now + BROKER_SUSPEND_MAX_TIME_MILLIS
        return schedule_pull(cluster, due.client_id, mq, at, True), observations
    cluster = set_next_offset(cluster, due.client_id, mq, next_offset)
    seen = PullObserved(due.client_id, mq, status, offset, next_offset, len(found), cluster.now, ("PL-04",))
    handler = PULL_HANDLERS.get(status, on_pull_exception)
    cluster, more = handler(cluster, due.client_id, mq, found, next_offset)
    return cluster, observations + [seen] + more


def set_next_offset(cluster: Cluster, client_id: str, mq: MessageQueue, next_offset: int) -> Cluster:
    """The pull request's next offset, and the queue no longer held by the broker; one Cluster copy at most (an
    idle queue's pull every 15 s changes neither)."""
    consumer, changes = cluster.consumers[client_id], {}
    if consumer.next_offsets.get(mq) != next_offset:
        consumer = evolve(consumer, next_offsets=consumer.next_offsets.set(mq, next_offset))
        changes["consumers"] = cluster.consumers.set(client_id, consumer)
    parked = discard(cluster.parked, (client_id, mq))
    if parked is not cluster.parked:
        changes["parked"] = parked
    return evolve(cluster, **changes) if changes else cluster


def on_found(cluster: Cluster, client_id: str, mq: MessageQueue, found: list, next_offset: int):
    """[PL-05] FOUND: drop tag mismatches, cache the rest (putMessage), submit them, pull again pullInterval
    later; a batch the tag re-check emptied is pulled again at once."""
    tags = get_subscribed_tags(cluster, mq)
    msgs = tuple(found) if tags is None else tuple(m for m in found if m.tags in tags)
    observations = []
    if msgs:
        consumer = cluster.consumers[client_id]
        pq, dispatch = put_message(consumer.process_queues[mq], msgs)
        cluster = put_consumer(cluster, evolve(consumer, process_queues=consumer.process_queues.set(mq, pq)))
        cluster, observations = get_consume_service(cluster.config).submit(cluster, client_id, mq, msgs, dispatch)
    at = cluster.now + cluster.config.pull_interval if msgs else cluster.now
    return schedule_pull(cluster, client_id, mq, at), observations


def on_no_message(cluster: Cluster, client_id: str, mq: MessageQueue, _found, next_offset: int):
    """[PL-06] NO_NEW_MSG / NO_MATCHED_MSG: correctTagsOffset — with nothing cached, the offset store jumps to
    nextBeginOffset (increase-only) — then pull again at once."""
    consumer = cluster.consumers[client_id]
    observations = []
    if consumer.process_queues[mq].msg_count == 0:
        cluster, observations = record_offset(cluster, consumer, mq, next_offset, True, ("PL-06",))
    return schedule_pull(cluster, client_id, mq, cluster.now), observations


def on_offset_illegal(cluster: Cluster, client_id: str, mq: MessageQueue, _found, next_offset: int):
    """[PL-08] OFFSET_ILLEGAL: the queue is dropped; 10 s later (4.9) or at once (5.2.0+) the offset is set to
    nextBeginOffset, persisted, and the queue removed, to be re-added by the next rebalance (5.2.0+: at once)."""
    consumer = cluster.consumers[client_id]
    pq = evolve(consumer.process_queues[mq], dropped=True)
    cluster = put_consumer(cluster, evolve(consumer, process_queues=consumer.process_queues.set(mq, pq)))
    fix = OffsetIllegalFix(client_id, consumer.incarnation, mq, consumer.generations[mq], next_offset)
    immediate = cluster.config.profile.offset_illegal_freezes_immediately
    return schedule(cluster, cluster.now + (0 if immediate else OFFSET_ILLEGAL_FIX_DELAY_MILLIS), fix), []


def on_pull_exception(cluster: Cluster, client_id: str, mq: MessageQueue, _found, _next_offset: int):
    """[PL-11] Any other answer is an error code (MQBrokerException): the callback's onException pulls the same
    offset again pullTimeDelayMillsWhenException later; nothing is cached and no offset moves."""
    at = cluster.now + cluster.config.pull_time_delay_mills_when_exception
    return schedule_pull(cluster, client_id, mq, at), [Note(f"{client_id} {mq}: pull refused", cluster.now, ("PL-11",))]


PULL_HANDLERS = {"FOUND": on_found, "OFFSET_ILLEGAL": on_offset_illegal, "NO_NEW_MSG": on_no_message,
                 "NO_MATCHED_MSG": on_no_message}


def wake_flow_controlled_pulls(cluster: Cluster) -> Cluster:
    """[PL-02] [PL-03] A pull held back by the cache checks again every 50 ms; only an event can shrink the cache,
    so instead of firing every 50 ms the retry is scheduled at the first 50 ms tick after the check would pass
    (the same pull at the same virtual time, without thousands of no-op timers during a long wait). A held-back
    pull whose ProcessQueue was dropped (and kept in the table, OR-12) ends: Java's checks stamped it up to the drop,
    and the first after it returns unstamped [LK-08]."""
    for key, (since, incarnation, token) in sorted(cluster.flow_parked.items()):
        client_id, mq = key
        consumer = get_live_consumer(cluster, client_id, incarnation)
        pq = None if consumer is None else consumer.process_queues.get(mq)
        if pq is None or consumer.pull_tokens.get(mq) != token:
            cluster = evolve(cluster, flow_parked=discard(cluster.flow_parked, key))
        elif pq.dropped or compute_flow_control(cluster, client_id, mq, pq)[0] is None:
            ticks = (cluster.now - since) // CACHE_FLOW_CONTROL_MILLIS
            # [LK-08] Java's held-back pull ran at every one of the skipped ticks, each stamping lastPullTimestamp;
            # a ProcessQueue dropped since (and kept in the table) was stamped up to the drop, and its pull ends.
            pq = evolve(pq, last_pull_timestamp=max(pq.last_pull_timestamp, since + CACHE_FLOW_CONTROL_MILLIS * ticks))
            cluster = put_consumer(evolve(cluster, flow_parked=discard(cluster.flow_parked, key)),
                                   evolve(consumer, process_queues=consumer.process_queues.set(mq, pq)))
            if not pq.dropped:
                cluster = schedule_pull(cluster, client_id, mq, since + CACHE_FLOW_CONTROL_MILLIS * (ticks + 1))
    return cluster


def wake_parked_pulls(cluster: Cluster, answered) -> Cluster:
    """[PL-04] A held pull answers as soon as its queue has a message at or past the requested offset: each held
    pull of `answered` ((client, queue) pairs, in the order the broker answers them) is made again at once."""
    for client_id, mq in answered:
        cluster = evolve(cluster, parked=discard(cluster.parked, (client_id, mq)))
        if client_id in cluster.consumers:
            cluster = schedule_pull(cluster, client_id, mq, cluster.now)
    return cluster
