"""RocketMQ 5.x's gRPC protocol (apache/rocketmq-apis ``apache.rocketmq.v2``) for a consumer of the proxy: requests
built from plain values, responses read back into plain values.

The message classes are the ones PyPI's rocketmq-python-client 5.1.2 generated from rocketmq-apis
(``rocketmq.grpc_protocol``, extra ``broker5`` of this project): pinned, nothing to generate at test time, and the
client the 5.3.3 build's README verified against this proxy. Fields the 5.3.3 proxy (rocketmq-apis 2.0.4) does not
know are simply not set.
"""

from __future__ import annotations

import hashlib

import attrs
from rocketmq.grpc_protocol import definition_pb2 as pb
from rocketmq.grpc_protocol import service_pb2 as spb

LANGUAGE_PYTHON = 6  # apache.rocketmq.v2.Language.PYTHON
CLIENT_VERSION = "5.1.2"
CODE_OK = pb.Code.OK


def get_metadata(client_id: str, request_id: str) -> tuple[tuple[str, str], ...]:
    """The headers every call carries (the proxy's ContextInterceptor reads the client id from them)."""
    return (("x-mq-language", "PYTHON"), ("x-mq-protocol", "GRPC_V2"), ("x-mq-client-version", CLIENT_VERSION),
            ("x-mq-client-id", client_id), ("x-mq-request-id", request_id))


def _millis(duration) -> int:
    return duration.seconds * 1000 + duration.nanos // 1_000_000


def encode_consumer_settings(group: str, topic: str, exp: str = "*", timeout_s: int = 10,
                             long_polling_s: int = 20) -> spb.TelemetryCommand:
    """A SIMPLE_CONSUMER's settings as its telemetry stream's first command: group, one subscription (TAG)."""
    settings = pb.Settings(client_type=pb.ClientType.SIMPLE_CONSUMER)
    settings.request_timeout.seconds = timeout_s
    settings.subscription.group.name = group
    entry = settings.subscription.subscriptions.add()
    entry.topic.name = topic
    entry.expression.type = pb.FilterType.TAG
    entry.expression.expression = exp
    settings.subscription.long_polling_timeout.seconds = long_polling_s
    settings.user_agent.language = LANGUAGE_PYTHON
    settings.user_agent.version = CLIENT_VERSION
    return spb.TelemetryCommand(settings=settings)


@attrs.frozen
class Backoff:
    """The retry policy the proxy hands a consumer in its settings (Settings.backoff_policy)."""

    max_attempts: int
    customized_ms: tuple[int, ...] = ()
    exponential_ms: tuple[int, int, float] | None = None  # initial, max, multiplier
    fifo: bool = False


def decode_settings(command: spb.TelemetryCommand) -> Backoff:
    settings, policy = command.settings, command.settings.backoff_policy
    exponential = None
    if policy.HasField("exponential_backoff"):
        e = policy.exponential_backoff
        exponential = (_millis(e.initial), _millis(e.max), e.multiplier)
    customized = tuple(_millis(d) for d in policy.customized_backoff.next)
    return Backoff(policy.max_attempts, customized, exponential, settings.subscription.fifo)


def encode_receive(group: str, topic: str, batch: int, invisible_ms: int, poll_ms: int, exp: str = "*",
                   broker_name: str = "", attempt_id: str | None = None,
                   auto_renew: bool = False) -> spb.ReceiveMessageRequest:
    request = spb.ReceiveMessageRequest(batch_size=batch, auto_renew=auto_renew)
    request.group.name = group
    request.message_queue.topic.name = topic
    request.message_queue.id = -1
    request.message_queue.broker.name = broker_name
    request.filter_expression.type = pb.FilterType.TAG
    request.filter_expression.expression = exp
    request.invisible_duration.FromMilliseconds(invisible_ms)
    request.long_polling_timeout.FromMilliseconds(poll_ms)
    if attempt_id:
        request.attempt_id = attempt_id
    return request


