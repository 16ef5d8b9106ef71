"""The broker half on the wire: each request of model/values/wire.py answered by the broker's handler for it.

A bare `Broker` is a peer of `exchange` (a pure client step taken alone, as the spec's examples take them); a
cluster's router (model/system/route.py) hands its clients' requests to the same handlers (`ANSWERS`) with its
broker.
"""

from __future__ import annotations

from collections.abc import Callable

from model.broker.consumer_offsets import commit_offset, on_query_consumer_offset, query_offset
from model.broker.locks import on_lock_batch, on_unlock_batch
from model.broker.pull_handler import get_broker_pull
from model.broker.retry_send import on_send_message
from model.broker.send_back import on_consumer_send_msg_back
from model.broker.state import Broker
from model.values.wire import (
    CommitResult,
    Context,
    GetMaxOffset,
    GetRoute,
    LockBatchRequest,
    LockBatchResult,
    OffsetResult,
    PullMessage,
    PullResult,
    QueryConsumerOffset,
    ResponseCode,
    RouteResult,
    SendBackRequest,
    SendBackResult,
    SendMessage,
    SendResult,
    UnlockBatchRequest,
    UpdateConsumerOffset,
    answers_for,
)


def answer_pull(broker: Broker, request: PullMessage, _context: Context) -> tuple[Broker, PullResult]:
    """PULL_MESSAGE: the store lookup from the request's offset, the queue's expired head taken into account."""
    queue = request.queue
    status, found, next_offset = get_broker_pull(broker, queue, request.offset, broker.min_offsets.get(queue, 0),
                                                 request.codes, request.batch_size)
    return broker, PullResult(status, found, next_offset)


def answer_commit(broker: Broker, request: UpdateConsumerOffset, _context: Context) -> tuple[Broker, CommitResult]:
    """UPDATE_CONSUMER_OFFSET: stored as it arrives (OS-05); a commit of the offset already held changes nothing."""
    queue = request.queue
    previous = query_offset(broker, request.group, queue.topic, queue.queue_id)
    if previous != request.offset:
        broker = commit_offset(broker, request.group, queue.topic, queue.queue_id, request.offset)
    return broker, CommitResult(previous)


def answer_query_offset(broker: Broker, request: QueryConsumerOffset, context: Context) -> tuple[Broker, OffsetResult]:
    """QUERY_CONSUMER_OFFSET, with the queue's expired head and the profile's check of it taken into account
    (RB-04)."""
    queue = request.queue
    low = broker.min_offsets.get(queue, 0)
    config = context.config if context is not None else None
    needs_head = config is not None and config.profile.query_offset_zero_needs_stored_head
    return broker, OffsetResult(on_query_consumer_offset(broker, request.group, queue.topic, queue.queue_id, low,
                                                         needs_head))


def answer_max_offset(broker: Broker, request: GetMaxOffset, _context: Context) -> tuple[Broker, OffsetResult]:
    return broker, OffsetResult(broker.store.get_max_offset_in_queue(request.queue.topic, request.queue.queue_id))


def answer_route(broker: Broker, request: GetRoute, _context: Context) -> tuple[Broker, RouteResult]:
    """The topic's read queues as the broker registers them with the name server; 0 for a topic it does not have."""
    topic = broker.topics.get(request.topic)
    return broker, RouteResult(topic.read_queue_nums if topic is not None else 0)


def answer_send_back(broker: Broker, request: SendBackRequest, context: Context):
    return on_consumer_send_msg_back(broker, context.config, request, context.now, context.random_int)


def answer_send(broker: Broker, request: SendMessage, context: Context):
    header = (request.reconsume_times, request.max_reconsume_times)
    return on_send_message(broker, context.config, request.message, header, context.now, context.random_int)


def answer_lock(broker: Broker, request: LockBatchRequest, context: Context) -> tuple[Broker, LockBatchResult]:
    result = on_lock_batch(broker, request.group, request.queues, request.client_id, context.now)
    return result.broker, LockBatchResult(result.granted)


def answer_unlock(broker: Broker, request: UnlockBatchRequest, _context: Context) -> tuple[Broker, None]:
    return on_unlock_batch(broker, request.group, request.queues, request.client_id), None


ANSWERS: dict[type, Callable] = {
    PullMessage: answer_pull,
    UpdateConsumerOffset: answer_commit,
    QueryConsumerOffset: answer_query_offset,
    GetMaxOffset: answer_max_offset,
    GetRoute: answer_route,
    SendBackRequest: answer_send_back,
    SendMessage: answer_send,
    LockBatchRequest: answer_lock,
    UnlockBatchRequest: answer_unlock,
}


# The requests a fault can make the broker refuse (RefuseRequests), by the kind the fault names.
REFUSABLE: dict[type, str] = {SendBackRequest: "send_back", SendMessage: "send", PullMessage: "pull"}


def answer_refused(request, code: ResponseCode):
    """[SY-13] The broker's answer to a request it refuses with an error `code`: nothing stored, and a pull's
    status is the code's name (the client throws MQBrokerException on it, PL-11)."""
    remark = f"refused: {code.name}"
    if type(request) is SendBackRequest:
        return SendBackResult(code, remark, None, ("SY-13",))
    if type(request) is SendMessage:
        return SendResult(code, remark, None, ("SY-13",))
    return PullResult(code.name, [], request.offset)


@answers_for(Broker)
def answer_request(broker: Broker, request, context: Context | None = None) -> tuple[Broker, object]:
    """The broker's answer to one request, in the `context` of its clock, configuration and random draw."""
    return ANSWERS[type(request)](broker, request, context)
