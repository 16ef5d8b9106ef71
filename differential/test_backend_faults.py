"""The fault schedule's actions on both backends (`set_writeable`, `kill_broker`, `restart_broker`, `stop_namesrv`,
`start_namesrv`): the same steps against RealBackend (RocketMQ 4.9.8's processes behind the recording proxy) and
ModelBackend, seen by the harness's own clients through the addresses a client gets (the proxy's on the real
backend), must observe the same: refused connects and no route while a process is down, the store and the flushed
consumer offsets (not the unflushed ones) after the broker's crash, perm 4 in the route and a send-back refused while
read-only. Each action's duration on the real backend is printed (run with -s)."""

from __future__ import annotations

import time
from pathlib import Path

import pytest

from conformance.codec.codes import PULL_MESSAGE
from conformance.codec.codes import ResponseCode as Rs
from conformance.codec.message import decode_messages
from conformance.history.records import RunSettings
from conformance.history.workload import Workload
from conformance.runner.backends.broker_client import BrokerClient
from conformance.runner.backends.model import ModelBackend, open_model_backend
from conformance.runner.backends.real_run import open_real_backend
from conformance.runner.backends.rocketmq import RocketMQSession
from conformance.runner.backends.route import get_route_perms
from conformance.runner.backends.settings_table import get_real_broker_conf
from conformance.runner.server.broker_adapter import OFFSET_FLUSH_FIRST_MS
from differential.example import Names

PORTS = {"namesrv_port": 9882, "broker_port": 10981}
FLUSH_LIMIT_S = 12.0  # the first consumer-offset flush is 10 s after a broker's start, then one every 5 s


@pytest.fixture(scope="module")
def broker(tmp_path_factory):
    """A broker of its own, since the test kills and restarts it (the session's broker serves other modules)."""
    session = RocketMQSession(get_real_broker_conf(), tmp_path_factory.mktemp("backend-faults") / "logs", **PORTS)
    broker = session.open()
    yield broker
    session.close(failed=False)


def timed(durations: dict, name: str, action) -> None:
    began = time.monotonic()
    action()
    durations[name] = round(time.monotonic() - began, 2)


def describe_error(error: OSError) -> str:
    """How a connection failed: refused, closed (reset, broken pipe or EOF), or timed out (not closed at all)."""
    if isinstance(error, ConnectionRefusedError):
        return "refused"
    return "closed" if isinstance(error, ConnectionError) else type(error).__name__


def wait_for_offset_flush(backend, settings: RunSettings) -> None:
    """Until the broker has just persisted the committed offsets: on RocketMQ consumerOffset.json names the run's
    queue; on the model its first flush time has passed. The next flush is 5 s later."""
    deadline = time.monotonic() + FLUSH_LIMIT_S
    while time.monotonic() < deadline:
        if isinstance(backend, ModelBackend):
            if backend.runner.call(backend.server.now) > OFFSET_FLUSH_FIRST_MS:
                return
        else:
            offsets = Path(backend.broker.data_dir) / "store" / "config" / "consumerOffset.json"
            if offsets.exists() and f'"{settings.topic}@{settings.group}"' in offsets.read_text():
                return
        time.sleep(0.05)
    raise TimeoutError("no consumer-offset flush seen")


