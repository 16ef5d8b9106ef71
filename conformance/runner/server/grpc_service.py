"""The model-backed server's proxy: RocketMQ 5.x's gRPC MessagingService (apache.rocketmq.v2, the stubs of
conformance/codec/proxy.py) on the server's own event loop (grpc.aio), answering what the 5.x gRPC clients send to
the local-mode proxy — QueryRoute, Heartbeat, Telemetry (their settings), QueryAssignment, SendMessage,
ReceiveMessage, AckMessage, ChangeInvisibleDuration, ForwardMessageToDeadLetterQueue and NotifyClientTermination —
through the POP adapter (pop_adapter.py: every decision is the model's proxy, model/proxy/). Any other call is
UNIMPLEMENTED. The proxy answers as the broker's own address for routes (a local-mode proxy names itself).

A receive that finds nothing is held, as ReceiveMessageActivity holds it: its long polling timeout raised to the
proxy's grpcClientConsumerMinLongPollingTimeoutMillis and capped at ...MaxLongPollingTimeoutMillis, ended early when
a message arrives in the topic (core.Server.arrival_waiter). A receive whose messages the proxy's filter all took
(acked or dead-lettered), or that the proxy refused (no settings from its client), is answered at once.
"""

from __future__ import annotations

import random

import grpc
from rocketmq.grpc_protocol import definition_pb2 as pb
from rocketmq.grpc_protocol import service_pb2_grpc

from conformance.codec import proxy as codec
from conformance.codec.codes import ResponseCode
from conformance.runner.server.listener import FRESH_LOW, FRESH_TRIES, get_ephemeral_low
from model.proxy.clients import compute_proxy_assignment

