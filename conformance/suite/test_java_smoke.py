"""Smoke test of the harness with RocketMQ's own Java client 4.9.8: produce -> fail -> retry -> DLQ, in seconds."""

from __future__ import annotations

import socket

import pytest
from attrs import evolve

from conformance.checker.checks import LATE_BOUND_MS
from conformance.checker.mechanisms import ObservedFate, get_observed_fates
from conformance.codec.codes import CONSUMER_SEND_MSG_BACK
from conformance.harness import SETTINGS, get_fresh_names, judge_run
from conformance.history.workload import Fault, MessageSpec, Workload
from conformance.runner.backends.model import open_model_backend
from conformance.runner.clients.java import find_adapter_processes, get_unavailable_reason, open_java_consumer
from conformance.runner.run import run_workload
from conformance.runner.workloads import poison_workload

SEND_MESSAGE_V2 = 310
NO_PERMISSION = 16

pytestmark = [pytest.mark.conformance, pytest.mark.timeout(60),
              pytest.mark.skipif(get_unavailable_reason() is not None, reason=str(get_unavailable_reason()))]


def test_a_poison_message_goes_produce_fail_retry_dlq(tmp_path):
    group, instance = get_fresh_names("jsmoke")
    # The client's maxReconsumeTimes 2 (sent in every send-back header) decides, not the group's retryMaxTimes 16.
    settings = evolve(SETTINGS, group=group, retry_max_times=16, max_reconsume_times=2)
    workload = poison_workload(2)
    run = run_workload(open_model_backend, workload, settings, instance, str(tmp_path), open_java_consumer)
    assert run.client["name"] == "rocketmq-client-java" and run.client["version"] == "4.9.8"
    assert get_observed_fates(run)["m0"] == ObservedFate("m0", (0, 1, 2), "dlq")
    headers = [r.fields for r in run.get_requests(CONSUMER_SEND_MSG_BACK)]
    assert [(h["maxReconsumeTimes"], h["originMsgId"], h["delayLevel"]) for h in headers] == [("2", "m0", "0")] * 3
    verdicts = {v.rule: v.status for v in judge_run(run, repr(workload))}
    assert verdicts["SB-09"] == "conforms" and verdicts["SY-05"] == "conforms", verdicts
    assert "deviates" not in verdicts.values(), verdicts
    # Nothing leaks: no adapter JVM left, the name server's port closed.
    assert find_adapter_processes() == []
    host, port = run.namesrv.rsplit(":", 1)
    with pytest.raises(ConnectionRefusedError), socket.create_connection((host, int(port)), timeout=2):
        pass


def test_with_the_broker_not_writeable_the_fallback_is_refused_and_the_message_retried_locally(tmp_path):
    """CC-07: the send-back is refused (NO_PERMISSION), so is the client's own send to %RETRY% and each of its
    producer's retries; 4.9.8 then consumes the message again locally 5 s later with reconsumeTimes + 1."""
    group, instance = get_fresh_names("jreadonly")
    settings = evolve(SETTINGS, group=group)
    workload = Workload((MessageSpec("m0", "TagA", 0, ("RECONSUME_LATER",)),), (Fault("broker_not_writeable"),))
    run = run_workload(open_model_backend, workload, settings, instance, str(tmp_path), open_java_consumer)
    first, again = run.deliveries
    assert (first.reconsume_times, again.reconsume_times) == (0, 1)
    assert 5000 <= again.time_ms - first.time_ms < 5000 + LATE_BOUND_MS
    fallbacks = [r for r in run.requests if r.code == SEND_MESSAGE_V2 and r.fields.get("b", "").startswith("%RETRY%")]
    assert len(fallbacks) == 3 and {r.response_code for r in fallbacks} == {NO_PERMISSION}
    verdicts = {v.rule: v.status for v in judge_run(run, repr(workload))}
    assert verdicts["CC-06"] == verdicts["CC-07"] == "conforms", verdicts
