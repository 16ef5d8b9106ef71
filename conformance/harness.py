"""What a conformance test does with one run: predict, judge, record, and fail on an undeclared or vanished
deviation with the run's trace. Shared by the smoke test (tests/conformance/) and the full run (conformance/suite/).
"""

from __future__ import annotations

import uuid

from attrs import evolve

from conformance.checker.differential import predict_run
from conformance.checker.pop_verdicts import find_pop_problems
from conformance.checker.verdicts import explain_deviations, judge
from conformance.history.records import Run, RunSettings
from conformance.report import record_findings, record_verdicts

# The broker settings of every conformance run: a delay table of 1 s steps (retries start at level 3) and a small
# group retryMaxTimes, so a poison message reaches the DLQ in seconds. The real broker's unit is also the second.
SETTINGS = RunSettings(retry_max_times=2, message_delay_level=" ".join(["1s"] * 18))


def get_fresh_names(prefix: str) -> tuple[str, str]:
    """A fresh group and instance name per run: a real client cannot be rolled back."""
    tag = uuid.uuid4().hex[:10]
    return f"{prefix}_{tag}", f"{prefix}-{tag}"


# Server findings that mean the harness, not the client, failed: the run cannot be judged.
HARNESS_FAULTS = ("bad-frame", "handler-error", "timer-stuck")


def find_problems(run: Run, counterexample: str = "") -> tuple[list, list[str]]:
    """Every verdict of `run` (its deviations with their declared causes) and the run's problems: an undeclared or
    vanished deviation, and a server finding that means the harness failed. Records nothing."""
    verdicts, problems = explain_deviations(judge(run, predict_run(run), counterexample), run)
    problems += [f"the server could not serve the client: {f}" for f in run.findings if f["kind"] in HARNESS_FAULTS]
    return verdicts, problems


def judge_run(run: Run, counterexample: str) -> list:
    """Every verdict of `run`, recorded; raises AssertionError naming each problem and the wire trace. A request the
    server does not support is recorded as a finding; a frame it could not read or a handler that raised fails the
    run."""
    verdicts, problems = find_problems(run, counterexample)
    record_verdicts(verdicts)
    record_findings(run)
    if problems:
        deliveries = [f"{d.time_ms:.0f} ms {d.uniq_key} r={d.reconsume_times} -> {d.status}" for d in run.deliveries]
        trace = [verdict.trace for verdict in verdicts if verdict.trace][:1]
        raise AssertionError("\n".join([*problems, "deliveries:", *deliveries, "wire:", *(trace[0] if trace else [])]))
    return verdicts


def judge_pop_run(run, counterexample: str = "") -> list:
    """Every verdict of a 5.x run (conformance/checker/pop_verdicts.py), recorded with the workload as the
    counterexample of a deviation; raises AssertionError naming each problem and the deliveries."""
    verdicts, problems = find_pop_problems(run)
    record_verdicts([evolve(v, counterexample=counterexample) if v.status == "deviates" else v for v in verdicts])
    if problems:
        deliveries = [f"{d.time_ms - run.sent_ms:.0f} ms {d.uniq_key} attempt "
                      f"{d.message.get('deliveryAttempt', d.reconsume_times + 1)} -> {run.get_answer(d)}"
                      for d in run.deliveries]
        settled = [f"{s.time_ms - run.sent_ms:.0f} ms delivery {s.number} {s.action} {s.code}" for s in run.settlements]
        raise AssertionError("\n".join([*problems, "deliveries:", *deliveries, "settled:", *settled,
                                        f"final: {run.final}"]))
    return verdicts