# The model's answer (its code name, or the broker's a proxy passes on) as the proxy's gRPC status code.
CODES = {"SUCCESS": pb.Code.OK, "OK": pb.Code.OK, "MESSAGE_NOT_FOUND": pb.Code.MESSAGE_NOT_FOUND,
         "ILLEGAL_INVISIBLE_TIME": pb.Code.ILLEGAL_INVISIBLE_TIME,
         "INVALID_RECEIPT_HANDLE": pb.Code.INVALID_RECEIPT_HANDLE, "TOPIC_NOT_EXIST": pb.Code.TOPIC_NOT_FOUND,
         "SUBSCRIPTION_GROUP_NOT_EXIST": pb.Code.CONSUMER_GROUP_NOT_FOUND, "NO_PERMISSION": pb.Code.FORBIDDEN,
         "UNRECOGNIZED_CLIENT_TYPE": pb.Code.UNRECOGNIZED_CLIENT_TYPE, "FORBIDDEN": pb.Code.FORBIDDEN,
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


def get_topic_route(server, topic: str) -> codec.Route | None:
    """The route the proxy answers for `topic` (None: no such topic): its queues on the one broker, at the
    proxy's own address."""
    config = None if "broker" in server.down else server.adapter.broker.topics.get(topic)
    if config is None:
        return None
    perm = server.adapter.broker.perm & config.perm
    permission = {6: "READ_WRITE", 4: "READ", 2: "WRITE"}.get(perm & 6, "NONE")
    host, port = server.proxy_addr.rsplit(":", 1)
    return codec.Route(topic, server.settings.broker_name, host, int(port), config.read_queue_nums, permission,
                       topic in server.pop.fifo_topics)


class MessagingService(service_pb2_grpc.MessagingServiceServicer):
    """The calls a 5.x client makes, each one step of the model on the server's loop."""

    def __init__(self, server) -> None:
        self.server = server

    async def QueryRoute(self, request, context):  # noqa: N802 (the generated servicer's names)
        route = get_topic_route(self.server, request.topic.name)
        return codec.encode_route_answer(pb.Code.OK if route else pb.Code.TOPIC_NOT_FOUND, route)

    async def Heartbeat(self, request, context):  # noqa: N802
        code = self.server.pop.heartbeat(codec.get_client_id(context.invocation_metadata()))
        return codec.encode_heartbeat_answer(get_grpc_code(code))

    async def QueryAssignment(self, request, context):  # noqa: N802
        route = get_topic_route(self.server, request.topic.name)
        if route is None:
            return codec.encode_assignment_answer(pb.Code.TOPIC_NOT_FOUND, None)
        code, queue_ids = compute_proxy_assignment(route.queue_count, route.permission in ("READ", "READ_WRITE"),
                                                   self.server.pop.get_settings(request.group.name).fifo)
        return codec.encode_assignment_answer(get_grpc_code(code), route, queue_ids)

    async def Telemetry(self, request_iterator, context):  # noqa: N802
        client_id = codec.get_client_id(context.invocation_metadata())
        async for command in request_iterator:
            if command.WhichOneof("command") == "settings":
                settings = self.server.pop.on_settings(client_id, *codec.decode_client_settings(command))
                if settings is None:  # a producer: its settings as it sent them
                    yield codec.encode_settings_answer(command.settings)
                else:
                    yield codec.encode_settings(get_backoff(settings), command.settings,
                                                long_polling_ms=self.server.settings.proxy_max_long_polling_ms)

    async def NotifyClientTermination(self, request, context):  # noqa: N802
        code = self.server.pop.terminate(codec.get_client_id(context.invocation_metadata()))
        return codec.encode_termination_answer(get_grpc_code(code))

    async def SendMessage(self, request, context):  # noqa: N802
        results = []
        for sent in codec.decode_send(request):
            queue_id = self.server.pop.get_send_queue(sent.topic, sent.message_group)
            code, stored = self.server.send(sent.topic, queue_id, sent.body, sent.properties)
            results.append((get_grpc_code(ResponseCode(code).name),
                            sent.properties["UNIQ_KEY"], stored.queue_offset if stored is not None else -1))
        return codec.encode_send_answer(tuple(results))

    async def ReceiveMessage(self, request, context):  # noqa: N802
        server, topic = self.server, request.message_queue.topic.name
        client_id = codec.get_client_id(context.invocation_metadata())
        poll = min(max(codec.get_millis(request.long_polling_timeout), server.settings.proxy_min_long_polling_ms),
                   server.settings.proxy_max_long_polling_ms)
        deadline = server.now() + poll
        while True:
            waiter = server.arrival_waiter(topic)
            answer, filtered = server.pop.receive(
                request.group.name, topic, request.batch_size, codec.get_millis(request.invisible_duration),
                request.filter_expression.expression, request.attempt_id or None, server.advance(), client_id,
                request.auto_renew)
            remaining = deadline - server.now()
            if answer.code != "MESSAGE_NOT_FOUND" or filtered or remaining <= 0:
                break
            await server.wait(waiter, remaining)
        server.notify_store_changed()  # the revive timer learns of the new checkpoints, the DLQ of its copies
        yield codec.encode_received_status(get_grpc_code(answer.code))
        for message, handle in answer.messages:
            yield codec.encode_received_message(topic, to_received(message, handle), message.store_timestamp,
                                                message.born_timestamp)
        yield codec.encode_delivery_timestamp(server.pop.epoch_ms + server.now())

    async def AckMessage(self, request, context):  # noqa: N802
        entry = request.entries[0]
        client_id = codec.get_client_id(context.invocation_metadata())
        code = self.server.pop.proxy_ack(request.group.name, request.topic.name, entry.receipt_handle,
                                         self.server.advance(), client_id, entry.message_id)
        return codec.encode_ack_answer(get_grpc_code(code), entry.message_id, entry.receipt_handle)

    async def ChangeInvisibleDuration(self, request, context):  # noqa: N802
        code, handle = self.server.pop.proxy_change(request.group.name, request.topic.name, request.receipt_handle,
                                                    codec.get_millis(request.invisible_duration),
                                                    self.server.advance(),
                                                    codec.get_client_id(context.invocation_metadata()),
                                                    request.message_id)
        self.server.notify_store_changed()
        return codec.encode_change_answer(get_grpc_code(code), handle)

    async def ForwardMessageToDeadLetterQueue(self, request, context):  # noqa: N802
        code = self.server.pop.forward_to_dlq(request.group.name, request.topic.name, request.receipt_handle,
                                              request.message_id, self.server.advance(),
                                              codec.get_client_id(context.invocation_metadata()))
        self.server.notify_store_changed()
        return codec.encode_forward_answer(get_grpc_code(code))


async def start_grpc(server, port: int = 0) -> tuple[grpc.aio.Server, int]:
    """A started gRPC server on 127.0.0.1 (`port`, 0: a fresh one) serving `server`'s MessagingService; (it, its
    port)."""
    low = get_ephemeral_low()
    draws = [random.randrange(FRESH_LOW, low) for _ in range(FRESH_TRIES)] if port == 0 and low > FRESH_LOW else []
    for candidate in [*draws, port]:  # a fresh port below the ephemeral range, as listener.listen_fresh draws
        service = grpc.aio.server(options=[("grpc.so_reuseport", 0)])  # a restart binds its port again, alone
        service_pb2_grpc.add_MessagingServiceServicer_to_server(MessagingService(server), service)
        try:
            bound = service.add_insecure_port(f"127.0.0.1:{candidate}")
        except RuntimeError:  # taken
            bound = 0
        if bound:
            await service.start()
            return service, bound
    raise OSError(f"the gRPC proxy could not listen on 127.0.0.1:{port}")


async def stop_grpc(service: grpc.aio.Server) -> None:
    await service.stop(grace=None)
