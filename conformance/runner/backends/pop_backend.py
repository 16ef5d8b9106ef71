"""The requests of the POP probes (differential/test_pop_*.py), behind one small interface so that the same request
sequence runs against any 5.x backend: :class:`PopBackend`. :class:`WirePopBackend` speaks to a 5.x broker and
proxy over the wire — remoting to the broker for send, pop, ack, changeInvisibleTime, offsets, topic reads and
settings, gRPC to the proxy for receive, ack, changeInvisibleDuration and forward-to-DLQ — and so serves both
backends with the same clients: :class:`RealPopBackend` is RocketMQ 5.3.3, :class:`ModelPopBackend` the model-backed
server with a 5.3.3 profile (conformance/runner/server/: POP handlers and a gRPC MessagingService over the model's
broker and proxy), opened by :func:`open_model_pop_backend` with the real session's broker and proxy settings.

Every answer is a plain value (:class:`Popped`, :class:`PopAnswer`, codes as ints), never a wire object, so that two
backends' answers compare with ``==``.
"""

from __future__ import annotations

import contextlib
import json
from typing import Protocol

import attrs

from conformance.codec import pop
from conformance.codec.codes import (
    ACK_MESSAGE,
    CHANGE_MESSAGE_INVISIBLETIME,
    GET_ALL_TOPIC_CONFIG,
    POP_MESSAGE,
    UPDATE_AND_CREATE_SUBSCRIPTIONGROUP,
    UPDATE_AND_CREATE_TOPIC,
    ResponseCode,
)
from conformance.codec.headers import decode_json_body
from conformance.codec.message import StoredMessage, decode_messages
from conformance.codec.proxy import Backoff, Received
from conformance.runner.backends import admin
from conformance.runner.backends.broker_client import BrokerClient
from conformance.runner.backends.broker_read import read_committed, read_max_offset
from conformance.runner.backends.proxy_client import ProxyClient
from conformance.runner.backends.rocketmq5 import PROXY_CONF
from conformance.runner.server.runner import run_server
from conformance.runner.settings import BrokerSettings

# MessageStoreConfig.messageDelayLevel's default, which the 5.3.3 backend keeps.
DEFAULT_DELAY_LEVEL = "1s 5s 10s 30s 1m 2m 3m 4m 5m 6m 7m 8m 9m 10m 20m 30m 1h 2h"

READER_GROUP = "rmqspec-reader"  # the group the probes read whole topics with (pull, never committed)


@attrs.frozen
class Popped:
    """One message as a POP (remoting) or a ReceiveMessage (gRPC) answered it."""

    key: str  # UNIQ_KEY: the message id a producer gave it, the same in every copy
    body: bytes
    tag: str | None
    topic: str  # as the answer names it: the original topic, also for a copy popped from a retry topic
    queue_id: int
    queue_offset: int
    reconsume_times: int  # gRPC: delivery_attempt - 1
    handle: str
    properties: dict[str, str] = attrs.field(factory=dict, eq=False)


@attrs.frozen
class PopAnswer:
    code: int
    messages: tuple[Popped, ...] = ()
    pop_time: int = 0
    revive_qid: int = 0
    order_counts: dict[str, int] = attrs.field(factory=dict)


