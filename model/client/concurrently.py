"""The concurrently consume service: batch split, listener outcomes, processConsumeResult, cleanExpiredMsg
(spec/08-concurrently.md, spec/09-consume-timeout.md)."""

from __future__ import annotations

from model.client.cluster import Cluster
from model.client.consume_common import (
    get_current_pq,
    get_live_consumer,
    put_consumer,
    record_offset,
    replace_cached,
    schedule,
    send_message_back,
    start_listeners,
)
from model.client.consume_service import ConsumeService
from model.client.flow_control import CACHE_FLOW_CONTROL_MILLIS
from model.client.listener import EXCEPTION, NULL, RECONSUME_LATER, ConsumeStatus, ListenerResult
from model.client.observations import ConsumeProcessed, Note
from model.client.process_queue import (
    compute_removal,
    contains_message,
    get_expired_head_messages,
    get_max_span,
    remove_message,
)
from model.client.timer_items import Resubmit, ServiceTimer
from model.values.records import evolve, new_tuple

CLEAN_EXPIRED = "clean_expired_msg"
SEND_BACK_FAILED_RETRY_MILLIS = 5000
CLEAN_EXPIRED_DELAY_LEVEL = 3


def start(cluster: Cluster, client_id: str) -> Cluster:
    """[CT-01] cleanExpiredMsg runs at a fixed rate of consumeTimeout minutes, first after one period."""
    consumer = cluster.consumers[client_id]
    period = cluster.config.consume_timeout * 60_000
    return schedule(cluster, cluster.now + period, ServiceTimer(client_id, consumer.incarnation, CLEAN_EXPIRED))


def allows_pull(cluster: Cluster, client_id: str, mq, pq) -> tuple[int | None, tuple[str, ...]]:
    """[PL-03] Concurrently only: no pull while the cached span exceeds consumeConcurrentlyMaxSpan (strict)."""
    if get_max_span(pq) > cluster.config.consume_concurrently_max_span:
        return CACHE_FLOW_CONTROL_MILLIS, ("PL-03",)
    return None, ()


def compute_batches(msgs: tuple, batch_size: int) -> list[tuple]:
    """[CC-02] submitConsumeRequest: one request per consecutive chunk of consumeMessageBatchMaxSize."""
    return [msgs[i:i + batch_size] for i in range(0, len(msgs), batch_size)]


def submit(cluster: Cluster, client_id: str, mq, msgs: tuple, dispatch_to_consume: bool) -> tuple[Cluster, list]:
    """[CC-02] Every pulled batch is split and submitted; `dispatch_to_consume` is ignored by this service."""
    chunks = compute_batches(tuple(msgs), cluster.config.consume_message_batch_max_size)
    return start_listeners(cluster, cluster.consumers[client_id], mq, chunks, ("CC-02",))


def compute_ack_index(result: ListenerResult, size: int) -> tuple[ConsumeStatus, int, tuple[str, ...]]:
    """[CC-03] An exception or null is RECONSUME_LATER; RECONSUME_LATER acks nothing whatever ackIndex says;
    CONSUME_SUCCESS acks messages 0..ackIndex (ackIndex clamped to size − 1, a negative one acks none)."""
    status = result.status
    rules = ("CC-03",)
    if status is EXCEPTION or status is NULL:
        status, rules = RECONSUME_LATER, ("CC-03", "CC-04")
    if status is RECONSUME_LATER:
        return status, -1, rules
    return status, min(result.ack_index, size - 1), rules


def complete(cluster: Cluster, event) -> tuple[Cluster, list]:
    """[CC-08] processConsumeResult, unless the ProcessQueue was dropped meanwhile [RB-03]."""
    request = cluster.requests.get(event.request_id)
    if request is None:
        return cluster, []
    # Unpacked once: a named tuple's field read is a generic attribute look-up.
    request_id, client_id, incarnation, queue, generation, consumed, _started_at = request
    # The request leaves the table in the last copy of the cluster this event makes.
    requests = cluster.requests.delete(request_id)
    consumer = get_live_consumer(cluster, client_id, incarnation)
    pq = None if consumer is None else get_current_pq(consumer, queue, generation)
    status, ack_index, rules = compute_ack_index(event.result, len(consumed))
    ok, failed = consumed[:ack_index + 1], consumed[ack_index + 1:]
    if pq is None:
        dropped = ConsumeProcessed(request_id, status, ack_index, ok, failed, True, cluster.now, rules + ("RB-03",))
        return evolve(cluster, requests=requests), [dropped]
    observations = []
    if not cluster.config.is_clustering:
        observations.append(Note("broadcasting drops failed messages", cluster.now, ("CC-09",)))
    elif failed:
        # A send-back changes only the broker: the instance and its ProcessQueue stay those read above.
        cluster, back_failed, observations = send_back_failed(cluster, event, pq, failed)
        if back_failed:
            cluster, pq = resubmit_later(cluster, consumer, request, pq, back_failed)
            consumer = cluster.consumers[client_id]
            back_offsets = {m.queue_offset for m in back_failed}
            consumed = [m for m in consumed if m.queue_offset not in back_offsets]
    pq, offset = compute_removal(pq, consumed, cluster.now)
    cluster, updated = record_offset(cluster, consumer, queue, offset, True, ("CC-08",), pq, requests=requests)
    processed = new_tuple(ConsumeProcessed, (request_id, status, ack_index, ok, failed, False, cluster.now,
                                              rules + ("CC-08",)))
    return cluster, [processed] + observations + updated


