"""A small blocking gRPC client of RocketMQ 5.x's proxy (MessagingService) over conformance/codec/proxy.py: one
consumer identity (client id) with its telemetry stream open, and one call per request, each with a deadline.

The proxy keeps a consumer's settings (group, subscription) per client id from the Telemetry stream's Settings
command and answers it with the group's merged settings (retry policy, maxAttempts, FIFO): :meth:`open_consumer`
sends them and returns the answer. ReceiveMessage reads those settings, so it must come after it.
"""

from __future__ import annotations

import itertools
import queue
import threading
import uuid

import grpc
from rocketmq.grpc_protocol import service_pb2_grpc

from conformance.codec import proxy as codec

SETTINGS_TIMEOUT_S = 10.0


class ProxyError(RuntimeError):
    """The proxy did not answer as a consumer needs (no settings on the telemetry stream)."""


class ProxyClient:
    """A consumer's connection to the proxy; `close` ends its telemetry stream and the channel."""

    def __init__(self, endpoint: str, timeout: float = 10.0) -> None:
        self.channel = grpc.insecure_channel(endpoint)
        self.stub = service_pb2_grpc.MessagingServiceStub(self.channel)
        self.client_id = f"rmqspec-{uuid.uuid4().hex[:12]}"
        self.timeout = timeout
        self._requests: queue.Queue = queue.Queue()
        self._telemetry = None
        self._ids = itertools.count(1)

    def metadata(self) -> tuple[tuple[str, str], ...]:
        return codec.get_metadata(self.client_id, f"{self.client_id}-{next(self._ids)}")

    def open_consumer(self, group: str, topic: str, exp: str = "*") -> codec.Backoff:
        """Opens the telemetry stream with this consumer's settings; returns the settings the proxy answers."""
        self._requests.put(codec.encode_consumer_settings(group, topic, exp))
        self._telemetry = self.stub.Telemetry(iter(self._requests.get, None), metadata=self.metadata())
        answers: queue.Queue = queue.Queue()
        threading.Thread(target=self._read_telemetry, args=(answers,), daemon=True).start()
        try:
            first = answers.get(timeout=SETTINGS_TIMEOUT_S)
        except queue.Empty:
            raise ProxyError(f"no settings on the telemetry stream within {SETTINGS_TIMEOUT_S} s") from None
        if isinstance(first, Exception):
            raise ProxyError(f"telemetry stream failed: {first}")
        return codec.decode_settings(first)

    def _read_telemetry(self, answers: queue.Queue) -> None:
        try:
            for command in self._telemetry:
                if command.WhichOneof("command") == "settings":
                    answers.put(command)
        except grpc.RpcError as error:
            answers.put(error)

    def receive(self, group: str, topic: str, batch: int, invisible_ms: int, poll_ms: int, exp: str = "*",
                attempt_id: str | None = None, auto_renew: bool = False) -> tuple[int, tuple[codec.Received, ...]]:
        """(status code, the messages); `auto_renew`: a push consumer's receive, whose messages the proxy renews."""
        request = codec.encode_receive(group, topic, batch, invisible_ms, poll_ms, exp, attempt_id=attempt_id,
                                       auto_renew=auto_renew)
        stream = self.stub.ReceiveMessage(request, timeout=self.timeout + poll_ms / 1000, metadata=self.metadata())
        return codec.decode_receive(stream)

    def ack(self, group: str, topic: str, message_id: str, handle: str) -> int:
        response = self.stub.AckMessage(codec.encode_ack(group, topic, message_id, handle), timeout=self.timeout,
                                        metadata=self.metadata())
        return codec.decode_ack(response)

    def change_invisible(self, group: str, topic: str, message_id: str, handle: str,
                         invisible_ms: int) -> tuple[int, str]:
        """(status code, the new receipt handle)."""
        request = codec.encode_change(group, topic, message_id, handle, invisible_ms)
        response = self.stub.ChangeInvisibleDuration(request, timeout=self.timeout, metadata=self.metadata())
        return response.status.code, response.receipt_handle

    def forward_to_dlq(self, group: str, topic: str, message_id: str, handle: str, attempt: int,
                       max_attempts: int) -> int:
        request = codec.encode_forward(group, topic, message_id, handle, attempt, max_attempts)
        response = self.stub.ForwardMessageToDeadLetterQueue(request, timeout=self.timeout, metadata=self.metadata())
        return response.status.code

    def close(self) -> None:
        self._requests.put(None)
        if self._telemetry is not None:
            self._telemetry.cancel()
        self.channel.close()

    def __enter__(self) -> ProxyClient:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()
