"""Rule x client verdicts of one run: the invariants of properties/ over what the client did, and the differential
check of the model's prediction of the client half (conformance/checker/predict.py) against it.

A verdict is "conforms", "deviates" (with the shrunk workload and the wire trace), "not applicable" or "not judged"
(conformance/checker/rules.py says why, per rule). What is
deterministic is compared exactly — the send-back header's fields, each message's reconsumeTimes sequence and fate
— and timing as bounds (observe.EARLY_TOLERANCE_MS early; LATE_BOUND_MS late). `check_declarations` turns the
verdicts into failures: an undeclared deviation, or a declared one (conformance/checker/deviations.py) that its run
should have shown and did not.
"""

from __future__ import annotations

from attrs import evolve, frozen

from conformance.checker.checks import (
    get_batch_verdict,
    get_broadcasting_verdict,
    get_default_max_verdict,
    get_exception_verdict,
    get_header_verdict,
    get_listener_view_verdict,
    get_orderly_retry_verdict,
    get_persist_verdict,
)
from conformance.checker.deviations import DECLARED, NOT_APPLICABLE, get_causes
from conformance.checker.differential import (
    get_differential_verdicts,
    get_fault_verdict,
    get_invariant_verdicts,
    get_orderly_answers_verdict,
)
from conformance.checker.lifecycle import get_orderly_poison_verdict, get_shutdown_verdict, get_suspend_verdict
from conformance.checker.predict import Prediction
from conformance.checker.rules import NOT_JUDGED
from conformance.checker.wire_checks import WIRE_CHECKS
from conformance.history.records import Run
from conformance.history.workload import SEND_BACK_FAULT_KINDS


@frozen
class Verdict:
    """One rule's verdict for one client over one run. `keys`: the messages a deviation or an indefinite verdict is
    about ("" stands for the run as a whole: a header, a flag); `cause`: the declared causes that explain a
    deviation (conformance/checker/deviations.py), empty for an undeclared one."""

    rule: str
    client: dict
    status: str  # conforms | deviates | indefinite | not applicable | not judged
    detail: str = ""
    counterexample: str = ""
    trace: tuple[str, ...] = ()
    keys: tuple[str, ...] = ()
    cause: str = ""
    backend: str = ""

    @property
    def client_key(self) -> tuple[str, str]:
        return self.client["name"], self.client["version"]


# A rule's findings from several checks of one run merge to the strongest: one deviation makes it deviate.
RUN_STRENGTH = ("conforms", "indefinite", "deviates")


def merge_finding(before: tuple | None, after: tuple | None) -> tuple | None:
    """Two (status, detail, keys) findings of one rule as one: the stronger status (RUN_STRENGTH); equal ones join
    their details and keys. A deviation without keys is about the run as a whole ("")."""
    findings = [normalise_finding(f) for f in (before, after) if f is not None]
    if len(findings) < 2:
        return findings[0] if findings else None
    (status_a, detail_a, keys_a), (status_b, detail_b, keys_b) = findings
    rank_a, rank_b = RUN_STRENGTH.index(status_a), RUN_STRENGTH.index(status_b)
    if rank_a != rank_b:
        return findings[0] if rank_a > rank_b else findings[1]
    if status_a == "conforms":
        return findings[1]
    return status_a, "; ".join(filter(None, [detail_a, detail_b])), keys_a | keys_b


def normalise_finding(finding: tuple) -> tuple[str, str, frozenset]:
    status, detail, *rest = finding
    keys = frozenset(rest[0]) if rest else frozenset()
    return status, detail, keys or (frozenset({""}) if status == "deviates" else frozenset())


def ignore_prediction(check):
    return lambda run, _prediction: check(run)

CHECKS = {"SB-09": get_header_verdict, "CC-02": lambda run, _p: get_batch_verdict(run),
          "CC-04": lambda run, _p: get_exception_verdict(run), "CC-05": lambda run, _p: get_listener_view_verdict(run),
          "RB-05": lambda run, _p: get_persist_verdict(run),
          "CC-09": lambda run, _p: get_broadcasting_verdict(run),
          "SY-08": lambda run, _p: get_broadcasting_verdict(run),
          "OR-07": get_orderly_retry_verdict, "CFG-02": get_default_max_verdict,
          "CC-06": get_fault_verdict(SEND_BACK_FAULT_KINDS,
                                     "each message came back as the 4.9.8 client's (fallback send, else local retry)",
                                     on_wire=True),
          "CC-07": get_fault_verdict(("broker_not_writeable",), "the fallback failed too; retried locally 5 s later"),
          "RS-14": get_fault_verdict(("fallback_first_refused",),
                                     "the fallback's first attempt was refused; its producer retry restarted "
                                     "reconsumeTimes at 0"),
          "OR-05": get_orderly_answers_verdict(True), "OR-06": get_orderly_answers_verdict(False),
          "CFG-04": get_suspend_verdict, "OR-15": get_orderly_poison_verdict,
          "RB-07": lambda run, _p: get_shutdown_verdict(run),
          **{rule: ignore_prediction(check) for rule, check in WIRE_CHECKS.items()}}

