"""The model-backed server's proxy: RocketMQ 5.x's gRPC MessagingService (apache.rocketmq.v2, the stubs of
conformance/codec/proxy.py) on the server's own event loop (grpc.aio), answering what a consumer of the local-mode
proxy sends — Telemetry (its settings), ReceiveMessage, AckMessage, ChangeInvisibleDuration and
ForwardMessageToDeadLetterQueue — through the POP adapter (pop_adapter.py: every decision is the model's proxy).
Any other call is UNIMPLEMENTED.

A receive that finds nothing is held, as ReceiveMessageActivity holds it: its long polling timeout raised to the
proxy's grpcClientConsumerMinLongPollingTimeoutMillis and capped at ...MaxLongPollingTimeoutMillis (20 s), ended
early when a message arrives in the topic (core.Server.arrival_waiter). A receive whose messages the proxy's filter
all took (acked or dead-lettered) is answered at once, MESSAGE_NOT_FOUND.
"""

from __future__ import annotations

import grpc
from rocketmq.grpc_protocol import definition_pb2 as pb
from rocketmq.grpc_protocol import service_pb2_grpc

from conformance.codec import proxy as codec

MAX_LONG_POLLING_MS = 20_000
# The model's answer (its code name, or the broker's a proxy passes on) as the proxy's gRPC status code.
CODES = {"SUCCESS": pb.Code.OK, "OK": pb.Code.OK, "MESSAGE_NOT_FOUND": pb.Code.MESSAGE_NOT_FOUND,
         "ILLEGAL_INVISIBLE_TIME": pb.Code.ILLEGAL_INVISIBLE_TIME,
         "INVALID_RECEIPT_HANDLE": pb.Code.INVALID_RECEIPT_HANDLE, "TOPIC_NOT_EXIST": pb.Code.TOPIC_NOT_FOUND,
         "SUBSCRIPTION_GROUP_NOT_EXIST": pb.Code.CONSUMER_GROUP_NOT_FOUND, "NO_PERMISSION": pb.Code.FORBIDDEN,
         "INVALID_PARAMETER": pb.Code.BAD_REQUEST}


def get_grpc_code(name: str) -> int:
    return CODES.get(name, pb.Code.INTERNAL_SERVER_ERROR)


def get_backoff(settings) -> codec.Backoff:
    """The model's ConsumerSettings as the wire's backoff policy."""
    backoff = settings.backoff
    if hasattr(backoff, "initial"):
        return codec.Backoff(settings.max_attempts, (), (backoff.initial, backoff.max, float(backoff.multiplier)),
                             settings.fifo)
    return codec.Backoff(settings.max_attempts, tuple(backoff.next), None, settings.fifo)


def to_received(message, handle: str) -> codec.Received:
    key = message.properties.get("UNIQ_KEY") or message.msg_id
    return codec.Received(key, message.body, message.properties.get("TAGS", ""), handle, message.reconsume_times + 1,
                          message.queue_id, message.queue_offset, dict(message.properties))


class MessagingService(service_pb2_grpc.MessagingServiceServicer):
    """The calls a consumer makes, each one step of the model on the server's loop."""

    def __init__(self, server) -> None:
        self.server = server

    async def Telemetry(self, request_iterator, context):  # noqa: N802 (the generated servicer's names)
        async for command in request_iterator:
            if command.WhichOneof("command") == "settings":
                group = command.settings.subscription.group.name
                yield codec.encode_settings(get_backoff(self.server.pop.get_settings(group)))

    async def ReceiveMessage(self, request, context):  # noqa: N802
        server, topic = self.server, request.message_queue.topic.name
        poll = min(max(codec.get_millis(request.long_polling_timeout), server.settings.proxy_min_long_polling_ms),
                   MAX_LONG_POLLING_MS)
        deadline = server.now() + poll
        while True:
            waiter = server.arrival_waiter(topic)
            answer, filtered = server.pop.receive(
                request.group.name, topic, request.batch_size, codec.get_millis(request.invisible_duration),
                request.filter_expression.expression, request.attempt_id or None, server.advance())
            remaining = deadline - server.now()
            if answer.code != "MESSAGE_NOT_FOUND" or filtered or remaining <= 0:
                break
            await server.wait(waiter, remaining)
        server.notify_store_changed()  # the revive timer learns of the new checkpoints, the DLQ of its copies
        yield codec.encode_received_status(get_grpc_code(answer.code))
        for message, handle in answer.messages:
            yield codec.encode_received_message(topic, to_received(message, handle), message.store_timestamp)

    async def AckMessage(self, request, context):  # noqa: N802
        entry = request.entries[0]
        code = self.server.pop.proxy_ack(request.group.name, request.topic.name, entry.receipt_handle,
                                         self.server.advance())
        return codec.encode_ack_answer(get_grpc_code(code), entry.message_id, entry.receipt_handle)

    async def ChangeInvisibleDuration(self, request, context):  # noqa: N802
        code, handle = self.server.pop.proxy_change(request.group.name, request.topic.name, request.receipt_handle,
                                                    codec.get_millis(request.invisible_duration),
                                                    self.server.advance())
        self.server.notify_store_changed()
        return codec.encode_change_answer(get_grpc_code(code), handle)

    async def ForwardMessageToDeadLetterQueue(self, request, context):  # noqa: N802
        code = self.server.pop.forward_to_dlq(request.group.name, request.topic.name, request.receipt_handle,
                                              request.message_id, self.server.advance())
        self.server.notify_store_changed()
        return codec.encode_forward_answer(get_grpc_code(code))


async def start_grpc(server) -> tuple[grpc.aio.Server, int]:
    """A started gRPC server on 127.0.0.1 (a fresh port) serving `server`'s MessagingService; (it, its port)."""
    service = grpc.aio.server()
    service_pb2_grpc.add_MessagingServiceServicer_to_server(MessagingService(server), service)
    port = service.add_insecure_port("127.0.0.1:0")
    await service.start()
    return service, port


async def stop_grpc(service: grpc.aio.Server) -> None:
    await service.stop(grace=None)
