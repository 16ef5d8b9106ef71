"""The faults of the 5.x workloads on the model-backed server (conformance/suite/pop_targets.py), made as RocketMQ
5.3.3 makes them (conformance/suite/pop_suite.py PopTarget): a read-only broker over UPDATE_BROKER_CONFIG, a paused
name server (SIGSTOP: connections kept, nothing answered until it resumes), and a crash of the broker with its local
proxy (`kill -9`: what was popped since the last persist is popped again, PO-10; the proxy forgets every client's
settings)."""

from __future__ import annotations

import socket

import pytest

from conformance.codec.codes import RequestCode as Rq
from conformance.codec.codes import ResponseCode as Rs
from conformance.runner.backends import admin
from conformance.runner.backends.remoting_client import RemotingClient
from conformance.suite.pop_targets import open_model_pop_target
from differential import pop_probe as p

pytestmark = [pytest.mark.timeout(60), pytest.mark.conformance]
NO_PERSIST_MS = 600_000


@pytest.fixture(scope="module")
def target():
    with open_model_pop_target() as running:
        yield running


def test_a_paused_name_server_answers_nothing_until_it_resumes(target):
    fields = {"topic": "TBW102"}
    target.set_fault("namesrv_stop", True)
    try:
        with RemotingClient(target.namesrv, timeout=1.0) as client, pytest.raises((TimeoutError, socket.timeout)):
            client.call(Rq.GET_ROUTEINFO_BY_TOPIC, fields)
    finally:
        target.set_fault("namesrv_stop", False)
    with RemotingClient(target.namesrv, timeout=5.0) as client:
        assert client.call(Rq.GET_ROUTEINFO_BY_TOPIC, fields).code in (Rs.SUCCESS, Rs.TOPIC_NOT_EXIST)


def test_a_read_only_broker_refuses_send_backs_and_takes_them_again_after(target):
    """Read-only (brokerPermission 4) refuses CONSUMER_SEND_MSG_BACK — the proxy's forward to the DLQ is one (PD-03)
    — as the route shows it, not a normal topic's send (only an order topic's: msgCheck)."""
    names = p.prepare(target.backend, "ro", keys=("k0",))
    stored = target.backend.read_topic(names.topic)[0]
    target.set_fault("broker_read_only", True)
    try:
        assert target.backend.get_broker_config()["brokerPermission"] == str(admin.PERM_READ)
        assert target.backend.send_back(names.group, stored, 1) == Rs.NO_PERMISSION
    finally:
        target.set_fault("broker_read_only", False)
    assert target.backend.send_back(names.group, stored, 1) == Rs.SUCCESS


def test_a_crash_pops_again_what_was_popped_since_the_last_persist(target):
    server = target.runner.server
    target.runner.call(lambda: setattr(server.pop, "flush_at", server.now() + NO_PERSIST_MS))
    names = p.prepare(target.backend, "crash", keys=("k0",))
    target.backend.open_consumer(names.group, names.topic)
    assert [m.key for m in target.backend.pop(names.group, names.topic, p.LONG_MS).messages] == ["k0"]
    assert target.runner.call(lambda: len(server.pop.clients.settings)) == 1
    target.crash()
    assert target.backend.committed_offset(names.group, names.topic, 0) in (-1, 0)
    again, _at = p.pop_until(target.backend, names, 5.0)
    assert [(m.key, m.reconsume_times) for m in again.messages] == [("k0", 0)]
    assert target.runner.call(lambda: len(server.pop.clients.settings)) == 0