@attrs.frozen
class Received:
    """One message of a ReceiveMessage stream."""

    message_id: str
    body: bytes
    tag: str
    receipt_handle: str
    delivery_attempt: int
    queue_id: int
    queue_offset: int
    properties: dict[str, str] = attrs.field(factory=dict)


def decode_receive(responses) -> tuple[int, tuple[Received, ...]]:
    """(status code, messages) of a ReceiveMessage response stream."""
    code, messages = CODE_OK, []
    for response in responses:
        kind = response.WhichOneof("content")
        if kind == "status":
            code = response.status.code
        elif kind == "message":
            m, s = response.message, response.message.system_properties
            messages.append(Received(s.message_id, m.body, s.tag, s.receipt_handle, s.delivery_attempt, s.queue_id,
                                     s.queue_offset, dict(m.user_properties)))
    return code, tuple(messages)


def encode_ack(group: str, topic: str, message_id: str, handle: str) -> spb.AckMessageRequest:
    request = spb.AckMessageRequest()
    request.group.name = group
    request.topic.name = topic
    request.entries.add(message_id=message_id, receipt_handle=handle)
    return request


def decode_ack(response: spb.AckMessageResponse) -> int:
    """The entry's own status where the proxy gave one (a batch answers MULTIPLE_RESULTS), else the call's."""
    if response.entries:
        return response.entries[0].status.code
    return response.status.code


def encode_change(group: str, topic: str, message_id: str, handle: str,
                  invisible_ms: int) -> spb.ChangeInvisibleDurationRequest:
    request = spb.ChangeInvisibleDurationRequest(message_id=message_id, receipt_handle=handle)
    request.group.name = group
    request.topic.name = topic
    request.invisible_duration.FromMilliseconds(invisible_ms)
    return request


def encode_forward(group: str, topic: str, message_id: str, handle: str, attempt: int,
                   max_attempts: int) -> spb.ForwardMessageToDeadLetterQueueRequest:
    request = spb.ForwardMessageToDeadLetterQueueRequest(message_id=message_id, receipt_handle=handle,
                                                         delivery_attempt=attempt, max_delivery_attempts=max_attempts)
    request.group.name = group
    request.topic.name = topic
    return request


# --- The proxy's side: requests read, answers built (the model-backed server's MessagingService) -----------------
# GrpcConverter.buildUserAttributes leaves out MessageConst.STRING_HASH_SET; these are the ones a message here has.
SYSTEM_PROPERTIES = frozenset({"UNIQ_KEY", "TAGS", "KEYS", "WAIT", "DELAY", "POP_CK", "1ST_POP_TIME", "REAL_TOPIC",
                               "REAL_QID", "RETRY_TOPIC", "ORIGIN_MESSAGE_ID", "MAX_OFFSET", "MIN_OFFSET",
                               "CLUSTER", "TRACE_ON", "MSG_REGION", "CONSUME_START_TIME", "__SHARDINGKEY"})


def get_client_id(metadata) -> str:
    """The x-mq-client-id of a call's invocation metadata ("" when absent)."""
    return next((value for key, value in metadata if key == "x-mq-client-id"), "")


def encode_status(code: int, message: str = "") -> pb.Status:
    return pb.Status(code=code, message=message or pb.Code.Name(code))


def decode_client_settings(command: spb.TelemetryCommand) -> tuple[str, str | None]:
    """(the client type's name, its consumer group or None) of a telemetry stream's Settings command."""
    settings = command.settings
    group = settings.subscription.group.name if settings.HasField("subscription") else None
    return pb.ClientType.Name(settings.client_type), group or None