class PopBackend(Protocol):
    """What a 5.x backend answers the probes. Times are milliseconds; codes are RocketMQ's (remoting ResponseCode,
    gRPC apache.rocketmq.v2.Code)."""

    name: str
    broker_name: str

    def create_topic(self, topic: str, queues: int = 1, fifo: bool = False) -> None: ...
    def set_group(self, group: str, retry_max_times: int = 16, policy: dict | None = None,
                  fifo: bool = False) -> None: ...
    def set_broker_config(self, **keys: object) -> None: ...
    def get_broker_config(self) -> dict[str, str]: ...
    def send(self, topic: str, queue_id: int, body: bytes, key: str, tag: str | None = None,
             delay_level: int = 0, message_group: str | None = None) -> int: ...
    def send_back(self, group: str, message: StoredMessage, delay_level: int) -> int: ...
    def get_topic_config(self, topic: str) -> dict | None: ...
    def pop(self, group: str, topic: str, invisible_ms: int, queue_id: int = -1, max_nums: int = 32,
            poll_ms: int = 0, exp: str = "*", order: bool = False, attempt_id: str | None = None) -> PopAnswer: ...
    def ack(self, group: str, topic: str, handle: str) -> int: ...
    def change_invisible(self, group: str, topic: str, handle: str, invisible_ms: int) -> tuple[int, str | None]: ...
    def committed_offset(self, group: str, topic: str, queue_id: int) -> int: ...
    def max_offset(self, topic: str, queue_id: int) -> int: ...
    def read_topic(self, topic: str, queue_id: int = 0) -> tuple[StoredMessage, ...]: ...
    def open_consumer(self, group: str, topic: str, exp: str = "*") -> Backoff: ...
    def receive(self, group: str, topic: str, invisible_ms: int, batch: int = 16, poll_ms: int = 0,
                exp: str = "*", attempt_id: str | None = None) -> PopAnswer: ...
    def grpc_ack(self, group: str, topic: str, message: Popped) -> int: ...
    def grpc_change_invisible(self, group: str, topic: str, message: Popped,
                              invisible_ms: int) -> tuple[int, str]: ...
    def forward_to_dlq(self, group: str, topic: str, message: Popped, max_attempts: int) -> int: ...


def to_popped(message: StoredMessage, handle: str) -> Popped:
    props = message.properties
    return Popped(props.get("UNIQ_KEY", message.msg_id), message.body, props.get("TAGS"), message.topic,
                  message.queue_id, message.queue_offset, message.reconsume_times, handle, dict(props))


def received_to_popped(topic: str, message: Received) -> Popped:
    return Popped(message.message_id, message.body, message.tag or None, topic, message.queue_id,
                  message.queue_offset, message.delivery_attempt - 1, message.receipt_handle, message.properties)


