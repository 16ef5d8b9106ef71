"""The model-backed 5.x server answering what the 5.x clients need beyond POP: the proxy's QueryRoute, Heartbeat,
Telemetry settings, QueryAssignment, SendMessage (a message group for FIFO), NotifyClientTermination and the
settings a receive needs, the broker's QUERY_ASSIGNMENT for RocketMQ 5.3.3's remoting POP consumer, and a restart of
the broker with its proxy.

Expected values are RocketMQ 5.3.3's (RouteActivity, ClientActivity, GrpcClientSettingsManager, ReceiveMessageActivity,
GrpcConverter, QueryAssignmentProcessor at rocketmq-all-5.3.3; spec/13-clients.md, spec/16-proxy.md, spec/18), not
the server's: a heartbeat or receive of a client whose settings the proxy lacks is UNRECOGNIZED_CLIENT_TYPE or
INTERNAL_SERVER_ERROR, a normal group is assigned queue -1 and an orderly one every queue, a received FIFO message
carries its message group and the body's upper-case MD5.
"""

from __future__ import annotations

import hashlib
import json
import uuid

import grpc
import pytest
from rocketmq.grpc_protocol import definition_pb2 as pb
from rocketmq.grpc_protocol import service_pb2 as spb
from rocketmq.grpc_protocol import service_pb2_grpc

from conformance.codec import pop
from conformance.codec import proxy as codec
from conformance.codec.codes import HEART_BEAT
from conformance.codec.codes import RequestCode as Rq
from conformance.codec.codes import ResponseCode as Rs
from conformance.codec.headers import encode_json_body
from conformance.suite.pop_targets import open_model_pop_target

pytestmark = [pytest.mark.timeout(60), pytest.mark.conformance]
CUSTOMIZED = {"type": "CUSTOMIZED", "customizedRetryPolicy": {"next": [2000, 4000]}}


@pytest.fixture(scope="module")
def target():
    with open_model_pop_target({"grpcClientConsumerMaxLongPollingTimeoutMillis": "5000"}) as running:
        yield running


class Client:
    """One gRPC client identity of the proxy: every call carries its client id."""

    def __init__(self, endpoints: str) -> None:
        self.channel = grpc.insecure_channel(endpoints)
        self.stub = service_pb2_grpc.MessagingServiceStub(self.channel)
        self.client_id = f"test-{uuid.uuid4().hex[:8]}"

    def call(self, method: str, request):
        return getattr(self.stub, method)(request, timeout=10, metadata=codec.get_metadata(self.client_id, "1"))

    def settings(self, group: str, topic: str, client_type: int = pb.ClientType.PUSH_CONSUMER):
        command = codec.encode_consumer_settings(group, topic)
        command.settings.client_type = client_type
        stream = self.stub.Telemetry(iter([command]), timeout=10,
                                     metadata=codec.get_metadata(self.client_id, "t"))
        return next(iter(stream))

    def receive(self, group: str, topic: str, poll_ms: int = 0):
        stream = self.call("ReceiveMessage", codec.encode_receive(group, topic, 8, 1000, poll_ms))
        return codec.decode_receive(stream)

    def close(self) -> None:
        self.channel.close()


@pytest.fixture
def client(target):
    opened = Client(target.endpoints)
    yield opened
    opened.close()


def names(target, prefix: str, fifo: bool = False, queues: int = 1, **group) -> tuple[str, str]:
    topic, group_name = f"{prefix}T{uuid.uuid4().hex[:6]}", f"{prefix}G{uuid.uuid4().hex[:6]}"
    target.backend.create_topic(topic, queues, fifo)
    target.backend.set_group(group_name, fifo=fifo, **group)
    return topic, group_name


def test_a_route_names_every_queue_at_the_proxy_and_its_message_type(target, client):
    topic, _group = names(target, "route", fifo=True, queues=2)
    answer = client.call("QueryRoute", spb.QueryRouteRequest(topic=pb.Resource(name=topic)))
    host, port = target.endpoints.rsplit(":", 1)
    assert answer.status.code == pb.Code.OK and [q.id for q in answer.message_queues] == [0, 1]
    queue = answer.message_queues[0]
    assert (queue.broker.name, queue.broker.endpoints.addresses[0].host, queue.broker.endpoints.addresses[0].port) \
        == ("broker-a", host, int(port))
    assert queue.permission == pb.Permission.READ_WRITE and list(queue.accept_message_types) == [pb.MessageType.FIFO]
    missing = client.call("QueryRoute", spb.QueryRouteRequest(topic=pb.Resource(name="NoSuchTopic")))
    assert missing.status.code == pb.Code.TOPIC_NOT_FOUND and not missing.message_queues


def test_a_client_is_served_only_after_its_settings(target, client):
    topic, group = names(target, "set", retry_max_times=3, policy=CUSTOMIZED)
    heartbeat = spb.HeartbeatRequest(group=pb.Resource(name=group), client_type=pb.ClientType.PUSH_CONSUMER)
    assert client.call("Heartbeat", heartbeat).status.code == pb.Code.UNRECOGNIZED_CLIENT_TYPE
    assert client.receive(group, topic)[0] == pb.Code.INTERNAL_SERVER_ERROR  # the proxy's NPE on no Settings
    answer = client.settings(group, topic)
    assert codec.decode_settings(answer) == codec.Backoff(4, (2000, 4000), None, False)
    assert answer.settings.client_type == pb.ClientType.PUSH_CONSUMER  # the client's own settings, merged
    assert (answer.settings.subscription.receive_batch_size, codec.get_millis(
        answer.settings.subscription.long_polling_timeout)) == (32, 5000)
    assert client.call("Heartbeat", heartbeat).status.code == pb.Code.OK
    assert client.receive(group, topic)[0] == pb.Code.MESSAGE_NOT_FOUND
    termination = spb.NotifyClientTerminationRequest(group=pb.Resource(name=group))
    assert client.call("NotifyClientTermination", termination).status.code == pb.Code.OK
    assert client.call("NotifyClientTermination", termination).status.code == pb.Code.UNRECOGNIZED_CLIENT_TYPE
    assert client.receive(group, topic)[0] == pb.Code.INTERNAL_SERVER_ERROR


