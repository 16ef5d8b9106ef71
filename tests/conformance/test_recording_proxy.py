"""The recording proxy the real backend's runs go through (conformance/runner/backends/recording_proxy.py), in front of
the model-backed server: it records each request with its response code, and rewrites only the broker address in
routes and the store host of pulled messages, so that a client keeps coming through it; with a fault hook it answers
the requests a workload's faults hit in the broker's stead, as the model-backed server does."""

from __future__ import annotations

import json

import pytest

from conformance.codec.message import decode_messages
from conformance.harness import SETTINGS
from conformance.history.workload import Fault, MessageSpec, Workload
from conformance.runner.backends.broker_client import BrokerClient
from conformance.runner.backends.real_run import open_real_backend
from conformance.runner.backends.recording_proxy import RecordingProxy
from conformance.runner.faults import FaultScript
from conformance.runner.server.runner import run_server

TOPIC = "ProxyTopic"


def test_proxy_records_and_rewrites_only_addresses():
    with run_server() as runner, RecordingProxy(runner.server.namesrv_addr, runner.server.broker_addr) as proxy:
        with BrokerClient(proxy.namesrv_addr) as namesrv:
            route = json.loads(namesrv.call(105, {"topic": TOPIC}).body)
        with BrokerClient(proxy.broker_addr) as broker:
            sent = broker.send(TOPIC, 0, b"body", {"UNIQ_KEY": "k0"})
            pulled = broker.pull("G", TOPIC, 0, 0)
            missing = broker.pull("G", "NoSuchTopic", 0, 0)
        requests = proxy.get_requests()
    assert [a for d in route["brokerDatas"] for a in d["brokerAddrs"].values()] == [proxy.broker_addr]
    [message] = decode_messages(pulled.body)
    assert (message.body, message.properties["UNIQ_KEY"]) == (b"body", "k0")
    assert f"{message.store_host[0]}:{message.store_host[1]}" == proxy.broker_addr
    assert [(r.code, r.response_code) for r in requests] == [(105, 0), (10, sent.code), (11, 0), (11, missing.code)]
    assert missing.code == 17 and requests[2].fields["topic"] == TOPIC
    assert requests[0].connection != requests[1].connection == requests[3].connection


def get_upstream_codes(runner) -> list[int]:
    """The request codes the upstream broker received, in order."""
    trace = runner.call(lambda: list(runner.server.trace))
    return [e.command.code for e in trace if e.endpoint == "broker" and e.direction == "in"
            and not e.command.is_response]


def test_proxy_injects_the_workloads_faults_in_the_brokers_stead():
    """A fault the script names is answered by the proxy (NO_PERMISSION to m0's first send-back and to its fallback
    send to %RETRY%) or never (the second send-back), never forwarded; the rest reach the broker. The send-back's
    message is known by the commit-log offset of a message the proxy saw pulled; each fault is a FaultEvent at its
    request's time."""
    faults = (Fault("broker_not_writeable", "m0", 0), Fault("send_back_timeout", "m0", 1), Fault("pull_error", "m0", 2))
    script = FaultScript(Workload((MessageSpec("m0"),), faults))
    with run_server() as runner, RecordingProxy(runner.server.namesrv_addr, runner.server.broker_addr,
                                                script.decide) as proxy:
        with BrokerClient(proxy.broker_addr) as broker:
            broker.send(TOPIC, 0, b"body", {"UNIQ_KEY": "m0"})
            [message] = decode_messages(broker.pull("G", TOPIC, 0, 0).body)  # pull 0
            refused = broker.send_back("G", message.commit_log_offset, 0, None, TOPIC, None)  # m0#0
            fallback = broker.send("%RETRY%G", 0, b"body", {"UNIQ_KEY": "m0"}, 1)
        with BrokerClient(proxy.broker_addr, timeout=0.5) as silent, pytest.raises(TimeoutError):
            silent.send_back("G", message.commit_log_offset, 0, None, TOPIC, None)  # m0#1
        with BrokerClient(proxy.broker_addr) as broker:
            forwarded = broker.send_back("G", message.commit_log_offset, 0, None, TOPIC, None)  # m0#2
            unknown = broker.send_back("G", message.commit_log_offset + 1, 0, None, TOPIC, None)
            pulls = [broker.pull("G", TOPIC, 0, 0) for _ in range(2)]  # pulls 1 and 2
        requests, faults = proxy.get_requests(), proxy.call(lambda: list(script.events))
        upstream = get_upstream_codes(runner)
    assert (refused.code, refused.remark, refused.is_response) == (16, "injected fault: broker_not_writeable", True)
    assert (fallback.code, pulls[1].code, pulls[1].remark) == (16, 1, "injected fault: pull_error")
    assert forwarded.remark != refused.remark and unknown.remark != refused.remark and pulls[0].code == 0
    assert [(r.code, r.response_code) for r in requests] == [
        (10, 0), (11, 0), (36, 16), (10, 16), (36, None), (36, forwarded.code), (36, unknown.code), (11, 0), (11, 1)]
    assert upstream == [10, 11, 36, 36, 11]
    assert [(f.kind, f.target, f.end_ms) for f in faults] == [
        ("broker_not_writeable", "m0#0", None), ("broker_not_writeable", "10", None),
        ("send_back_timeout", "m0#1", None), ("pull_error", "11", None)]
    assert [f.time_ms for f in faults] == [requests[i].time_ms for i in (2, 3, 4, 8)]


def test_the_real_backend_refuses_only_faults_it_has_no_answer_for():
    with pytest.raises(ValueError, match="disk_full"), \
            open_real_backend(None, SETTINGS, Workload((MessageSpec("m0"),), (Fault("disk_full"),))):
        pass
