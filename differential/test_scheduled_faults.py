"""The reference under every process fault of a schedule, on both backends: RocketMQ's Java client 4.9.8 runs the
same workload — m0 fails once, m1 succeeds — on the model-backed server and on RocketMQ 4.9.8's own broker while
the fault hits right after m0's first delivery (the broker read-only, the broker killed with SIGKILL and restarted
on its store, the name server stopped and restarted, the client stopped cleanly or killed and started again). Each
run is judged by the checker as any conformance run is (judge_run: its verdicts recorded, an undeclared deviation
fails), so the reference must conform under each, on each backend — no rule deviating, none indefinite, as the run
waits for its recovery by its timers — and the fault must be in the run's history.

Two more runs go through the same checker: the reference's fallback when the read-only broker refuses its send-back
(CC-06, RS-07, RS-09: what the history shows of it), and rocketmq-client-cpp through a broker kill (SY-10). They
replace test_client_faults.py, whose Java probe and cpp run sat outside the harness and wrote no verdict.
"""

from __future__ import annotations

import pytest
from attrs import evolve

from conformance.codec.codes import CONSUMER_SEND_MSG_BACK, ResponseCode
from conformance.codec.headers import SEND_FIELDS
from conformance.harness import SETTINGS, get_fresh_names, judge_run
from conformance.history.records import Run
from conformance.history.workload import (
    SCHEDULED_FAULT_KINDS,
    AfterDelivery,
    AfterMs,
    MessageSpec,
    ScheduledFault,
    Workload,
)
from conformance.runner.backends.model import open_model_backend
from conformance.runner.backends.real_run import open_real_backend
from conformance.runner.clients import cpp, java
from conformance.runner.run import run_workload

DURATION_MS = {"broker_read_only": 2000, "broker_kill": 1000, "namesrv_stop": 3000, "client_restart": 1000,
               "client_kill": 1000}


def make_workload(kind: str) -> Workload:
    fault = ScheduledFault(kind, AfterDelivery("m0", 0), DURATION_MS[kind])
    return Workload((MessageSpec("m0", "TagA", 0, ("RECONSUME_LATER",)), MessageSpec("m1", "TagA")),
                    schedule=(fault,))


def run_judged(open_backend, workload: Workload, open_client, tmp_path) -> tuple[Run, dict]:
    """One judged run of `workload`: the run and its {rule: status} (judge_run raises on a problem)."""
    [kind] = [fault.kind for fault in workload.schedule]
    group, instance = get_fresh_names(f"s{kind[:6]}")
    settings = evolve(SETTINGS, group=group, topic=f"T_{group}")
    tmp_path.mkdir(parents=True, exist_ok=True)
    run = run_workload(open_backend, workload, settings, instance, str(tmp_path), open_client)
    assert [event.kind for event in run.faults if event.kind in SCHEDULED_FAULT_KINDS] == [kind], run.faults
    return run, {v.rule: v.status for v in judge_run(run, repr(workload))}


def run_java(open_backend, kind: str, tmp_path) -> dict:
    """One judged run of `kind`'s workload by the Java client; {rule: status}."""
    run, verdicts = run_judged(open_backend, make_workload(kind), java.open_java_consumer, tmp_path)
    assert {d.uniq_key for d in run.deliveries} == {"m0", "m1"}, run.deliveries
    return verdicts


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


def require(client) -> None:
    if (reason := client.get_unavailable_reason()) is not None:
        pytest.fail(f"the differential env installs {client.__name__}: {reason}")


@pytest.mark.timeout(300)
@pytest.mark.rules("CC-06", "RS-07", "RS-09")
def test_the_reference_falls_back_to_a_plain_send_when_the_read_only_broker_refuses_its_send_back(rocketmq, tmp_path):
    """The broker read-only from the start while m0 fails once: RocketMQ 4.9.8 refuses the send-back (NO_PERMISSION)
    but stores the fallback's plain send to %RETRY% (RS-07: a read-only broker still takes a send whose route
    shows it writeable), and m0 comes back through it: RETRY_TOPIC set, no ORIGIN_MESSAGE_ID (RS-09, the fallback's
    mark), reconsumeTimes 1. The checker judges CC-06 on the same history."""
    require(java)
    workload = Workload((MessageSpec("m0", "TagA", 0, ("RECONSUME_LATER",)),),
                        schedule=(ScheduledFault("broker_read_only", AfterMs(0), 6000),))
    run, verdicts = run_judged(lambda s, w: open_real_backend(rocketmq, s, w), workload, java.open_java_consumer,
                               tmp_path)
    assert verdicts.get("CC-06") == "conforms", verdicts
    sent_back = [r.response_code for r in run.requests if r.code == CONSUMER_SEND_MSG_BACK]
    fallback = [r.response_code for r in run.requests if r.code in SEND_FIELDS["topic"]
                and r.fields.get(SEND_FIELDS["topic"][r.code], "").startswith("%RETRY%")]
    assert (sent_back, fallback) == ([ResponseCode.NO_PERMISSION], [ResponseCode.SUCCESS]), run.requests
    m0 = [(d.reconsume_times, "RETRY_TOPIC" in d.message["properties"], "ORIGIN_MESSAGE_ID" in d.message["properties"])
          for d in run.deliveries]
    assert m0 == [(0, False, False), (1, True, False)], run.deliveries


@pytest.mark.timeout(400)
@pytest.mark.rules("SY-10")
def test_cpp_consumes_every_message_across_a_broker_kill_on_both_backends(rocketmq, tmp_path):
    """rocketmq-client-cpp 1.2.3 with the broker killed (SIGKILL) after the first delivery and restarted on its
    store: every message is consumed at least once (SY-10 conforms, judged from the history and the final read)."""
    require(cpp)
    workload = Workload(tuple(MessageSpec(f"m{i}", "TagA") for i in range(6)),
                        schedule=(ScheduledFault("broker_kill", AfterDelivery("m0", 0), 1000),))
    found = {}
    for backend, open_backend in (("model", open_model_backend),
                                  ("rocketmq-4.9.8", lambda s, w: open_real_backend(rocketmq, s, w))):
        _run, verdicts = run_judged(open_backend, workload, cpp.open_cpp_consumer, tmp_path / backend)
        found[backend] = verdicts.get("SY-10")
    assert found == {"model": "conforms", "rocketmq-4.9.8": "conforms"}
