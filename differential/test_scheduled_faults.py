"""The reference under every process fault of a schedule, on both backends: RocketMQ's Java client 4.9.8 runs the
same workload — m0 fails once, m1 succeeds — on the model-backed server and on RocketMQ 4.9.8's own broker while
the fault hits right after m0's first delivery (the broker read-only, the broker killed with SIGKILL and restarted
on its store, the name server stopped and restarted, the client stopped cleanly or killed and started again). Each
run is judged by the checker as any conformance run is (judge_run: its verdicts recorded, an undeclared deviation
fails), so the reference must conform under each, on each backend — no rule deviating, none indefinite, as the run
waits for its recovery by its timers — and the fault must be in the run's history.

These replace the crash and name-server checks of test_client_faults.py that ran a separate probe outside the
harness: those asserted at-least-once and wrote no verdict.
"""

from __future__ import annotations

import pytest
from attrs import evolve

from conformance.harness import SETTINGS, get_fresh_names, judge_run
from conformance.history.workload import SCHEDULED_FAULT_KINDS, AfterDelivery, MessageSpec, ScheduledFault, Workload
from conformance.runner.backends.model import open_model_backend
from conformance.runner.backends.real_run import open_real_backend
from conformance.runner.clients import java
from conformance.runner.run import run_workload

DURATION_MS = {"broker_read_only": 2000, "broker_kill": 1000, "namesrv_stop": 3000, "client_restart": 1000,
               "client_kill": 1000}


def make_workload(kind: str) -> Workload:
    fault = ScheduledFault(kind, AfterDelivery("m0", 0), DURATION_MS[kind])
    return Workload((MessageSpec("m0", "TagA", 0, ("RECONSUME_LATER",)), MessageSpec("m1", "TagA")),
                    schedule=(fault,))


def run_java(open_backend, kind: str, tmp_path) -> dict:
    """One judged run of `kind`'s workload by the Java client; {rule: status} (judge_run raises on a problem)."""
    group, instance = get_fresh_names(f"s{kind[:6]}")
    settings = evolve(SETTINGS, group=group, topic=f"T_{group}")
    tmp_path.mkdir(parents=True, exist_ok=True)
    workload = make_workload(kind)
    run = run_workload(open_backend, workload, settings, instance, str(tmp_path), java.open_java_consumer)
    assert [event.kind for event in run.faults if event.kind in SCHEDULED_FAULT_KINDS] == [kind], run.faults
    assert {d.uniq_key for d in run.deliveries} == {"m0", "m1"}, run.deliveries
    return {v.rule: v.status for v in judge_run(run, repr(workload))}


@pytest.mark.timeout(400)
@pytest.mark.parametrize("kind", sorted(DURATION_MS))
def test_the_reference_conforms_under_a_scheduled_fault_on_both_backends(rocketmq, kind, tmp_path):
    if (reason := java.get_unavailable_reason()) is not None:
        pytest.fail(f"the differential env installs the Java client: {reason}")
    on_model = run_java(open_model_backend, kind, tmp_path / "model")
    on_real = run_java(lambda s, w: open_real_backend(rocketmq, s, w), kind, tmp_path / "real")
    unsettled = {backend: sorted(f"{rule} {status}" for rule, status in found.items()
                                 if status in ("deviates", "indefinite"))
                 for backend, found in (("model", on_model), ("rocketmq-4.9.8", on_real))}
    # Nothing indefinite either: the run waited as long as the reference's timers say it may take to be back.
    assert unsettled == {"model": [], "rocketmq-4.9.8": []}
