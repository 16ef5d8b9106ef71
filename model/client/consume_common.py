"""Pieces every consume service shares: timers, the listener invocation, send-back with its fallback, and the
offset update after removeMessage (spec/08-concurrently.md)."""

from __future__ import annotations

from model.client.cluster import Cluster
from model.client.consumer import ConsumeRequest, ConsumerInstance
from model.client.observations import DlqArrival, ListenerInvoked, OffsetUpdated, SendBackOutcome
from model.client.offset_store import update_offset
from model.client.retry_message import compute_fallback_retry_message, compute_producer_retry
from model.values.message import (
    PROPERTY_CONSUME_START_TIMESTAMP,
    PROPERTY_RETRY_TOPIC,
    Message,
    MessageQueue,
    get_retry_topic,
    is_dlq_topic,
)
from model.values.names import GROUP
from model.values.records import evolve, new_tuple
from model.values.timer_heap import heap_push
from model.values.wire import RESPONSE_SUCCESS, SendMessage, compute_send_back_request, exchange


def schedule(cluster: Cluster, at: int, item: object, **changes) -> Cluster:
    """Put a timed item on the cluster's timer heap; equal times fire in scheduling order. `changes` are other
    fields of the cluster to set in the same copy (one Cluster copy per event step instead of several)."""
    seq = cluster.timer_seq + 1
    return evolve(cluster, timers=heap_push(cluster.timers, (at, seq), item), timer_seq=seq, **changes)


def get_live_consumer(cluster: Cluster, client_id: str, incarnation: int) -> ConsumerInstance | None:
    """The instance, if it is still the same incarnation (a crashed or restarted instance's timers are stale)."""
    consumer = cluster.consumers.get(client_id)
    return consumer if consumer is not None and consumer.incarnation == incarnation else None


def put_consumer(cluster: Cluster, consumer: ConsumerInstance, **changes) -> Cluster:
    """The cluster with the instance replaced (and `changes` to other fields, in the same copy)."""
    return evolve(cluster, consumers=cluster.consumers.set(consumer.client_id, consumer), **changes)


def get_current_pq(consumer: ConsumerInstance, mq: MessageQueue, generation: int):
    """The ProcessQueue of that generation, or None when it was dropped (rebalance, crash, OFFSET_ILLEGAL)."""
    if consumer.generations.get(mq) != generation:
        return None
    pq = consumer.process_queues.get(mq)
    return None if pq is None or pq.dropped else pq


GROUP_RETRY_TOPIC = get_retry_topic(GROUP)


def compute_shown_topic(msg: Message) -> str:
    """[CC-05] resetRetryAndNamespace: a message pulled from %RETRY%<group> that carries RETRY_TOPIC is shown under
    its original topic."""
    if msg.topic != GROUP_RETRY_TOPIC:
        return msg.topic
    retry_topic = msg.get_property(PROPERTY_RETRY_TOPIC)
    return msg.topic if retry_topic is None else retry_topic


def replace_cached(pq, msgs):
    """Java mutates the cached objects in place (topic reset, CONSUME_START_TIME, local reconsumeTimes + 1);
    here the cached values are replaced by the changed ones, only where the offset is still cached."""
    tree = pq.msg_tree_map
    replaced = tree.update([(msg.queue_offset, msg) for msg in msgs])
    if replaced.size != tree.size:  # some offset is no longer cached: only the others are replaced
        replaced = tree.update([(msg.queue_offset, msg) for msg in msgs if msg.queue_offset in tree])
    return evolve(pq, msg_tree_map=replaced)


def start_listener(cluster: Cluster, consumer: ConsumerInstance, mq: MessageQueue, msgs: tuple[Message, ...],
                   rules: tuple[str, ...]) -> tuple[Cluster, ListenerInvoked]:
    """[CC-05] ConsumeRequest.run: reset the retry topic, stamp CONSUME_START_TIME = now, call the listener."""
    cluster, invoked = start_listeners(cluster, consumer, mq, (msgs,), rules)
    return cluster, invoked[0]


def start_listeners(cluster: Cluster, consumer: ConsumerInstance, mq: MessageQueue, chunks: list[tuple[Message, ...]],
                    rules: tuple[str, ...]) -> tuple[Cluster, list[ListenerInvoked]]:
    """[CC-05] ConsumeRequest.run for each chunk, in order: reset the retry topic, stamp CONSUME_START_TIME = now,
    call the listener.

    Consume threads are not a bottleneck in the model: a request starts the moment it is submitted. The requests
    of one pulled batch start together, so the instance and the cluster are copied once for all of them.
    """
    now, client_id, incarnation = cluster.now, consumer.client_id, consumer.incarnation
    stamp, invoked_rules = str(now), rules + ("CC-05",)
    generation = consumer.generations[mq]
    request_id, invoked = cluster.next_request_id, []
    # Message's first four fields are topic, body, tags and properties: each message is rebuilt with the shown topic
    # and the stamped properties, all of them in one pass (a chunk is often one message), then cut into the chunks.
    started = tuple([new_tuple(Message, (compute_shown_topic(m), m.body, m.tags,
                                         m.properties.set(PROPERTY_CONSUME_START_TIMESTAMP, stamp), *m[4:]))
                     for chunk in chunks for m in chunk])
    requests, start = cluster.requests.mutate(), 0
    for chunk in chunks:
        seen, start = started[start:start + len(chunk)], start + len(chunk)
        requests[request_id] = new_tuple(ConsumeRequest,
                                          (request_id, client_id, incarnation, mq, generation, seen, now))
        invoked.append(new_tuple(ListenerInvoked, (client_id, request_id, mq, seen, now, invoked_rules)))
        request_id += 1
    pq = replace_cached(consumer.process_queues[mq], started)
    consumer = evolve(consumer, process_queues=consumer.process_queues.set(mq, pq))
    cluster = evolve(cluster, consumers=cluster.consumers.set(consumer.client_id, consumer),
                    requests=requests.finish(), next_request_id=request_id)
    return cluster, invoked


