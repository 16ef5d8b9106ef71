"""Smoke test of the harness with the real ali-ons (Node.js): produce -> fail -> retry -> DLQ, and ali-ons' own
drop of a retry answered RECONSUME_LATER, in seconds. Skipped, with the reason, where node or the pinned client is
absent (conformance/runner/clients/node.py)."""

from __future__ import annotations

import socket

import pytest

from conformance.checker.mechanisms import ObservedFate, get_observed_fates
from conformance.history.workload import MessageSpec, Workload
from conformance.runner.clients.node import find_adapter_processes, get_unavailable_reason, open_node_consumer
from conformance.runner.clients.protocol import get_transcript_problems, recording
from conformance.suite.full_run import run_and_judge

pytestmark = [pytest.mark.conformance, pytest.mark.timeout(60),
              pytest.mark.skipif(get_unavailable_reason() is not None, reason=str(get_unavailable_reason()))]


def test_a_raising_listener_goes_produce_fail_retry_dlq(tmp_path):
    workload = Workload((MessageSpec("m0", "TagA", 0, ("EXCEPTION",) * 4),))
    consumers = []
    run, verdicts = run_and_judge(recording(open_node_consumer, consumers), workload, 2, str(tmp_path), "nsmoke")
    # The client's maxReconsumeTimes 2 travels in the send-back header: 1 + 2 deliveries, then the DLQ.
    assert run.client["name"] == "ali-ons"
    assert get_observed_fates(run)["m0"] == ObservedFate("m0", (0, 1, 2), "dlq")
    assert verdicts["SB-09"] == "conforms" and verdicts["CC-04"] == "conforms", verdicts
    assert verdicts["RB-05"] == "deviates" and verdicts["CC-05"] == "deviates", verdicts
    # Every line the adapter and the harness exchanged is adapter protocol v1 (its JSON Schema).
    assert get_transcript_problems(consumers) == []
    # Nothing leaks: no adapter process left, the name server's port closed.
    assert find_adapter_processes() == []
    host, port = run.namesrv.rsplit(":", 1)
    with pytest.raises(ConnectionRefusedError), socket.create_connection((host, int(port)), timeout=2):
        pass


def test_a_retry_answered_reconsume_later_is_dropped_by_ali_ons(tmp_path):
    workload = Workload((MessageSpec("m0", "TagA", 0, ("RECONSUME_LATER", "RECONSUME_LATER")),))
    run, verdicts = run_and_judge(open_node_consumer, workload, -1, str(tmp_path), "nsmoke")
    # 4.9.8 would send the retry back again; ali-ons' retry wrapper drops the listener's answer (CC-06, declared).
    assert get_observed_fates(run)["m0"] == ObservedFate("m0", (0, 1), "lost")
    assert verdicts["CC-06"] == "deviates" and verdicts["SY-10"] == "deviates", verdicts