def encode_settings(backoff: Backoff, client: pb.Settings | None = None, batch: int = 32,
                    long_polling_ms: int = 20_000) -> spb.TelemetryCommand:
    """The Settings the proxy answers a consumer's on its telemetry stream (GrpcClientSettingsManager
    .mergeSubscriptionData): the client's own settings with the proxy's receive batch size and longest long polling,
    maxAttempts, the group's retry policy as the backoff (customized delays, or exponential parameters) and FIFO
    (the inverse of decode_settings)."""
    settings = pb.Settings(client_type=pb.ClientType.SIMPLE_CONSUMER)
    if client is not None:
        settings.CopyFrom(client)
    policy = settings.backoff_policy
    policy.max_attempts = backoff.max_attempts
    if backoff.exponential_ms is not None:
        initial, longest, multiplier = backoff.exponential_ms
        policy.exponential_backoff.initial.FromMilliseconds(initial)
        policy.exponential_backoff.max.FromMilliseconds(longest)
        policy.exponential_backoff.multiplier = multiplier
    else:
        policy.ClearField("exponential_backoff")
        del policy.customized_backoff.next[:]
        for delay in backoff.customized_ms:
            policy.customized_backoff.next.add().FromMilliseconds(delay)
    settings.subscription.fifo = backoff.fifo
    settings.subscription.receive_batch_size = batch
    settings.subscription.long_polling_timeout.FromMilliseconds(long_polling_ms)
    return spb.TelemetryCommand(status=encode_status(CODE_OK), settings=settings)


def encode_settings_answer(settings: pb.Settings) -> spb.TelemetryCommand:
    return spb.TelemetryCommand(status=encode_status(CODE_OK), settings=settings)


@attrs.frozen
class Route:
    """What a route or an assignment names: the broker (its name and the proxy's own address, as the local-mode
    proxy answers), the topic's queue count and permission, and whether the topic is FIFO."""

    topic: str
    broker_name: str
    host: str
    port: int
    queue_count: int
    permission: str = "READ_WRITE"  # apache.rocketmq.v2.Permission's name
    fifo: bool = False


def _message_queue(route: Route, queue_id: int) -> pb.MessageQueue:
    queue = pb.MessageQueue(id=queue_id, permission=pb.Permission.Value(route.permission))
    queue.topic.name = route.topic
    queue.broker.name, queue.broker.id = route.broker_name, 0
    queue.broker.endpoints.scheme = pb.AddressScheme.IPv4
    queue.broker.endpoints.addresses.add(host=route.host, port=route.port)
    return queue


def encode_route_answer(code: int, route: Route | None) -> spb.QueryRouteResponse:
    """QueryRoute's answer (RouteActivity.queryRoute): every queue of the topic, accepting its message type."""
    answer = spb.QueryRouteResponse(status=encode_status(code))
    for queue_id in range(route.queue_count if route is not None and code == CODE_OK else 0):
        queue = _message_queue(route, queue_id)
        queue.accept_message_types.append(pb.MessageType.FIFO if route.fifo else pb.MessageType.NORMAL)
        answer.message_queues.append(queue)
    return answer


def encode_assignment_answer(code: int, route: Route | None, queue_ids: tuple[int, ...] = ()) -> \
        spb.QueryAssignmentResponse:
    """QueryAssignment's answer (RouteActivity.queryAssignment): one assignment per queue id of the topic's
    route."""
    answer = spb.QueryAssignmentResponse(status=encode_status(code))
    for queue_id in queue_ids if route is not None else ():
        answer.assignments.add().message_queue.CopyFrom(_message_queue(route, queue_id))
    return answer


def encode_heartbeat_answer(code: int) -> spb.HeartbeatResponse:
    return spb.HeartbeatResponse(status=encode_status(code))


def encode_termination_answer(code: int) -> spb.NotifyClientTerminationResponse:
    return spb.NotifyClientTerminationResponse(status=encode_status(code))


@attrs.frozen
class Sent:
    """One message of a SendMessage request, with the properties the proxy stores it with
    (SendMessageActivity.buildMessage): UNIQ_KEY, TAGS, KEYS, __SHARDINGKEY (its message group) and the user's."""

    topic: str
    body: bytes
    message_group: str | None
    properties: dict[str, str]


