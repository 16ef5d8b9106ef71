"""A real client through real faults: RocketMQ's Java client 4.9.8 consuming from the real broker while the broker
is killed (SIGKILL) and restarted on its store, and while the name server is stopped. At-least-once: every message
whose send the broker acknowledged is delivered at least once across the fault (duplicates allowed, counted)."""

from __future__ import annotations

import time

import pytest

from conformance.runner.backends import admin
from conformance.runner.backends.broker_client import BrokerClient
from conformance.runner.backends.rocketmq import RocketMQSession
from conformance.runner.backends.settings_table import get_real_broker_conf
from differential import java_probe
from differential.example import Names, Run

PORTS = {"namesrv_port": 9879, "broker_port": 10951}
DELIVERY_TIMEOUT = 60.0  # the client retries a failed pull after 3 s and re-reads routes every 30 s


@pytest.fixture(scope="module")
def probe_classes(tmp_path_factory):
    classpath = java_probe.get_client_classpath()
    classes = tmp_path_factory.mktemp("probe")
    java_probe.compile_probe(classes, classpath)
    return classes, classpath


@pytest.fixture(scope="module")
def broker(tmp_path_factory):
    """One broker for the module's faults (a start and a stop cost ~12 s): the crash test restarts it on its
    store, and the name-server test, which leaves no name server, runs last."""
    session = RocketMQSession(get_real_broker_conf(), tmp_path_factory.mktemp("faults") / "logs", **PORTS)
    broker = session.open()
    yield broker
    session.close(failed=False)


def send_acknowledged(broker, names: Names, keys: list[str], body: str = "") -> set[str]:
    """Sends one message per key over the wire; returns the keys the broker acknowledged (SUCCESS)."""
    acked = set()
    with BrokerClient(broker.broker_addr) as client:
        for i, key in enumerate(keys):
            payload = (body or key).encode()
            if client.send(names.topic, i % 2, payload, {"UNIQ_KEY": key, "WAIT": "true"}).code == 0:
                acked.add(key)
    return acked


def start_probe(broker, names: Names, probe_classes, tmp_path) -> java_probe.Probe:
    with BrokerClient(broker.broker_addr) as client:
        Run(client, "broker-a", names).set_up()
    classes, classpath = probe_classes
    probe = java_probe.Probe(classes, classpath, broker.namesrv_addr, names.group("q1"), names.topic,
                             tmp_path / "probe.err")
    assert probe.ready.wait(30), "the Java consumer did not start"
    return probe


@pytest.mark.rules("SY-10")
def test_at_least_once_across_a_broker_crash(broker, probe_classes, tmp_path):
    names = Names()
    probe = start_probe(broker, names, probe_classes, tmp_path)
    try:
        before = send_acknowledged(broker, names, [f"A{i}" for i in range(10)])
        assert probe.wait_for(set(list(before)[:3]), DELIVERY_TIMEOUT) == set()
        broker.kill_broker()
        time.sleep(0.5)
        broker.start_broker()
        after = send_acknowledged(broker, names, [f"B{i}" for i in range(10)])
        missing = probe.wait_for(before | after, DELIVERY_TIMEOUT)
    finally:
        probe.stop()
    keys = [d["uniq"] for d in probe.deliveries]
    duplicates = len(keys) - len(set(keys))  # allowed: offsets are committed every second, persisted every 5 s
    assert (len(before), len(after), missing) == (10, 10, set()), f"{duplicates} duplicates; {probe.deliveries}"


@pytest.mark.rules("CC-06", "RS-07", "RS-09")
def test_read_only_broker_during_consumption(broker, probe_classes, tmp_path):
    """The broker turns read-only while a message fails: pulls go on, the send-back is refused (SB-02), and the
    client's fallback send to %RETRY% (CC-06) is stored all the same: the producer's route, read when the consumer
    started and refreshed every 30 s, still shows the broker writeable, and a read-only 4.9.8 broker stores a plain
    send (RS-07's note). So the redelivery comes through %RETRY% (RETRY_TOPIC set) without ORIGIN_MESSAGE_ID —
    the fallback's mark (RS-09) — not from the client's local retry (CC-07) that the model's RS-07 predicts."""
    names = Names()
    probe = start_probe(broker, names, probe_classes, tmp_path)
    try:
        assert probe.wait_for(send_acknowledged(broker, names, ["A0"]), DELIVERY_TIMEOUT) == set()
        with BrokerClient(broker.broker_addr) as client:
            admin.update_broker_config(client, brokerPermission=admin.PERM_READ)
        failing = send_acknowledged(broker, names, ["F0"], body="FAIL-0")  # a read-only broker still stores it
        missing = probe.wait_for(failing, DELIVERY_TIMEOUT, reconsume_times=1)
    finally:
        with BrokerClient(broker.broker_addr) as client:
            admin.update_broker_config(client, brokerPermission=admin.PERM_READ_WRITE)
        probe.stop()
    f0 = [(d["reconsumeTimes"], d["retryTopic"], d["originMessageId"]) for d in probe.deliveries if d["uniq"] == "F0"]
    assert (failing, missing) == ({"F0"}, set()), f0
    assert f0 == [(0, False, False), (1, True, False)]  # (reconsumeTimes, RETRY_TOPIC set, ORIGIN_MESSAGE_ID set)


def wait_for_keys(consumer, keys: set[str], timeout: float) -> set[str]:
    """Waits until every key was delivered to `consumer` at least once; returns the keys still missing."""
    deadline = time.monotonic() + timeout
    while (missing := keys - {d.uniq_key for d in list(consumer.deliveries)}) \
            and time.monotonic() < deadline:
        time.sleep(0.1)
    return missing


@pytest.mark.rules("SY-10")
def test_cpp_at_least_once_across_a_broker_crash(broker, tmp_path):
    """rocketmq-client-cpp 1.2.3 through the same crash: every acknowledged message delivered at least once."""
    from conformance.runner.clients import cpp
    from conformance.runner.clients.driver import StartRequest

    if (reason := cpp.get_unavailable_reason()) is not None:
        pytest.fail(f"the differential env installs rocketmq-client-cpp: {reason}")
    names = Names()
    with BrokerClient(broker.broker_addr) as client:
        Run(client, "broker-a", names).set_up()
    request = StartRequest(broker.namesrv_addr, names.group("q1"), names.topic, f"cpp-{names.suffix}")
    with cpp.open_cpp_consumer(request, lambda message, seen: "CONSUME_SUCCESS", str(tmp_path)) as consumer:
        before = send_acknowledged(broker, names, [f"A{i}" for i in range(10)])
        assert wait_for_keys(consumer, set(list(before)[:3]), DELIVERY_TIMEOUT) == set()
        broker.kill_broker()
        time.sleep(0.5)
        broker.start_broker()
        after = send_acknowledged(broker, names, [f"B{i}" for i in range(10)])
        missing = wait_for_keys(consumer, before | after, DELIVERY_TIMEOUT)
    assert (len(before), len(after), missing) == (10, 10, set())


def test_consumption_goes_on_with_the_name_server_stopped(broker, probe_classes, tmp_path):
    names = Names()
    probe = start_probe(broker, names, probe_classes, tmp_path)
    try:
        first = send_acknowledged(broker, names, [f"A{i}" for i in range(5)])
        assert probe.wait_for(first, DELIVERY_TIMEOUT) == set()
        broker.stop_namesrv()
        later = send_acknowledged(broker, names, [f"B{i}" for i in range(5)])
        missing = probe.wait_for(later, DELIVERY_TIMEOUT)
    finally:
        probe.stop()
    assert (len(later), missing) == (5, set())
