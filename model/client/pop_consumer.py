"""The POP consumers, clients of the broker beside the 4.x push consumer (spec/18-pop-consumer.md, spec/16-proxy.md):
the 5.3.3 remoting push consumer in POP mode, which pops from the broker and acks or changes invisible times itself,
and a gRPC SimpleConsumer behind the proxy, which receives, acks, and on a failure changes the invisible duration.

Each consumer of a group pops every queue of the topic, one consume request at a time: it pops again once its
listener has returned and its acks and changes are sent; a pop that finds nothing is held by the broker (long
polling) until a message is stored or POP_POLL_MILLIS pass. It reaches the broker only by exchanging the requests of
model/values/pop_wire.py with the cluster it was given (model/system routes them).
"""

from __future__ import annotations

from typing import NamedTuple

from model.client.cluster import Cluster
from model.client.consume_common import schedule
from model.client.listener import CONSUME_SUCCESS, ListenerResult
from model.client.pop_push_consumer import PopAction, process_consume_result
from model.values.message import Message
from model.values.names import TOPIC
from model.values.pop_wire import (
    Handle,
    PopRequest,
    ProxyAckRequest,
    ProxyChangeRequest,
    ReceiveRequest,
    compute_ack_request,
    compute_change_request,
)
from model.values.records import bounded_repr, evolve, record
from model.values.wire import exchange

# The broker holds a pop that found nothing this long before it answers POLLING_TIMEOUT (the remoting client's
# BROKER_SUSPEND_MAX_TIME_MILLIS, the proxy's long polling), unless a message is stored first.
POP_POLL_MILLIS = 15_000
# ProxyAnswer and the broker's answers name success differently.
SUCCESS_CODES = frozenset({"SUCCESS", "OK"})


@record
class PopConsumer:
    """One POP consumer instance of `group`: `via_proxy` a gRPC SimpleConsumer (its failures wait `retry_delay`
    ms, changeInvisibleDuration), else the remoting POP push consumer (its failures follow PC-01 and PC-02 with
    `max_reconsume_times`); `pop_token` names its one pending pop timer (an older one is stale)."""

    __repr__ = bounded_repr
    client_id: str
    group: str
    incarnation: int
    via_proxy: bool
    batch_size: int = 1
    invisible_time: int = 30_000
    tags: frozenset | None = None
    retry_delay: int = 10_000
    max_reconsume_times: int = 16
    pop_token: int = 0


class PopDue(NamedTuple):
    """The consumer's next pop falls due (a named tuple: one is scheduled per pop)."""

    client_id: str
    incarnation: int
    token: int


class PopConsumeRequest(NamedTuple):
    """A POP consumer's listener invocation in flight: the messages as popped (or received) and their handles."""

    request_id: int
    client_id: str
    incarnation: int
    group: str
    messages: tuple[Message, ...]
    handles: tuple[Handle, ...]
    started_at: int


class PopDelivered(NamedTuple):
    """The listener of `client_id` (group `group`) is called with these messages and their handles."""

    client_id: str
    group: str
    request_id: int
    messages: tuple[Message, ...]
    handles: tuple[Handle, ...]
    time: int
    rules: tuple[str, ...] = ()


class PopSettled(NamedTuple):
    """What the consumer sent for one message after its listener returned: "ack", "change" or "none", the
    answer's code (None when nothing was sent), the time the message becomes visible again after an answered
    change (None otherwise), and whether it was the remoting consumer's give-up (PC-02)."""

    client_id: str
    group: str
    uniq_key: str
    kind: str
    code: str | None
    visible_at: int | None
    give_up: bool
    time: int
    rules: tuple[str, ...] = ()


def start_pop_consumer(cluster: Cluster, consumer: PopConsumer) -> Cluster:
    """A new instance (a new incarnation): it pops at once."""
    incarnation = cluster.incarnations + 1
    consumer = evolve(consumer, incarnation=incarnation, pop_token=0)
    cluster = evolve(cluster, incarnations=incarnation)
    return schedule_pop(cluster, consumer, cluster.now)


def stop_pop_consumer(cluster: Cluster, client_id: str) -> Cluster:
    """The instance is gone (a crash, or a shutdown that does not wait for its listeners): its pending pop and its
    listener invocations are dropped with their handles, and what it held comes back when its invisible time
    ends (PG-01)."""
    if client_id not in cluster.pop_consumers:
        return cluster
    dropped = [rid for rid, request in cluster.pop_requests.items() if request.client_id == client_id]
    requests = cluster.pop_requests
    for rid in dropped:
        requests = requests.delete(rid)
    return evolve(cluster, pop_consumers=cluster.pop_consumers.delete(client_id), pop_requests=requests,
                  pop_parked=cluster.pop_parked - {client_id})


def schedule_pop(cluster: Cluster, consumer: PopConsumer, at: int) -> Cluster:
    """The consumer's next pop at `at`, 1 ms at the earliest (the model's clock starts at 0, where RocketMQ's pop
    time is an epoch ms and 0 means none: PC-03 would drop the request); any pop it had pending becomes stale."""
    at = max(at, 1)
    consumer = evolve(consumer, pop_token=consumer.pop_token + 1)
    due = PopDue(consumer.client_id, consumer.incarnation, consumer.pop_token)
    return schedule(cluster, at, due, pop_consumers=cluster.pop_consumers.set(consumer.client_id, consumer))