class WirePopBackend:
    """A 5.x backend over the wire: a remoting connection to the broker and one gRPC consumer per (group, topic,
    expression) of the proxy."""

    name = "rocketmq-5.3.3"
    broker_name = "broker-a"

    def __init__(self, broker_addr: str, proxy_addr: str, timeout: float = 10.0) -> None:
        self.client = BrokerClient(broker_addr, timeout)
        self.broker_addr, self.proxy_addr, self.timeout = broker_addr, proxy_addr, timeout
        self.consumers: dict[tuple[str, str, str], ProxyClient] = {}
        self.set_group(READER_GROUP)

    def close(self) -> None:
        for consumer in self.consumers.values():
            consumer.close()
        self.client.close()

    def reconnect(self) -> None:
        """New connections after the broker restarted under them: the remoting one, and no gRPC consumer yet."""
        with contextlib.suppress(OSError):
            self.close()
        self.consumers = {}
        self.client = BrokerClient(self.broker_addr, self.timeout)

    def create_topic(self, topic: str, queues: int = 1, fifo: bool = False) -> None:
        fields = {"topic": topic, "defaultTopic": "TBW102", "readQueueNums": queues, "writeQueueNums": queues,
                  "perm": admin.PERM_READ_WRITE, "topicFilterType": "SINGLE_TAG", "topicSysFlag": 0,
                  "order": "false", "attributes": "+message.type=FIFO" if fifo else None}
        admin.check(self.client.call(UPDATE_AND_CREATE_TOPIC, fields), f"create topic {topic}")

    def set_group(self, group: str, retry_max_times: int = 16, policy: dict | None = None,
                  fifo: bool = False) -> None:
        body = json.dumps(pop.encode_group_config(group, retry_max_times, fifo, policy)).encode()
        admin.check(self.client.call(UPDATE_AND_CREATE_SUBSCRIPTIONGROUP, body=body), f"create group {group}")

    def set_broker_config(self, **keys: object) -> None:
        admin.update_broker_config(self.client, **keys)

    def get_broker_config(self) -> dict[str, str]:
        return admin.get_broker_config(self.client)

    def send(self, topic: str, queue_id: int, body: bytes, key: str, tag: str | None = None,
             delay_level: int = 0, message_group: str | None = None) -> int:
        """A producer's send over remoting; a FIFO message carries its message group as the sharding key
        (`__SHARDINGKEY`), as the proxy stores a gRPC send's group."""
        properties = {"UNIQ_KEY": key, "WAIT": "true", **({"TAGS": tag} if tag else {}),
                      **({"DELAY": str(delay_level)} if delay_level else {}),
                      **({"__SHARDINGKEY": message_group} if message_group else {})}
        return self.client.send(topic, queue_id, body, properties).code

    def send_back(self, group: str, message: StoredMessage, delay_level: int) -> int:
        """A 4.x consumer's CONSUMER_SEND_MSG_BACK of a stored message (chapter 02)."""
        return self.client.send_back(group, message.commit_log_offset, delay_level, message.msg_id, message.topic,
                                     None).code

    def get_topic_config(self, topic: str) -> dict | None:
        """The topic's entry of GET_ALL_TOPIC_CONFIG (readQueueNums, writeQueueNums, perm, ...), None when absent."""
        response = self.client.call(GET_ALL_TOPIC_CONFIG)
        admin.check(response, "get all topic config")
        return (decode_json_body(response.body).get("topicConfigTable") or {}).get(topic)

    def pop(self, group: str, topic: str, invisible_ms: int, queue_id: int = -1, max_nums: int = 32,
            poll_ms: int = 0, exp: str = "*", order: bool = False, attempt_id: str | None = None) -> PopAnswer:
        fields = pop.encode_pop_request(group, topic, queue_id, max_nums, invisible_ms, poll_ms, exp, order,
                                        attempt_id)
        response = self.client.call(POP_MESSAGE, fields, timeout=self.timeout + poll_ms / 1000)
        if response.code != ResponseCode.SUCCESS:
            return PopAnswer(response.code)
        header = pop.decode_pop_header(response.ext_fields)
        messages = tuple(self._to_popped(header, m, order) for m in decode_messages(response.body))
        return PopAnswer(response.code, messages, header.pop_time, header.revive_qid, header.order_counts)

    def _to_popped(self, header: pop.PopHeader, message: StoredMessage, order: bool) -> Popped:
        """As the Java client reads it: the handle, and for an orderly pop the offset's count as reconsumeTimes."""
        handle = pop.get_message_handle(header, self.broker_name, message.topic, message.queue_id,
                                        message.queue_offset, message.properties.get("POP_CK"))
        popped = to_popped(message, handle)
        count = pop.get_order_count(header, message.topic, message.queue_id, message.queue_offset) if order else 0
        return attrs.evolve(popped, reconsume_times=count) if count > 0 else popped

    def ack(self, group: str, topic: str, handle: str) -> int:
        return self.client.call(ACK_MESSAGE, pop.encode_ack_request(group, topic, handle)).code

    def change_invisible(self, group: str, topic: str, handle: str, invisible_ms: int) -> tuple[int, str | None]:
        fields = pop.encode_change_request(group, topic, handle, invisible_ms)
        response = self.client.call(CHANGE_MESSAGE_INVISIBLETIME, fields)
        if response.code != ResponseCode.SUCCESS or "popTime" not in response.ext_fields:
            return response.code, None
        return response.code, pop.get_changed_handle(fields, response.ext_fields, self.broker_name)

    def committed_offset(self, group: str, topic: str, queue_id: int) -> int:
        return read_committed(self.client, group, topic, queue_id)

    def max_offset(self, topic: str, queue_id: int) -> int:
        return read_max_offset(self.client, topic, queue_id)

    def read_topic(self, topic: str, queue_id: int = 0) -> tuple[StoredMessage, ...]:
        """Every message of one queue, pulled by READER_GROUP from offset 0 (nothing committed)."""
        messages: list[StoredMessage] = []
        while True:
            response = self.client.pull(READER_GROUP, topic, queue_id, len(messages))
            batch = decode_messages(response.body) if response.code == ResponseCode.SUCCESS else []
            if not batch:
                return tuple(messages)
            messages.extend(batch)

    def consumer(self, group: str, topic: str, exp: str = "*") -> ProxyClient:
        key = (group, topic, exp)
        if key not in self.consumers:
            self.open_consumer(group, topic, exp)
        return self.consumers[key]

    def open_consumer(self, group: str, topic: str, exp: str = "*") -> Backoff:
        """A new gRPC consumer of `group` for `topic` (replacing an earlier one); the settings the proxy gave it."""
        old = self.consumers.pop((group, topic, exp), None)
        if old is not None:
            old.close()
        consumer = ProxyClient(self.proxy_addr, self.timeout)
        self.consumers[(group, topic, exp)] = consumer
        return consumer.open_consumer(group, topic, exp)

    def receive(self, group: str, topic: str, invisible_ms: int, batch: int = 16, poll_ms: int = 0,
                exp: str = "*", attempt_id: str | None = None) -> PopAnswer:
        code, messages = self.consumer(group, topic, exp).receive(group, topic, batch, invisible_ms, poll_ms, exp,
                                                                  attempt_id)
        return PopAnswer(code, tuple(received_to_popped(topic, m) for m in messages))

    def grpc_ack(self, group: str, topic: str, message: Popped) -> int:
        return self.consumer(group, topic).ack(group, topic, message.key, message.handle)

    def grpc_change_invisible(self, group: str, topic: str, message: Popped, invisible_ms: int) -> tuple[int, str]:
        return self.consumer(group, topic).change_invisible(group, topic, message.key, message.handle, invisible_ms)

    def forward_to_dlq(self, group: str, topic: str, message: Popped, max_attempts: int) -> int:
        return self.consumer(group, topic).forward_to_dlq(group, topic, message.key, message.handle,
                                                          message.reconsume_times + 1, max_attempts)


