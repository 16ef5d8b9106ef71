"""The model-backed server answering a scripted request sequence sent with the harness's own codec as the client.

Expected values come from RocketMQ 4.9.8's behaviour (spec SB-04, SB-08, SB-12, SB-13, DT-*), not from the server:
a send-back at level 0 parks the copy at level 3 (1 s in the compressed table), the copy keeps the original id and
topic, and a message whose reconsumeTimes reached the maximum goes to %DLQ%<group>.
"""

import asyncio
import time
from concurrent.futures import ThreadPoolExecutor

import pytest

from conformance.codec.codes import RequestCode as Rq
from conformance.codec.codes import ResponseCode as Rs
from conformance.codec.headers import decode_json_body, encode_json_body, encode_send_header_v2
from conformance.codec.message import decode_messages, encode_properties
from conformance.runner.backends.remoting_client import RemotingClient
from conformance.runner.server.listener import FRESH_LOW, get_ephemeral_low, listen
from conformance.runner.server.runner import run_server
from conformance.runner.settings import BrokerSettings

pytestmark = [pytest.mark.timeout(60), pytest.mark.conformance]
GROUP, TOPIC = "G", "T"


@pytest.fixture
def runner():
    with run_server(BrokerSettings(retry_max_times=1)) as running:
        yield running


def send(client, topic, queue_id, body, **properties):
    fields = {"producerGroup": "P", "topic": topic, "defaultTopic": "TBW102", "defaultTopicQueueNums": 4,
              "queueId": queue_id, "sysFlag": 0, "bornTimestamp": 1, "flag": 0,
              "properties": encode_properties({"UNIQ_KEY": f"u-{body.decode()}", **properties}),
              "reconsumeTimes": 0, "unitMode": False, "batch": False}
    return client.call(Rq.SEND_MESSAGE_V2, encode_send_header_v2(fields), body)


def pull(client, topic, queue_id, offset, suspend_ms=0, subscription="*"):
    fields = {"consumerGroup": GROUP, "topic": topic, "queueId": queue_id, "queueOffset": offset, "maxMsgNums": 32,
              "sysFlag": 2 if suspend_ms else 0, "commitOffset": 0, "suspendTimeoutMillis": suspend_ms,
              "subscription": subscription, "subVersion": 1}
    return client.call(Rq.PULL_MESSAGE, fields, timeout=suspend_ms / 1000 + 10)


def send_back(client, message, timeout=None):
    return client.call(Rq.CONSUMER_SEND_MSG_BACK, {
        "group": GROUP, "offset": message.commit_log_offset, "delayLevel": 0, "originMsgId": message.msg_id,
        "originTopic": TOPIC, "unitMode": False, "maxReconsumeTimes": 1}, timeout=timeout)


def heartbeat(client):
    body = {"clientID": "c1", "consumerDataSet": [{"groupName": GROUP, "consumeType": "CONSUME_PASSIVELY",
                                                   "messageModel": "CLUSTERING", "subscriptionDataSet": []}]}
    return client.call(Rq.HEART_BEAT, body=encode_json_body(body))


def consumer_list(client):
    return client.call(Rq.GET_CONSUMER_LIST_BY_GROUP, {"consumerGroup": GROUP})


def test_a_consumer_is_unregistered_when_the_connection_it_heartbeated_on_closes(runner):
    """RocketMQ 4.9.8's ConsumerManager.doChannelCloseEvent: a killed client's socket closes and the broker drops
    it at once, so the group's other members rebalance its queues (not after a 120 s channel expiry)."""
    with RemotingClient(runner.server.broker_addr) as observer:
        with RemotingClient(runner.server.broker_addr) as member:
            assert heartbeat(member).code == Rs.SUCCESS
            listed = consumer_list(observer)
            assert (listed.code, decode_json_body(listed.body)) == (Rs.SUCCESS, {"consumerIdList": ["c1"]})
        deadline = time.monotonic() + 5
        while consumer_list(observer).code == Rs.SUCCESS and time.monotonic() < deadline:
            time.sleep(0.05)
        assert consumer_list(observer).code == Rs.SYSTEM_ERROR  # no consumer left in the group


