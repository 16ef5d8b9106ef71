"""The rocketmq-client-cpp driver starts, identifies and always stops its adapter process (no server needed)."""

from __future__ import annotations

import os
import signal
import socket

import pytest

from conformance.runner.clients.cpp import (
    CLIENT_NAME,
    CLIENT_VERSION,
    CppConsumer,
    StartRequest,
    find_adapter_processes,
    get_unavailable_reason,
)

pytestmark = [pytest.mark.conformance, pytest.mark.timeout(60),
              pytest.mark.skipif(get_unavailable_reason() is not None, reason=str(get_unavailable_reason()))]


def closed_port() -> int:
    """A loopback port nobody listens on: the client's name server requests fail at once."""
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return probe.getsockname()[1]


def is_group_alive(pgid: int) -> bool:
    try:
        os.killpg(pgid, 0)
    except ProcessLookupError:
        return False
    return True


def request(group: str) -> StartRequest:
    return StartRequest(f"127.0.0.1:{closed_port()}", group, "TopicTest", f"{group}-i")


def test_the_adapter_reports_the_client_identity_and_leaves_no_process(tmp_path):
    consumer = CppConsumer(request("cpp_driver_identity"), lambda message, seen: "CONSUME_SUCCESS",
                           log_dir=str(tmp_path))
    with consumer:
        pgid = consumer.process.pid
        assert find_adapter_processes() == [pgid]
        assert consumer.client["name"] == CLIENT_NAME
        assert consumer.client["version"] == CLIENT_VERSION
        assert consumer.client["bindingVersion"] == "0.4.4"
        assert is_group_alive(pgid)
    assert consumer.process.returncode == 0, consumer.errors
    assert not is_group_alive(pgid)
    assert find_adapter_processes() == []
    assert consumer.deliveries == []


def test_a_hanging_adapter_is_killed_at_stop(tmp_path, monkeypatch):
    monkeypatch.setattr("conformance.runner.clients.driver.STOP_TIMEOUT_S", 1.0)
    consumer = CppConsumer(request("cpp_driver_hang"), lambda message, seen: "CONSUME_SUCCESS", log_dir=str(tmp_path))
    consumer.start()
    pgid = consumer.process.pid
    os.kill(consumer.process.pid, signal.SIGSTOP)  # a shutdown that never returns looks like this from outside
    consumer.stop()
    assert consumer.process.returncode == -signal.SIGKILL
    assert any("killed" in error for error in consumer.errors)
    assert not is_group_alive(pgid)
