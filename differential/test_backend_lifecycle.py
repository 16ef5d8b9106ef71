"""The real backend's life: started, stopped with nothing left (no process, no store), logs kept on failure, and
a crash (SIGKILL) with a restart on the same store, the way the fault runs use it. A second broker on its own
ports, beside the session's."""

from __future__ import annotations

import os
import time

import pytest

from conformance.runner.backends import admin
from conformance.runner.backends.broker_client import BrokerClient
from conformance.runner.backends.rocketmq import RocketMQSession
from conformance.runner.backends.settings_table import get_real_broker_conf
from differential.example import Names, Run

PORTS = {"namesrv_port": 9877, "broker_port": 10931}


def is_alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    return True


@pytest.fixture
def second(tmp_path):
    session = RocketMQSession(get_real_broker_conf(), tmp_path / "logs", **PORTS)
    broker = session.open()
    yield session, broker
    session.close(failed=False)


@pytest.mark.parametrize("failed", [False, True])
def test_stop_leaves_nothing_but_kept_logs(second, failed):
    session, broker = second
    pids = [broker.namesrv.pid, broker.broker.pid]
    assert all(is_alive(pid) for pid in pids)
    kept = session.close(failed=failed)
    assert not any(is_alive(pid) for pid in pids)
    assert not session.data_dir.exists()
    assert (kept is not None and (kept / "broker.out").is_file()) == failed


@pytest.mark.rules("DT-08", "DT-09")
def test_crash_and_restart_keeps_acknowledged_messages_and_redelivers(second):
    """Acknowledged sends survive a SIGKILL (the commit log is in the page cache); the delay timer's level offsets
    are persisted only every 10 s, so a message delivered just before the crash is delivered again after it."""
    _, broker = second
    with BrokerClient(broker.broker_addr) as client:
        run = Run(client, "broker-a", Names())
        run.set_up()
        for queue_id in (0, 1):
            assert client.send(run.names.topic, queue_id, b"kept", {"WAIT": "true"}).code == 0
        assert client.send(run.names.topic, 0, b"delayed", {"WAIT": "true", "DELAY": "1"}).code == 0
        deadline = time.monotonic() + 10
        while len(run.read_landed().get(run.names.topic, [])) < 3 and time.monotonic() < deadline:
            time.sleep(0.05)
    broker.kill_broker()
    broker.start_broker()
    with BrokerClient(broker.broker_addr) as client:
        run.client = client
        deadline = time.monotonic() + 15
        while len(run.read_landed().get(run.names.topic, [])) < 4 and time.monotonic() < deadline:
            time.sleep(0.1)
        bodies = sorted(m.body for m in run.read_landed()[run.names.topic])
        admin.update_broker_config(client, brokerPermission=6)
    assert bodies == [b"delayed", b"delayed", b"kept", b"kept"]


def test_broker_serves_with_its_name_server_stopped(second):
    """The name server gone: the broker keeps storing, answering pulls and send-backs (clients that cached the
    route go on; only route look-ups and registration fail)."""
    _, broker = second
    broker.stop_namesrv()
    with BrokerClient(broker.broker_addr) as client:
        run = Run(client, "broker-a", Names())
        run.set_up()
        sent = client.send(run.names.topic, 0, b"x", {"WAIT": "true"})
        time.sleep(0.05)
        assert sent.code == 0 and len(run.read_queue(run.names.topic, 0)) == 1
        offset = int(sent.ext_fields["msgId"][-16:], 16)
        assert client.send_back(run.names.group("q1"), offset, -1, None, run.names.topic, None).code == 0
    assert broker.broker.poll() is None


@pytest.mark.rules("PL-04")
@pytest.mark.parametrize("perm, pull_code", [(admin.PERM_READ, 0), (admin.PERM_WRITE, 16)])
def test_pull_follows_broker_permission(target, perm, pull_code):
    """Read-only during consumption: pulls go on, send-backs are refused (SB-02); write-only: pulls refused."""
    with BrokerClient(target.broker_addr) as client:
        run = Run(client, target.broker_name, Names())
        run.set_up()
        client.send(run.names.topic, 0, b"x", {"WAIT": "true"})
        time.sleep(0.05)
        try:
            admin.update_broker_config(client, brokerPermission=perm)
            code = client.pull(run.names.group("q1"), run.names.topic, 0, 0).code
        finally:
            admin.update_broker_config(client, brokerPermission=admin.PERM_READ_WRITE)
    assert code == pull_code
