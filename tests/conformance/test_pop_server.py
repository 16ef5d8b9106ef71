"""The model-backed server with the 5.3.3 profile answering POP requests over remoting and the proxy's gRPC calls,
through the same wire clients the real 5.3.3 backend is driven with (conformance/runner/backends/pop_backend.py).

Expected values are RocketMQ 5.3.3's (spec chapters 14-17, differential/FACTS-5.3.3.md), not the server's: a pop
moves the offset at once, a handle is ``startOffset popTime invisibleTime reviveQid mark broker queueId offset`` in
wall-clock milliseconds (the proxy adds the commit-log offset), an ack beyond the queue is NO_MESSAGE (208), a copy
comes back in %RETRY%{group}_{topic} at least 2 s after its invisible time, an orderly pop names revive queue 999.
"""

from __future__ import annotations

import threading
import time

import attrs
import pytest

from conformance.codec import pop
from conformance.codec.codes import RequestCode as Rq
from conformance.codec.codes import ResponseCode as Rs
from conformance.codec.proxy import CODE_OK, Backoff
from conformance.runner.backends.pop_backend import open_model_pop_backend
from conformance.runner.backends.remoting_client import RemotingClient
from conformance.runner.server.runner import run_server
from differential import pop_probe as p

pytestmark = [pytest.mark.timeout(60), pytest.mark.conformance]
INVALID_RECEIPT_HANDLE, ILLEGAL_INVISIBLE_TIME, MESSAGE_NOT_FOUND = 40013, 40011, 40401


@pytest.fixture(scope="module")
def backend():
    with open_model_pop_backend() as running:
        yield running


def set_up(backend, prefix: str, keys=("k0", "k1", "k2"), **group) -> p.Names:
    return p.prepare(backend, prefix, keys, **group)


def test_a_4x_server_has_no_pop_and_no_proxy():
    with run_server() as runner, RemotingClient(runner.server.broker_addr) as client:
        response = client.call(Rq.POP_MESSAGE, pop.encode_pop_request("G", "T", -1, 1, 1000, 0))
        assert response.code == Rs.REQUEST_CODE_NOT_SUPPORTED and runner.server.proxy_addr == ""


def test_pop_ack_and_change_over_remoting(backend):
    names = set_up(backend, "srv")
    answer = backend.pop(names.group, names.topic, p.LONG_MS, queue_id=0, max_nums=2)
    handles = [pop.decode_handle(m.handle) for m in answer.messages]
    assert [m.key for m in answer.messages] == ["k0", "k1"] and answer.code == Rs.SUCCESS
    assert abs(handles[0].pop_time - time.time() * 1000) < 5_000 and handles[0].invisible_time == p.LONG_MS
    assert [(h.ck_offset, h.offset, h.topic_mark) for h in handles] == [(0, 0, "0"), (0, 1, "0")]
    assert backend.committed_offset(names.group, names.topic, 0) == 2  # PO-03: before any ack
    assert backend.ack(names.group, names.topic, answer.messages[0].handle) == Rs.SUCCESS
    beyond = pop.encode_handle(pop.Handle(0, handles[0].pop_time, p.LONG_MS, 0, "0", "broker-a", 0, 9))
    assert backend.ack(names.group, names.topic, beyond) == Rs.NO_MESSAGE
    code, changed = backend.change_invisible(names.group, names.topic, answer.messages[1].handle, p.LONG_MS)
    new = pop.decode_handle(changed)
    assert code == Rs.SUCCESS and (new.ck_offset, new.offset) == (1, 1) and new.pop_time >= handles[1].pop_time


def test_a_copy_comes_back_in_the_retry_topic_after_the_invisible_time(backend):
    names = set_up(backend, "srvrev", keys=["k0"])
    first = backend.pop(names.group, names.topic, p.INVISIBLE_MS).messages[0]
    copy = p.pop_until(backend, names, 6.0)[0].messages[0]
    stored = p.read_retry(backend, names)
    first_pop = pop.decode_handle(first.handle).pop_time
    assert (copy.key, copy.reconsume_times, pop.decode_handle(copy.handle).topic_mark) == ("k0", 1, "1")
    assert [m.properties["1ST_POP_TIME"] for m in stored] == [str(first_pop)]
    assert p.REVIVE_LAG_MIN_MS <= stored[0].store_timestamp - p.get_revive_time(first) <= p.REVIVE_LAG_MAX_MS


