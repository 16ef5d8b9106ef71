"""A scheduled client kill under RocketMQ's Java client 4.9.8 (the reference) on the model-backed server: the adapter
JVM is killed with SIGKILL right after the first delivery and started again a second later; every message is still
consumed (at-least-once: a copy whose offset was not committed comes again) and the run is judged without an
undeclared deviation."""

from __future__ import annotations

import pytest
from attrs import evolve

from conformance.harness import SETTINGS, get_fresh_names, judge_run
from conformance.history.workload import AfterDelivery, MessageSpec, ScheduledFault, Workload
from conformance.runner.backends.model import open_model_backend
from conformance.runner.clients.java import get_unavailable_reason, open_java_consumer
from conformance.runner.run import run_workload

pytestmark = [pytest.mark.conformance, pytest.mark.timeout(120),
              pytest.mark.skipif(get_unavailable_reason() is not None, reason=str(get_unavailable_reason()))]


def test_a_java_client_killed_after_its_first_delivery_consumes_every_message(tmp_path):
    kill = ScheduledFault("client_kill", AfterDelivery("m0", 0), 1000)
    workload = Workload((MessageSpec("m0"), MessageSpec("m1", script=("RECONSUME_LATER",))), schedule=(kill,))
    group, instance = get_fresh_names("jkill")
    run = run_workload(open_model_backend, workload, evolve(SETTINGS, group=group), instance, str(tmp_path),
                       open_java_consumer)
    (event,) = [event for event in run.faults if event.kind == "client_kill"]
    assert event.target == "after m0 delivery 0" and event.end_ms - event.time_ms >= 1000
    first = min(d.time_ms for d in run.deliveries if d.uniq_key == "m0")
    assert first <= event.time_ms
    consumed = {d.uniq_key for d in run.deliveries if workload.is_success(d.status)}
    assert consumed == {"m0", "m1"}, [(d.uniq_key, d.reconsume_times, d.status) for d in run.deliveries]
    judge_run(run, f"{workload!r}")