def get_client(run: Run) -> dict:
    return {"name": run.client.get("name"), "version": run.client.get("version"),
            "binding": f"{run.client.get('binding', '')} {run.client.get('bindingVersion', '')}".strip()}

def get_found(run: Run, prediction: Prediction) -> dict[str, tuple[str, str, frozenset]]:
    """(status, detail, keys) per judged rule: the oracle's invariants, every check and the differential check,
    merged by merge_finding."""
    found: dict[str, tuple] = dict(get_invariant_verdicts(run, prediction))
    for rule, check in CHECKS.items():
        found[rule] = merge_finding(found.get(rule), check(run, prediction))
    for rule, finding in get_differential_verdicts(run, prediction).items():
        found[rule] = merge_finding(found.get(rule), finding)
    return {rule: finding for rule, finding in found.items() if finding is not None}


def judge(run: Run, prediction: Prediction, counterexample: str = "") -> list[Verdict]:
    """Every rule x client verdict of one run: a rule the client lacks is "not applicable" (no check of it runs),
    one no run can judge is "not judged", each with the reason."""
    client = get_client(run)
    key = (client["name"], client["version"])
    absent = {rule: why for (rule, who), why in NOT_APPLICABLE.items() if who == key}
    trace = tuple(format_request(r) for r in run.requests)
    verdicts = [Verdict(rule, client, status, detail, counterexample if status == "deviates" else "",
                        trace if status == "deviates" else (), tuple(sorted(keys)), backend=run.backend)
                for rule, (status, detail, keys) in sorted(get_found(run, prediction).items()) if rule not in absent]
    verdicts += [Verdict(rule, client, "not applicable", why, backend=run.backend)
                 for rule, why in sorted(absent.items())]
    verdicts += [Verdict(rule, client, "not judged", why, backend=run.backend)
                 for rule, why in sorted(NOT_JUDGED.items()) if rule not in absent]
    return verdicts


def format_request(request) -> str:
    answer = "no response" if request.response_code is None else f"-> {request.response_code}"
    return f"{request.time_ms:.0f} ms conn {request.connection} code {request.code} flag {request.flag} " \
           f"{request.fields} {answer}"

def explain_deviations(verdicts: list[Verdict], run: Run, declared=DECLARED) -> tuple[list[Verdict], list[str]]:
    """Each deviation with the declared causes (`declared`: the 4.x clients' by default) that explain it, and the
    problems of the run: a message (or the run, "") whose deviation no declared cause of that rule and client
    explains — a new cause never hides behind an old declaration — and a declared deviation whose `when` holds for
    this run but that did not happen."""
    explained, problems = [], []
    deviating = {v.rule for v in verdicts if v.status == "deviates"}
    for verdict in verdicts:
        if verdict.status != "deviates":
            explained.append(verdict)
            continue
        causes = set()
        for key in verdict.keys or ("",):
            found = get_causes(verdict.rule, verdict.client_key, run, key, declared)
            if not found:
                problems.append(f"undeclared deviation of {verdict.rule} by {verdict.client_key} for "
                                f"{key or 'the run'} (no declared cause explains it): {verdict.detail}")
            causes.update(found)
        explained.append(evolve(verdict, cause="; ".join(sorted(causes))))
    client = verdicts[0].client_key if verdicts else None
    for deviation in declared:
        if deviation.client == client and deviation.when is not None and deviation.when(run) \
                and deviation.rule not in deviating:
            problems.append(f"declared deviation of {deviation.rule} by {client} did not happen: {deviation.claim}")
    return explained, problems


def check_declarations(verdicts: list[Verdict], run: Run) -> list[str]:
    """The problems of one run (explain_deviations)."""
    return explain_deviations(verdicts, run)[1]