def test_the_proxy_receives_acks_changes_and_forwards(backend):
    names = set_up(backend, "srvg", retry_max_times=3, policy=pop.exponential_policy(2000, 60_000, 3))
    assert backend.open_consumer(names.group, names.topic) == Backoff(4, (), (2000, 60_000, 3.0))
    assert backend.receive(names.group, names.topic, 999).code == ILLEGAL_INVISIBLE_TIME  # PD-01, minimum 1 s here
    received = backend.receive(names.group, names.topic, p.LONG_MS, batch=2)
    assert received.code == CODE_OK and [m.key for m in received.messages] == ["k0", "k1"]
    assert all(len(m.handle.split(" ")) == 9 for m in received.messages)
    code, handle = backend.grpc_change_invisible(names.group, names.topic, received.messages[1], p.LONG_MS)
    assert code == CODE_OK and handle != received.messages[1].handle
    assert backend.grpc_ack(names.group, names.topic, received.messages[0]) == CODE_OK
    expired = received.messages[0].handle.split(" ")
    expired[1] = str(int(expired[1]) - p.LONG_MS)
    stale = attrs.evolve(received.messages[0], handle=" ".join(expired))
    assert backend.grpc_ack(names.group, names.topic, stale) == INVALID_RECEIPT_HANDLE  # PD-05
    assert backend.forward_to_dlq(names.group, names.topic, received.messages[1], 4) == CODE_OK
    assert [(m.properties["UNIQ_KEY"], m.reconsume_times) for m in p.read_dlq(backend, names)] == [("k1", 1)]


def test_a_receive_asking_for_long_polling_is_held_until_a_message_arrives(backend):
    names = set_up(backend, "srvpoll", keys=[])
    began = time.monotonic()
    assert backend.receive(names.group, names.topic, p.LONG_MS, poll_ms=300).code == MESSAGE_NOT_FOUND
    assert time.monotonic() - began >= 0.3
    sender = threading.Timer(0.2, backend.send, (names.topic, 0, b"late", "k9"))
    began = time.monotonic()
    sender.start()
    try:
        woken = backend.receive(names.group, names.topic, p.LONG_MS, poll_ms=5_000)
    finally:
        sender.join()
    assert [m.key for m in woken.messages] == ["k9"] and 0.2 <= time.monotonic() - began < 2.0


def test_an_orderly_pop_blocks_its_queue_and_counts_attempts(backend):
    names = p.fresh("srvfifo")
    p.set_up(backend, names, fifo=True)
    p.send_all(backend, names, ["k0", "k1"])

    def pop_order(attempt: str, invisible_ms: int = p.LONG_MS):
        return backend.pop(names.group, names.topic, invisible_ms, queue_id=0, max_nums=1, order=True,
                           attempt_id=attempt)

    first = pop_order("a1", p.INVISIBLE_MS)
    assert (first.revive_qid, [m.key for m in first.messages]) == (pop.ORDER_REVIVE_QUEUE, ["k0"])
    assert pop_order("a2").code == Rs.POLLING_TIMEOUT  # FF-01: blocked while k0 is in flight
    again = p.wait_until(lambda: pop_order("a3").messages, 4.0)
    assert [(m.key, m.reconsume_times) for m in again] == [("k0", 1)]  # FF-03: per-offset count


def test_broker_config_takes_the_pop_keys_only_on_a_5x_server(backend):
    backend.set_broker_config(enableRetryTopicV2="true")
    try:
        assert backend.get_broker_config()["enableRetryTopicV2"] == "true"
    finally:
        backend.set_broker_config(enableRetryTopicV2="false")
    with run_server() as runner, RemotingClient(runner.server.broker_addr) as client:
        response = client.call(Rq.UPDATE_BROKER_CONFIG, body=b"enableRetryTopicV2=true\n")
        assert response.code == Rs.SYSTEM_ERROR and "enableRetryTopicV2" in response.remark