def decode_send(request: spb.SendMessageRequest) -> tuple[Sent, ...]:
    sent = []
    for message in request.messages:
        system = message.system_properties
        properties = {**dict(message.user_properties), "UNIQ_KEY": system.message_id, "WAIT": "true"}
        if system.tag:
            properties["TAGS"] = system.tag
        if system.keys:
            properties["KEYS"] = " ".join(system.keys)
        if system.message_group:
            properties["__SHARDINGKEY"] = system.message_group
        sent.append(Sent(message.topic.name, message.body, system.message_group or None, properties))
    return tuple(sent)


def encode_send_answer(results: tuple[tuple[int, str, int], ...]) -> spb.SendMessageResponse:
    """SendMessage's answer: one entry per message (code, message id, queue offset); the call's status is the
    first entry's (MULTIPLE_RESULTS where they differ)."""
    codes = {code for code, _id, _offset in results}
    status = next(iter(codes)) if len(codes) == 1 else pb.Code.MULTIPLE_RESULTS
    answer = spb.SendMessageResponse(status=encode_status(status))
    for code, message_id, offset in results:
        answer.entries.add(status=encode_status(code), message_id=message_id, offset=max(offset, 0))
    return answer


def encode_delivery_timestamp(now_ms: int) -> spb.ReceiveMessageResponse:
    """The last response of every ReceiveMessage stream (ReceiveMessageResponseStreamWriter.onComplete): the
    proxy's wall clock, which the clients read as the transport delivery time."""
    answer = spb.ReceiveMessageResponse()
    answer.delivery_timestamp.FromMilliseconds(now_ms)
    return answer


def encode_received_status(code: int) -> spb.ReceiveMessageResponse:
    return spb.ReceiveMessageResponse(status=encode_status(code))


def encode_received_message(topic: str, message: Received, store_timestamp_ms: int = 0,
                             born_timestamp_ms: int = 0) -> spb.ReceiveMessageResponse:
    """One message of a ReceiveMessage stream (the inverse of decode_receive's), as GrpcConverter.buildMessage
    writes it: the body's MD5 digest (upper-case hex, which the clients check), FIFO with its message group where
    the message has a sharding key."""
    out = pb.Message(body=message.body)
    out.topic.name = topic
    out.user_properties.update({k: v for k, v in message.properties.items() if k not in SYSTEM_PROPERTIES})
    system = out.system_properties
    system.message_id, system.receipt_handle = message.message_id, message.receipt_handle
    if message.tag:
        system.tag = message.tag
    system.delivery_attempt, system.queue_id, system.queue_offset = (message.delivery_attempt, message.queue_id,
                                                                    message.queue_offset)
    system.body_encoding = pb.Encoding.IDENTITY
    system.body_digest.type = pb.DigestType.MD5
    system.body_digest.checksum = hashlib.md5(message.body).hexdigest().upper()  # noqa: S324 (the wire's digest)
    group = message.properties.get("__SHARDINGKEY")
    system.message_type = pb.MessageType.FIFO if group else pb.MessageType.NORMAL
    if group:
        system.message_group = group
    system.store_timestamp.FromMilliseconds(store_timestamp_ms)
    system.born_timestamp.FromMilliseconds(born_timestamp_ms)
    return spb.ReceiveMessageResponse(message=out)


def encode_ack_answer(code: int, message_id: str, handle: str) -> spb.AckMessageResponse:
    entry = spb.AckMessageResultEntry(message_id=message_id, receipt_handle=handle, status=encode_status(code))
    return spb.AckMessageResponse(status=encode_status(code), entries=[entry])


def encode_change_answer(code: int, handle: str) -> spb.ChangeInvisibleDurationResponse:
    return spb.ChangeInvisibleDurationResponse(status=encode_status(code), receipt_handle=handle)


def encode_forward_answer(code: int) -> spb.ForwardMessageToDeadLetterQueueResponse:
    return spb.ForwardMessageToDeadLetterQueueResponse(status=encode_status(code))


def get_millis(duration) -> int:
    """A request's Duration field in milliseconds."""
    return _millis(duration)
