"""The Java client's driver (tox env conformance-java: it needs a JDK and Debian's jars): the default classpath, the
compile cache, and an adapter JVM that starts, identifies the client and always stops (against a model-backed
server with no message: 4.9.8's start needs a name server)."""

from __future__ import annotations

import os
import signal
import socket

import pytest
from attrs import evolve

from conformance.codec.codes import CONSUMER_SEND_MSG_BACK
from conformance.harness import SETTINGS, get_fresh_names
from conformance.history.workload import MessageSpec, Workload
from conformance.runner.backends.model import open_model_backend
from conformance.runner.clients import java
from conformance.runner.clients.java import JavaConsumer, StartRequest, find_adapter_processes, get_unavailable_reason
from conformance.runner.server.runner import run_server
from conformance.runner.settings import BrokerSettings, Faults
from runenv.run_context import SettingError

pytestmark = [pytest.mark.conformance, pytest.mark.timeout(120)]
needs_java = pytest.mark.skipif(get_unavailable_reason() is not None, reason=str(get_unavailable_reason()))


@pytest.fixture
def namesrv():
    with run_server(BrokerSettings(), Faults()) as runner:
        yield runner.server.namesrv_addr


def request(namesrv: str, group: str) -> StartRequest:
    return StartRequest(namesrv, group, "TopicTest", f"{group}-i",
                        config={"maxReconsumeTimes": 3, "pullInterval": 0, "consumeThreadCount": 2})


def closed_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return probe.getsockname()[1]


@needs_java
def test_the_default_classpath_holds_the_provided_jar_and_a_folder_wildcard_is_accepted(tmp_path):
    classpath = java.get_classpath({})
    assert os.path.basename(classpath[0]) == "rocketmq-client-4.9.8.jar"
    folder = tmp_path / "lib"
    folder.mkdir()
    os.symlink(classpath[0], folder / "client.jar")
    assert java.check_classpath(f"{folder}/*:{classpath[1]}") == [f"{folder}/*", classpath[1]]
    java.check_environment({"RMQSPEC_JAVA_CLIENT_CLASSPATH": f"{folder}/*"})
    with pytest.raises(SettingError):
        java.check_environment({"RMQSPEC_JAVA_CLIENT_CLASSPATH": str(tmp_path)})


@needs_java
def test_the_adapter_is_compiled_once_per_source_and_classpath(tmp_path):
    environ = {"RMQSPEC_CACHE_DIR": str(tmp_path)}
    classpath = java.get_classpath({})
    first = java.compile_adapter(classpath, environ)
    stamp = (first / "Adapter.class").stat().st_mtime_ns
    assert java.compile_adapter(classpath, environ) == first
    assert (first / "Adapter.class").stat().st_mtime_ns == stamp
    other = java.compile_adapter(classpath[:1] + classpath, environ)
    assert other != first and (other / "Adapter.class").is_file()


@needs_java
def test_the_adapter_reports_the_client_identity_and_leaves_no_process(tmp_path, namesrv):
    consumer = JavaConsumer(request(namesrv, "java_driver_identity"), lambda message, seen: "CONSUME_SUCCESS",
                            log_dir=str(tmp_path))
    with consumer:
        pid = consumer.process.pid
        assert find_adapter_processes() == [pid]
        assert consumer.client["name"] == "rocketmq-client-java"
        assert consumer.client["version"] == "4.9.8"
        assert consumer.ready_line["ignoredConfig"] == ["consumeThreadCount"]
    assert consumer.process.returncode == 0, (consumer.errors, consumer.get_stderr_tail())
    assert find_adapter_processes() == []
    assert consumer.deliveries == [] and consumer.errors == []
    # The client's log and state went to the run's directory, nothing to stdout (which carries the protocol).
    assert (tmp_path / "java_driver_identity-i.log").is_file()
    assert (tmp_path / "java-client-state").is_dir()


@needs_java
def test_a_hanging_adapter_is_killed_at_stop(tmp_path, monkeypatch, namesrv):
    monkeypatch.setattr("conformance.runner.clients.driver.STOP_TIMEOUT_S", 1.0)
    consumer = JavaConsumer(request(namesrv, "java_driver_hang"), lambda message, seen: "CONSUME_SUCCESS",
                            log_dir=str(tmp_path))
    consumer.start()
    os.kill(consumer.process.pid, signal.SIGSTOP)
    consumer.stop()
    assert consumer.process.returncode == -signal.SIGKILL
    assert any("killed" in error for error in consumer.errors)
    assert find_adapter_processes() == []


@needs_java
def test_a_start_the_client_refuses_fails_at_once_with_its_reason(tmp_path):
    # 4.9.8's start fails when no name server answers; the adapter says so instead of `ready`.
    consumer = JavaConsumer(StartRequest(f"127.0.0.1:{closed_port()}", "java_driver_refused", "TopicTest", "r"),
                            lambda message, seen: "CONSUME_SUCCESS", log_dir=str(tmp_path))
    with pytest.raises(TimeoutError, match="start failed: .*RemotingConnectException"):
        consumer.start()
    assert find_adapter_processes() == []


@needs_java
def test_the_outcome_sets_the_concurrently_context_ack_index_and_delay_level(tmp_path):
    """CONSUME_SUCCESS with ackIndex -1 fails the message (it is sent back); RECONSUME_LATER with delayLevel -1
    asks the broker for the DLQ at once: both reach the wire as 4.9.8 sends them."""
    group, instance = get_fresh_names("jctx")
    settings = evolve(SETTINGS, group=group)
    workload = Workload((MessageSpec("m0"),))
    answers = [{"status": "CONSUME_SUCCESS", "ackIndex": -1}, {"status": "RECONSUME_LATER", "delayLevel": -1}]
    with open_model_backend(settings, workload) as backend:
        backend.produce("m0", None, 0, 0)
        request = StartRequest(backend.namesrv, group, settings.topic, instance)
        with JavaConsumer(request, lambda message, seen: answers[min(seen, 1)], log_dir=str(tmp_path)) as consumer:
            sent = lambda: [r.fields for r in backend.get_requests()  # noqa: E731
                            if r.code == CONSUMER_SEND_MSG_BACK and r.response_code is not None]
            assert consumer.wait_for(lambda found: len(found) >= 2 and len(sent()) >= 2, 30.0), consumer.errors
        copies, headers = backend.get_stored_copies(), sent()
    assert [(d.reconsume_times, d.status) for d in consumer.deliveries] == [(0, "CONSUME_SUCCESS"),
                                                                          (1, "RECONSUME_LATER")]
    assert [fields["delayLevel"] for fields in headers[:2]] == ["0", "-1"]
    # What the two send-backs stored. A client closed before it read the second answer sends the message to
    # %RETRY% itself (its fallback, CC-06): that copy is the close's, not the send-back's (seen once in a CI
    # rehearsal under load), so only the send-backs' copies are compared.
    assert [copy.topic.startswith("%DLQ%") for copy in copies if copy.path == "rpc"] == [False, True]
