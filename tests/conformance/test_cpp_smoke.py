"""Smoke test of the harness with the real rocketmq-client-cpp: produce -> fail -> retry -> DLQ, in seconds."""

from __future__ import annotations

import socket

import pytest
from attrs import evolve

from conformance.checker.mechanisms import ObservedFate, get_observed_fates
from conformance.harness import SETTINGS, get_fresh_names, judge_run
from conformance.runner.backends.model import open_model_backend
from conformance.runner.clients.cpp import find_adapter_processes, get_unavailable_reason, open_cpp_consumer
from conformance.runner.clients.protocol import get_transcript_problems, recording
from conformance.runner.run import run_workload
from conformance.runner.workloads import poison_workload

pytestmark = [pytest.mark.conformance, pytest.mark.timeout(60),
              pytest.mark.skipif(get_unavailable_reason() is not None, reason=str(get_unavailable_reason()))]


def test_a_poison_message_goes_produce_fail_retry_dlq(tmp_path):
    group, instance = get_fresh_names("smoke")
    settings = evolve(SETTINGS, group=group)
    workload = poison_workload(settings.retry_max_times)
    consumers = []
    run = run_workload(open_model_backend, workload, settings, instance, str(tmp_path),
                       recording(open_cpp_consumer, consumers))
    # The group's retryMaxTimes 2 decides (the client sends none): 1 + 2 deliveries, then the DLQ.
    assert get_observed_fates(run)["m0"] == ObservedFate("m0", (0, 1, 2), "dlq")
    verdicts = {v.rule: v.status for v in judge_run(run, repr(workload))}
    assert verdicts["SB-09"] == "deviates" and verdicts["SY-06"] == "conforms", verdicts
    # The broker as the client left it: m0's DLQ copy, nothing left to consume, every queue committed to its end.
    assert run.final.dead == (("m0", 3),) and run.final.get_pending_keys() == set()
    assert [(q.committed, q.max_offset) for q in run.final.queues] == [(1, 1), (0, 0), (2, 2)]
    assert run.ended_ms > max(d.time_ms for d in run.deliveries)
    # Every line the adapter and the harness exchanged is adapter protocol v1 (its JSON Schema).
    assert get_transcript_problems(consumers) == []
    # Nothing leaks: no adapter process left, the name server's port closed.
    assert find_adapter_processes() == []
    host, port = run.namesrv.rsplit(":", 1)
    with pytest.raises(ConnectionRefusedError), socket.create_connection((host, int(port)), timeout=2):
        pass