def test_a_consumer_that_heartbeated_again_on_a_new_connection_outlives_its_old_one(runner):
    with RemotingClient(runner.server.broker_addr) as observer:
        with RemotingClient(runner.server.broker_addr) as old:
            assert heartbeat(old).code == Rs.SUCCESS
            with RemotingClient(runner.server.broker_addr) as new:
                assert heartbeat(new).code == Rs.SUCCESS
                old.close()
                time.sleep(0.3)
                assert decode_json_body(consumer_list(observer).body) == {"consumerIdList": ["c1"]}


def test_send_pull_send_back_retry_then_dlq(runner):
    with RemotingClient(runner.server.broker_addr) as broker:
        assert heartbeat(broker).code == Rs.SUCCESS
        sent = send(broker, TOPIC, 0, b"m1")
        assert sent.code == Rs.SUCCESS
        found = pull(broker, TOPIC, 0, 0)
        assert found.code == Rs.SUCCESS and found.header("nextBeginOffset") == "1"
        (original,) = decode_messages(found.body)
        assert (original.body, original.reconsume_times, original.msg_id) == (b"m1", 0, sent.header("msgId"))
        started = time.monotonic()
        assert send_back(broker, original).code == Rs.SUCCESS
        assert pull(broker, f"%RETRY%{GROUP}", 0, 0).code == Rs.PULL_NOT_FOUND
        retried = pull(broker, f"%RETRY%{GROUP}", 0, 0, suspend_ms=10_000)
        assert retried.code == Rs.SUCCESS and time.monotonic() - started >= 0.99
        (copy,) = decode_messages(retried.body)
        assert copy.reconsume_times == 1 and copy.body == b"m1"
        assert copy.properties["RETRY_TOPIC"] == TOPIC
        assert copy.properties["ORIGIN_MESSAGE_ID"] == original.msg_id
        assert send_back(broker, copy).code == Rs.SUCCESS
        dead = pull(broker, f"%DLQ%{GROUP}", 0, 0)
        assert dead.code == Rs.SUCCESS
        (dlq_copy,) = decode_messages(dead.body)
        assert (dlq_copy.topic, dlq_copy.reconsume_times) == (f"%DLQ%{GROUP}", 2)
        assert dlq_copy.properties["ORIGIN_MESSAGE_ID"] == original.msg_id


def test_suspended_pull_is_answered_when_a_message_is_stored(runner):
    runner.server.adapter.ensure_topic(TOPIC)  # a pull of a topic the broker lacks is TOPIC_NOT_EXIST (PL-04)
    with RemotingClient(runner.server.broker_addr) as consumer, RemotingClient(runner.server.broker_addr) as producer, \
            ThreadPoolExecutor(max_workers=1) as pool:
        waiting = pool.submit(pull, consumer, TOPIC, 1, 0, suspend_ms=20_000)  # its own time limit: 30 s
        time.sleep(0.2)
        assert not waiting.done()
        started = time.monotonic()
        assert send(producer, TOPIC, 1, b"late").code == Rs.SUCCESS
        answer = waiting.result(timeout=30)
        waited = time.monotonic() - started
    assert answer.code == Rs.SUCCESS and [m.body for m in decode_messages(answer.body)] == [b"late"]
    assert waited < 5  # far below the 20 s suspension: the store woke the pull