def record_offset(cluster: Cluster, consumer: ConsumerInstance, mq: MessageQueue, offset: int,
                  increase_only: bool, rules: tuple[str, ...], pq=None, **changes) -> tuple[Cluster, list]:
    """[CC-08] removeMessage's offset goes to the offset store (increase-only for concurrently) if it is >= 0.

    `consumer` may be a changed copy of the cluster's instance; it is stored with the offset, and so are `pq` (the
    queue's new ProcessQueue, if given) and `changes` to other fields of the cluster: one copy of each."""
    consumer_changes = {} if pq is None else {"process_queues": consumer.process_queues.set(mq, pq)}
    if offset < 0:
        observed = []
    else:
        store = update_offset(consumer.offset_store, mq, offset, increase_only)
        lifetime = (consumer.incarnation, consumer.generations.get(mq, 0))
        observed = [new_tuple(OffsetUpdated, (consumer.client_id, mq, store.offsets[mq].value, cluster.now, rules,
                                               lifetime))]
        if store is not consumer.offset_store:
            consumer_changes["offset_store"] = store
    if consumer_changes:
        consumer = evolve(consumer, **consumer_changes)
    elif cluster.consumers.get(consumer.client_id) is consumer:
        # nothing of the instance changed (an increase-only update that kept the value): nothing to copy
        return (evolve(cluster, **changes) if changes else cluster), observed
    # put_consumer, one call fewer on the path of every completed request
    return evolve(cluster, consumers=cluster.consumers.set(consumer.client_id, consumer), **changes), observed


def observe_stored(stored: Message | None, now: int, rules: tuple[str, ...]) -> list:
    return [DlqArrival(stored, now, rules)] if stored is not None and is_dlq_topic(stored.topic) else []


def send_message_back(cluster: Cluster, msg: Message, delay_level: int, rpc_fails: bool, fallback_fails: bool,
                      rules: tuple[str, ...], fallback_retried: bool = False) -> tuple[Cluster, bool, list]:
    """[CC-06] DefaultMQPushConsumerImpl.sendMessageBack: the CONSUMER_SEND_MSG_BACK RPC, and when it fails
    (or answers anything but SUCCESS) the client fallback: a producer send of a new message to %RETRY%<group>
    at level 3 + reconsumeTimes (`fallback_retried`: stored by the producer's retry, RS-14). Returns False only
    when both failed."""
    config, now = cluster.config, cluster.now
    if not rpc_fails:
        cluster, result = exchange(cluster, compute_send_back_request(msg, GROUP, config, delay_level))
        if result.code is RESPONSE_SUCCESS:
            outcome = new_tuple(SendBackOutcome,
                                (msg, "rpc", result.stored, delay_level, now, rules + tuple(result.rules)))
            return cluster, True, [outcome] + observe_stored(result.stored, now, rules)
    if fallback_fails:
        return cluster, False, [SendBackOutcome(msg, "failed", None, delay_level, now, rules + ("CC-07",))]
    return send_fallback(cluster, msg, delay_level, rules, fallback_retried)


def send_fallback(cluster: Cluster, msg: Message, delay_level: int, rules: tuple[str, ...],
                  retried: bool = False) -> tuple[Cluster, bool, list]:
    """[CC-06] The fallback producer send; a refused send counts as a failure (the producer throws). `retried`:
    the first attempt was refused and the producer's retry sends the message without its two header properties
    (RS-14)."""
    now = cluster.now
    retry, header_times, header_max = compute_fallback_retry_message(msg, GROUP, cluster.config)
    if retried:
        retry, header_times, header_max = compute_producer_retry(retry)
        rules += ("RS-14",)
    cluster, result = exchange(cluster, SendMessage(retry, header_times, header_max))
    if result.code is not RESPONSE_SUCCESS:
        return cluster, False, [SendBackOutcome(msg, "failed", None, delay_level, now, rules + ("CC-07",))]
    outcome = SendBackOutcome(msg, "fallback", result.stored, delay_level, now, rules + ("CC-06",) + result.rules)
    return cluster, True, [outcome] + observe_stored(result.stored, now, rules)