def observe_crash(backend, address: str, settings: RunSettings, durations: dict) -> dict:
    """Offsets 1 (flushed) then 2 (not), the broker killed, restarted: what a client sees at each step."""
    seen = {}
    for key in ("k0", "k1"):
        backend.produce(key, None, 0, 0)
    client = BrokerClient(address, timeout=5)
    client.pull(settings.group, settings.topic, 0, 0)
    client.update_offset(settings.group, settings.topic, 0, 1)
    wait_for_offset_flush(backend, settings)
    client.update_offset(settings.group, settings.topic, 0, 2)
    timed(durations, "kill_broker", backend.kill_broker)
    try:
        client.query_offset(settings.group, settings.topic, 0)
    except OSError as error:
        seen["open connection"] = describe_error(error)
    try:
        BrokerClient(address).close()
    except OSError as error:
        seen["connect"] = describe_error(error)
    seen["route while killed"] = get_route_perms(backend.namesrv, settings.topic)
    timed(durations, "restart_broker", backend.restart_broker)
    with BrokerClient(address) as client:
        pulled = decode_messages(client.pull(settings.group, settings.topic, 0, 0).body)
        seen["pulled after restart"] = [m.properties["UNIQ_KEY"] for m in pulled]
        seen["offset after restart"] = client.query_offset(settings.group, settings.topic, 0).header("offset")
    seen["route after restart"] = sorted(set(get_route_perms(backend.namesrv, settings.topic)))
    return seen


def observe_name_server_and_permission(backend, address: str, settings: RunSettings, durations: dict) -> dict:
    """The name server stopped and started; the broker read-only, then read-write: what a client sees."""
    seen = {}
    timed(durations, "stop_namesrv", backend.stop_namesrv)
    try:
        get_route_perms(backend.namesrv, settings.topic)
    except OSError as error:
        seen["route while stopped"] = describe_error(error)
    timed(durations, "start_namesrv", backend.start_namesrv)
    seen["route after start"] = sorted(set(get_route_perms(backend.namesrv, settings.topic)))
    with BrokerClient(address) as client:
        (message,) = decode_messages(client.pull(settings.group, settings.topic, 0, 0, 1).body)
        timed(durations, "set_writeable(False)", lambda: backend.set_writeable(False))
        seen["route read-only"] = sorted(set(get_route_perms(backend.namesrv, settings.topic)))
        seen["send-back read-only"] = Rs(client.send_back(settings.group, message.commit_log_offset, 0,
                                                          message.msg_id, settings.topic, 16).code).name
        seen["send read-only"] = Rs(client.send(settings.topic, 1, b"x", {"UNIQ_KEY": "k2"}).code).name
        timed(durations, "set_writeable(True)", lambda: backend.set_writeable(True))
        seen["route writeable"] = sorted(set(get_route_perms(backend.namesrv, settings.topic)))
        seen["send-back writeable"] = Rs(client.send_back(settings.group, message.commit_log_offset, 0,
                                                          message.msg_id, settings.topic, 16).code).name
    return seen


def observe(backend, address: str, settings: RunSettings, durations: dict) -> dict:
    seen = observe_crash(backend, address, settings, durations)
    seen.update(observe_name_server_and_permission(backend, address, settings, durations))
    pulls = [r for r in backend.get_requests() if r.code == PULL_MESSAGE]
    seen["pull connections unique"] = len({r.connection for r in pulls}) == len(pulls) == 3
    return seen


EXPECTED = {
    "open connection": "closed", "connect": "refused", "route while killed": None,
    "pulled after restart": ["k0", "k1"], "offset after restart": "1", "route after restart": [6],
    "route while stopped": "refused", "route after start": [6], "route read-only": [4],
    "send-back read-only": "NO_PERMISSION", "send read-only": "SUCCESS", "route writeable": [6],
    "send-back writeable": "SUCCESS", "pull connections unique": True,
}


def test_faults_look_the_same_on_both_backends(broker):
    names = Names()
    settings = RunSettings(group=names.group("faults"), topic=names.topic, topic_queue_nums=2)
    durations: dict = {}
    with open_real_backend(broker, settings, Workload(messages=())) as real:
        on_real = observe(real, real.proxy.broker_addr, settings, durations)
    with open_model_backend(settings, Workload(messages=())) as model:
        on_model = observe(model, model.broker_addr, settings, {})
    print(f"\nfault actions on RocketMQ 4.9.8, s: {durations}")
    assert on_real == EXPECTED
    assert on_model == on_real
