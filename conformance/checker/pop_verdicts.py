"""Rule x client verdicts of one 5.x run (a `PopRun`): which 5.x rules each consumer API is judged on, and why not
the others, then conforms / deviates / indefinite from conformance/checker/pop_checks.py, and each deviation
explained by the declared causes of conformance/checker/deviations5.py (verdicts.explain_deviations: an undeclared
one, or a declared one whose `when` held and that did not show, is a problem of the run).

The APIs: "simple" (a gRPC SimpleConsumer: receive, ack, changeInvisibleDuration), "push" (a gRPC PushConsumer: the
client acks, nacks with its backoff and, FIFO, forwards to the DLQ itself), "pop" (the 5.x remoting push consumer
in POP mode: no proxy, its own retry rules, chapter 18).
"""

from __future__ import annotations

from conformance.checker.deviations5 import DECLARED5, NOT_APPLICABLE5
from conformance.checker.pop_checks import POP_CHECKS
from conformance.checker.verdicts import Verdict, explain_deviations, normalise_finding
from conformance.history.pop_records import PopRun
from conformance.history.pop_workload import RESTART_KINDS

REMOTING_ONLY = "the remoting POP consumer's own retry rule (chapter 18): a gRPC client has the proxy instead"
NO_AUTO_RENEW = "only a gRPC push consumer receives with auto-renew: the proxy renews nothing else (PD-07)"
NEVER_PULLS = ("a gRPC consumer never pulls, so it has no send-back road beside POP: its retries are the proxy's "
               "(PC-04 is judged for the remoting consumer, pulling and popping in one group)")
# Rule -> why an API is not judged on it: {api: {rule: why}}.
NOT_FOR_API: dict[str, dict[str, str]] = {
    "simple": {"RP-03": "a SimpleConsumer chooses every invisible duration itself: it has no backoff",
               **{f"PC-0{n}": REMOTING_ONLY for n in (1, 2, 3)}, "PC-04": NEVER_PULLS, "PD-07": NO_AUTO_RENEW},
    "push": {"PG-03": "the push consumer's nack duration is not on record (the harness does not record gRPC): its "
                      "retries are judged against its backoff (RP-03)",
             **{f"PC-0{n}": REMOTING_ONLY for n in (1, 2, 3)}, "PC-04": NEVER_PULLS},
    "pop": {"PG-02": "no proxy in front of the remoting POP consumer: it never dead-letters (PC-02)",
            "PD-07": NO_AUTO_RENEW,
            "RP-03": "the remoting POP consumer reads no group retry policy: its POP delay table (PC-01) instead",
            "FF-02": "RocketMQ 5.3.3's remoting consumer never pops orderly: an orderly listener makes it rebalance on "
                     "the client and pull (RebalancePushImpl.clientRebalance, \"POPTODO order pop consume not "
                     "implement yet\"), its retry then 4.x's orderly one (chapter 12)"},
}
NOT_JUDGED5: dict[str, str] = {}
# Rule -> why the harness does not judge an API on it yet: {api: {rule: why}}.
NOT_JUDGED_FOR_API: dict[str, dict[str, str]] = {}


def get_client(run: PopRun) -> dict:
    return {"name": run.client.get("name"), "version": run.client.get("version"), "api": run.client.get("api"),
            "protocol": "5.x remoting POP" if run.workload.api == "pop" else "5.x gRPC"}


def judge_pop(run: PopRun) -> list[Verdict]:
    """Every 5.x rule x client verdict of one run: judged, not applicable (the API or the client lacks it), or not
    judged, each with its reason."""
    client = get_client(run)
    key = (client["name"], client["version"])
    absent = {**NOT_FOR_API[run.workload.api],
              **{rule: why for (rule, who), why in NOT_APPLICABLE5.items() if who == key}}
    verdicts = []
    for rule, check in sorted(POP_CHECKS.items()):
        if rule in absent or rule in NOT_JUDGED_FOR_API.get(run.workload.api, {}):
            continue
        found = check(run)
        if found is not None:
            status, detail, keys = normalise_finding(found)
            verdicts.append(Verdict(rule, client, status, detail, keys=tuple(sorted(keys)), backend=run.backend))
    verdicts += [Verdict(rule, client, "not applicable", why, backend=run.backend)
                 for rule, why in sorted(absent.items())]
    skipped = {**NOT_JUDGED5, **NOT_JUDGED_FOR_API.get(run.workload.api, {})}
    verdicts += [Verdict(rule, client, "not judged", why, backend=run.backend) for rule, why in sorted(skipped.items())]
    return verdicts


def find_pop_problems(run: PopRun) -> tuple[list[Verdict], list[str]]:
    """The run's verdicts with their causes, and its problems: an undeclared or vanished deviation, an adapter
    error other than a start-up one."""
    verdicts, problems = explain_deviations(judge_pop(run), run, DECLARED5)
    problems += [f"adapter error: {error}" for error in run.errors if not is_fault_stop_error(run, error)]
    return verdicts, problems


def is_fault_stop_error(run: PopRun, error: str) -> bool:
    """A client's shutdown that failed after the proxy restarted under it (its connection still backing off: the
    termination notice finds no proxy): a consequence of the fault, recorded with the run's errors, no problem."""
    return error.startswith("shutdown:") and any(fault.kind in RESTART_KINDS for fault in run.faults)