def get_live_pop_consumer(cluster: Cluster, client_id: str, incarnation: int) -> PopConsumer | None:
    consumer = cluster.pop_consumers.get(client_id)
    return consumer if consumer is not None and consumer.incarnation == incarnation else None


def compute_pop_request(consumer: PopConsumer):
    """The request the consumer pops with: a proxy's ReceiveMessage, or the broker's POP_MESSAGE of every queue."""
    if consumer.via_proxy:
        return ReceiveRequest(consumer.group, TOPIC, consumer.batch_size, consumer.invisible_time, consumer.tags)
    return PopRequest(consumer.group, TOPIC, -1, consumer.batch_size, consumer.invisible_time, tags=consumer.tags)


def process_pop_due(cluster: Cluster, due: PopDue) -> tuple[Cluster, list]:
    """One pop: what it finds goes to the listener (one consume request); nothing found, the broker holds the
    pop until a message is stored or POP_POLL_MILLIS pass."""
    consumer = get_live_pop_consumer(cluster, due.client_id, due.incarnation)
    if consumer is None or consumer.pop_token != due.token:
        return cluster, []
    cluster, answer = exchange(cluster, compute_pop_request(consumer))
    if not answer.messages:
        cluster = schedule_pop(cluster, consumer, cluster.now + POP_POLL_MILLIS)
        return evolve(cluster, pop_parked=cluster.pop_parked | {consumer.client_id}), []
    rid = cluster.next_request_id
    request = PopConsumeRequest(rid, consumer.client_id, consumer.incarnation, consumer.group, answer.messages,
                                answer.handles, cluster.now)
    cluster = evolve(cluster, pop_requests=cluster.pop_requests.set(rid, request), next_request_id=rid + 1,
                     pop_parked=cluster.pop_parked - {consumer.client_id})
    delivered = PopDelivered(consumer.client_id, consumer.group, rid, answer.messages, answer.handles, cluster.now,
                             answer.rules)
    return cluster, [delivered]


def wake_parked_pops(cluster: Cluster) -> Cluster:
    """A message was stored: every pop the broker holds is answered now (in client order)."""
    for client_id in sorted(cluster.pop_parked):
        cluster = schedule_pop(cluster, cluster.pop_consumers[client_id], cluster.now)
    return evolve(cluster, pop_parked=frozenset())


def compute_actions(consumer: PopConsumer, request: PopConsumeRequest, result: ListenerResult,
                    now: int) -> tuple[PopAction, ...]:
    """What the consumer sends for each message: the remoting consumer's PC-01..PC-03 decisions; a SimpleConsumer
    acks the messages up to ackIndex on success and changes the others' invisible duration to its retry delay."""
    succeeded = result.status is CONSUME_SUCCESS
    if not consumer.via_proxy:
        return process_consume_result(request.messages, request.handles, succeeded, result.ack_index,
                                      result.delay_level_when_next_consume, consumer.max_reconsume_times, now)
    last_acked = min(result.ack_index, len(request.messages) - 1) if succeeded else -1
    return tuple(PopAction("ack", handle) if index <= last_acked else PopAction("change", handle, consumer.retry_delay)
                 for index, handle in enumerate(request.handles))


def compute_settle_request(consumer: PopConsumer, action: PopAction):
    """The wire request of one action (None for "none")."""
    group, handle = consumer.group, action.handle
    if action.kind == "ack":
        return ProxyAckRequest(group, TOPIC, handle) if consumer.via_proxy else compute_ack_request(group, TOPIC,
                                                                                                    handle)
    if action.kind == "change":
        if consumer.via_proxy:
            return ProxyChangeRequest(group, TOPIC, handle, action.invisible_time)
        return compute_change_request(group, TOPIC, handle, action.invisible_time)
    return None


def on_complete_pop(cluster: Cluster, request_id: int, result: ListenerResult) -> tuple[Cluster, list]:
    """[PC-01] A POP consumer's listener returns: the consumer sends an ack or a change for each message (PC-01,
    PC-02, PC-03 for the remoting consumer; PD-05, PD-06 through the proxy), then pops again."""
    request = cluster.pop_requests.get(request_id)
    if request is None:
        return cluster, []
    cluster = evolve(cluster, pop_requests=cluster.pop_requests.delete(request_id))
    consumer = get_live_pop_consumer(cluster, request.client_id, request.incarnation)
    if consumer is None:
        return cluster, []
    seen = []
    for message, action in zip(request.messages, compute_actions(consumer, request, result, cluster.now),
                               strict=True):
        cluster, settled = process_action(cluster, consumer, message, action)
        seen.append(settled)
    return schedule_pop(cluster, cluster.pop_consumers[consumer.client_id], cluster.now), seen


def process_action(cluster: Cluster, consumer: PopConsumer, message: Message,
                   action: PopAction) -> tuple[Cluster, PopSettled]:
    """Send one action's request and report what it did."""
    wire = compute_settle_request(consumer, action)
    code = visible_at = None
    rules = ()
    if wire is not None:
        cluster, answer = exchange(cluster, wire)
        code, rules = answer.code, answer.rules
        if action.kind == "change" and code in SUCCESS_CODES:
            visible_at = cluster.now + action.invisible_time
    return cluster, PopSettled(consumer.client_id, consumer.group, message.uniq_key, action.kind, code, visible_at,
                               action.give_up, cluster.now, rules)