def send_back_failed(cluster: Cluster, event, pq, failed: tuple) -> tuple[Cluster, tuple, list]:
    """[CC-06] CLUSTERING: each failed message is sent back with the context's delayLevelWhenNextConsume;
    5.1.0+ skips one no longer cached (cleanExpiredMsg already sent it back) [CT-04]."""
    level = event.result.delay_level_when_next_consume
    skip_removed = cluster.config.profile.skip_send_back_of_removed_messages
    back_failed, observations = [], []
    for msg in failed:
        if skip_removed and not contains_message(pq, msg):
            observations.append(Note("send-back skipped: no longer cached", cluster.now, ("CT-04",)))
            continue
        cluster, sent, seen = send_message_back(cluster, msg, level, event.send_back_rpc_fails,
                                               event.fallback_fails, ("CC-06",), event.send_retried)
        observations.extend(seen)
        if not sent:
            back_failed.append(evolve(msg, reconsume_times=msg.reconsume_times + 1))
    return cluster, tuple(back_failed), observations


def resubmit_later(cluster: Cluster, consumer, request, pq, back_failed: tuple):
    """[CC-07] Both send-backs failed: reconsumeTimes + 1 locally, keep the messages cached (the offset cannot
    pass them) and resubmit them 5000 ms later."""
    pq = replace_cached(pq, back_failed)
    consumer = evolve(consumer, process_queues=consumer.process_queues.set(request.queue, pq))
    cluster = put_consumer(cluster, consumer)
    item = Resubmit(consumer.client_id, consumer.incarnation, request.queue, request.generation, back_failed)
    cluster = schedule(cluster, cluster.now + SEND_BACK_FAILED_RETRY_MILLIS, item)
    return evolve(cluster, pending_resubmits=cluster.pending_resubmits + 1), pq


def on_timer(cluster: Cluster, timer: ServiceTimer) -> tuple[Cluster, list]:
    """[CT-02] cleanExpiredMsg over every ProcessQueue of the instance, then the next run one period later."""
    consumer = get_live_consumer(cluster, timer.client_id, timer.incarnation)
    if consumer is None or timer.kind != CLEAN_EXPIRED:
        return cluster, []
    observations = []
    for mq in sorted(consumer.process_queues):
        cluster, seen = clean_expired_msg(cluster, timer.client_id, mq)
        observations.extend(seen)
    return start(cluster, timer.client_id), observations


def clean_expired_msg(cluster: Cluster, client_id: str, mq) -> tuple[Cluster, list]:
    """[CT-02] Up to 16 expired head messages (started more than consumeTimeout ago, strict) are sent back at
    level 3 and removed — and the offset removeMessage returns is discarded [CT-03]."""
    pq = cluster.consumers[client_id].process_queues[mq]
    if pq.dropped:
        return cluster, []
    observations = []
    for msg in get_expired_head_messages(pq, cluster.now, cluster.config.consume_timeout):
        cluster, sent, seen = send_message_back(cluster, msg, CLEAN_EXPIRED_DELAY_LEVEL, False, False, ("CT-02",))
        observations.extend(seen)
        consumer = cluster.consumers[client_id]
        pq = consumer.process_queues[mq]
        if sent and pq.msg_tree_map and pq.msg_tree_map.first_key() == msg.queue_offset:
            pq, _discarded = remove_message(pq, [msg], cluster.now)
            consumer = evolve(consumer, process_queues=consumer.process_queues.set(mq, pq))
            cluster = put_consumer(cluster, consumer)
            observations.append(Note("expired message removed, offset not updated", cluster.now, ("CT-03",)))
    return cluster, observations


CONCURRENTLY_SERVICE = ConsumeService(
    name="concurrently", start=start, allows_pull=allows_pull, submit=submit, complete=complete, on_timer=on_timer
)