class RealPopBackend(WirePopBackend):
    """RocketMQ 5.3.3's broker and proxy (conformance/runner/backends/rocketmq5.py)."""

    name = "rocketmq-5.3.3"


class ModelPopBackend(WirePopBackend):
    """The model-backed server with the 5.3.3 profile: the same requests, every answer the model's."""

    name = "model"


def get_model_pop_settings(proxy_conf: dict[str, str] | None = None) -> BrokerSettings:
    """The model-backed 5.x server's settings: the real session's (rocketmq5.BROKER_CONF, PROXY_CONF and
    `proxy_conf` over it) where the model has the knob — a group exists only once created, the proxy's shortest
    receive invisible time, shortest and longest long polling — and RocketMQ's own delay table, which the real 5.3.3
    broker keeps, and its defaultMessageRequestMode POP (the 5.3.3 build's broker.conf)."""
    conf = {**PROXY_CONF, **(proxy_conf or {})}
    return BrokerSettings(message_delay_level=DEFAULT_DELAY_LEVEL, profile="5.3.3", message_request_mode="POP",
                          proxy_min_invisible_ms=int(conf["minInvisibleTimeMillsForRecv"]),
                          proxy_min_long_polling_ms=int(conf["grpcClientConsumerMinLongPollingTimeoutMillis"]),
                          proxy_max_long_polling_ms=int(conf.get("grpcClientConsumerMaxLongPollingTimeoutMillis",
                                                                 20_000)))


@contextlib.contextmanager
def open_model_pop_backend(timeout: float = 10.0):
    """`with open_model_pop_backend() as backend:` a started model-backed 5.x server and its ModelPopBackend, both
    always stopped."""
    with run_server(get_model_pop_settings()) as runner:
        backend = ModelPopBackend(runner.server.broker_addr, runner.server.proxy_addr, timeout)
        try:
            yield backend
        finally:
            backend.close()
