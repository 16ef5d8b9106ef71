"""RocketMQ 5.x's gRPC protocol (apache/rocketmq-apis ``apache.rocketmq.v2``) for a consumer of the proxy: requests
built from plain values, responses read back into plain values.

The message classes are the ones PyPI's rocketmq-python-client 5.1.2 generated from rocketmq-apis
(``rocketmq.grpc_protocol``, extra ``broker5`` of this project): pinned, nothing to generate at test time, and the
client the 5.3.3 build's README verified against this proxy. Fields the 5.3.3 proxy (rocketmq-apis 2.0.4) does not
know are simply not set.
"""

from __future__ import annotations

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
                   broker_name: str = "", attempt_id: str | None = None) -> spb.ReceiveMessageRequest:
    request = spb.ReceiveMessageRequest(batch_size=batch, auto_renew=False)
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