@pytest.mark.parametrize(("fifo", "queue_ids"), [(False, [-1]), (True, [0, 1])])
def test_an_assignment_is_every_queue_at_once_or_each_queue_of_an_orderly_group(target, client, fifo, queue_ids):
    topic, group = names(target, "asg", fifo=fifo, queues=2)
    request = spb.QueryAssignmentRequest(topic=pb.Resource(name=topic), group=pb.Resource(name=group))
    answer = client.call("QueryAssignment", request)
    assert answer.status.code == pb.Code.OK
    assert [a.message_queue.id for a in answer.assignments] == queue_ids


def send(client, topic: str, key: str, body: bytes, message_group: str | None = None):
    message = pb.Message(topic=pb.Resource(name=topic), body=body)
    message.system_properties.message_id, message.system_properties.tag = key, "TagA"
    if message_group:
        message.system_properties.message_group = message_group
    return client.call("SendMessage", spb.SendMessageRequest(messages=[message]))


def test_a_send_with_a_message_group_is_received_as_fifo_with_its_group_and_digest(target, client):
    topic, group = names(target, "snd", fifo=True, queues=4)
    answers = [send(client, topic, f"k{i}", f"body{i}".encode(), "order-1") for i in range(3)]
    assert [a.status.code for a in answers] == [pb.Code.OK] * 3 and [a.entries[0].message_id for a in answers] \
        == ["k0", "k1", "k2"]
    stored = [(m.queue_id, m.properties.get("__SHARDINGKEY")) for q in range(4) for m in target.backend.read_topic(
        topic, q)]
    assert len(stored) == 3 and len({queue for queue, _ in stored}) == 1 and {g for _, g in stored} == {"order-1"}
    client.settings(group, topic)
    stream = client.call("ReceiveMessage", codec.encode_receive(group, topic, 1, 1000, 0))
    message = next(r.message for r in stream if r.WhichOneof("content") == "message")
    system = message.system_properties
    assert (system.message_id, system.message_group, system.message_type) == ("k0", "order-1", pb.MessageType.FIFO)
    assert system.body_digest.type == pb.DigestType.MD5
    assert system.body_digest.checksum == hashlib.md5(b"body0").hexdigest().upper()  # noqa: S324


def test_the_remoting_pop_consumer_is_assigned_every_queue_by_pop_and_its_retry_topic_by_pull(target):
    topic, group = names(target, "rmt", queues=2)
    client = target.backend.client
    beat = {"clientID": "c1", "consumerDataSet": [{"groupName": group, "consumeType": "CONSUME_PASSIVELY",
                                                   "messageModel": "CLUSTERING", "subscriptionDataSet": []}]}
    assert client.call(HEART_BEAT, body=encode_json_body(beat)).code == Rs.SUCCESS

    def assign(name: str, client_id: str = "c1") -> list:
        body = {"topic": name, "consumerGroup": group, "clientId": client_id, "strategyName": "AVG",
                "messageModel": "CLUSTERING"}
        response = client.call(Rq.QUERY_ASSIGNMENT, body=encode_json_body(body))
        assert response.code == Rs.SUCCESS
        assignments = json.loads(response.body)["messageQueueAssignments"]
        return None if assignments is None else sorted((a["messageQueue"]["queueId"], a["mode"]) for a in assignments)

    assert assign(topic) == [(-1, "POP")] == assign(topic, "not-a-member")  # popShareQueueNum -1: every queue
    retry = pop.RETRY_PREFIX + group  # the group's 4.x retry topic: pulled, allocated over the group's clients
    assert assign(retry) is None  # no such topic yet
    target.backend.create_topic(retry, 2)
    assert assign(retry) == [(0, "PULL"), (1, "PULL")] and assign(retry, "not-a-member") == []


def test_a_restart_keeps_the_store_and_forgets_every_clients_settings(target):
    topic, group = names(target, "rst")
    client = Client(target.endpoints)
    try:
        client.settings(group, topic)
        assert send(client, topic, "k0", b"x").status.code == pb.Code.OK
        target.restart()
        assert client.receive(group, topic)[0] == pb.Code.INTERNAL_SERVER_ERROR
        client.settings(group, topic)
        code, messages = client.receive(group, topic)
        assert code == pb.Code.OK and [m.message_id for m in messages] == ["k0"]
    finally:
        client.close()


def test_a_request_the_server_cannot_answer_is_a_finding_the_suites_fail_on(target):
    """pop_fixtures.server_findings fails a client run on any of these."""
    before = len(target.get_findings())
    assert target.backend.client.call(Rq.GET_TOPIC_CONFIG, {"topic": "T"}).code == Rs.REQUEST_CODE_NOT_SUPPORTED
    assert [f["kind"] for f in target.get_findings()[before:]] == ["unsupported-request"]