def test_unknown_code_oneway_and_missing_route(runner):
    with RemotingClient(runner.server.namesrv_addr) as client:
        unknown = client.call(9999)
        route = client.call(Rq.GET_ROUTEINFO_BY_TOPIC, {"topic": f"%RETRY%{GROUP}"})
        client.oneway(Rq.UPDATE_CONSUMER_OFFSET, {"consumerGroup": GROUP, "topic": TOPIC, "queueId": 0,
                                                  "commitOffset": 7})
        offset = client.call(Rq.QUERY_CONSUMER_OFFSET, {"consumerGroup": GROUP, "topic": TOPIC, "queueId": 0})
    assert unknown.code == Rs.REQUEST_CODE_NOT_SUPPORTED and unknown.is_response
    assert [f["code"] for f in runner.server.findings if f["kind"] == "unsupported-request"] == [9999]
    assert route.code == Rs.TOPIC_NOT_EXIST  # no heartbeat yet created the retry topic
    assert offset.header("offset") == "7"
    trace = runner.server.trace
    oneway = [e for e in trace if e.command.code == Rq.UPDATE_CONSUMER_OFFSET]
    assert [e.direction for e in oneway] == ["in"] and oneway[0].command.is_oneway
    # A response carries its own code, not the request's: an answer would be found by connection and opaque.
    request = oneway[0]
    answers = [e for e in trace if e.direction == "out" and e.peer == request.peer
               and e.command.opaque == request.command.opaque]
    assert answers == []  # received once, never answered


def test_fault_switches(runner):
    server = runner.server
    with RemotingClient(server.broker_addr) as broker:
        heartbeat(broker)
        send(broker, TOPIC, 2, b"f")
        (stored,) = decode_messages(pull(broker, TOPIC, 2, 0).body)
        server.faults.send_back_error = True
        error = send_back(broker, stored)
        server.faults.send_back_error, server.faults.send_back_silent = False, True
        with pytest.raises(TimeoutError):
            send_back(broker, stored, timeout=0.5)
        server.faults.send_back_silent, server.faults.pull_error = False, True
        pulled = pull(broker, TOPIC, 2, 0)
        server.faults.pull_error = False
        runner.call(server.set_broker_perm, 4)
        plain = send(broker, TOPIC, 0, b"g")
        route = decode_json_body(broker.call(Rq.GET_ROUTEINFO_BY_TOPIC, {"topic": TOPIC}).body)
    assert (error.code, pulled.code) == (Rs.SYSTEM_ERROR, Rs.SYSTEM_ERROR)
    # A read-only broker: the route says so (clients stop sending), yet a plain send that arrives is stored, as
    # RocketMQ 4.9.8's msgCheck does (RS-07; differential/test_broker_rules.py confirms it on the real broker).
    assert plain.code == Rs.SUCCESS and route["queueDatas"][0]["perm"] == 4
    trace = server.trace
    send_backs = {e.command.opaque for e in trace
                  if e.direction == "in" and e.command.code == Rq.CONSUMER_SEND_MSG_BACK}
    answers = [e.command.code for e in trace if e.direction == "out" and e.command.opaque in send_backs]
    assert len(send_backs) == 2 and answers == [Rs.SYSTEM_ERROR]  # the silent one was never answered


def test_the_broker_filters_a_pull_by_its_subscriptions_tag_hashes(runner):
    """[PL-04] The model's broker half filters by the subscription's tag hashes: TagB is skipped, and the next
    offset passes every scanned unit."""
    with RemotingClient(runner.server.broker_addr) as client:
        for body, tags in ((b"a1", "TagA"), (b"b1", "TagB"), (b"a2", "TagA")):
            assert send(client, TOPIC, 2, body, TAGS=tags).code == Rs.SUCCESS
        answer = pull(client, TOPIC, 2, 0, subscription="TagA || TagC")
    assert answer.code == Rs.SUCCESS
    assert [m.body for m in decode_messages(answer.body)] == [b"a1", b"a2"]
    assert answer.header("nextBeginOffset") == "3"


def test_a_fresh_endpoint_port_is_below_the_ephemeral_range():
    """A client reconnecting to a killed endpoint cannot take its port as a source port (a TCP self-connect) when
    the port lies below the kernel's ephemeral range, so the endpoint can always listen there again."""
    async def open_two():
        servers = [await listen(lambda r, w: None, 0) for _ in range(2)]
        ports = [s.sockets[0].getsockname()[1] for s in servers]
        for server in servers:
            server.close()
            await server.wait_closed()
        return ports

    ports = asyncio.run(open_two())
    assert len(set(ports)) == 2 and all(FRESH_LOW <= port < get_ephemeral_low() for port in ports), ports
