"""The differential check: each message's reconsumeTimes sequence and fate against what RocketMQ 4.9.8's client
does with the same workload (conformance/checker/predict.py), and the oracle's invariants over the run."""

from __future__ import annotations

import functools

from attrs import evolve

from conformance.checker.checks import get_batch_verdict, get_late_retries, get_swallowed_keys, get_unsent_keys
from conformance.checker.mechanisms import (
    get_hit_faults,
    get_observed_fates,
    get_wire_send_back_faults,
    has_failed_send_back,
    has_refused_send_back,
)
from conformance.checker.observe import check_invariants, get_arrival_order
from conformance.checker.predict import Prediction, predict
from conformance.codec.codes import CONSUMER_SEND_MSG_BACK
from conformance.codec.headers import SEND_FIELDS
from conformance.history.records import Run, RunSettings
from conformance.history.workload import REDELIVERING_FAULT_KINDS

INVARIANT_RULES = ("SY-04", "SY-05", "SY-06", "SY-09", "SY-10")

# The rules a difference of fates against the model is attributed to (get_differential_verdicts).
DIFFERENTIAL_RULES = ("CC-02", "CC-04", "CC-06", "CC-07", "OR-04", "OR-07", "SY-05")

def get_difference_rules(run: Run, key: str, seen, get_adjusted) -> list[str]:
    """The rules a difference of `key`'s outcome from the 4.9.8 client's is filed under, read from the history: a
    failure read as a success (CC-04 raised, OR-04 orderly, CC-06 RECONSUME_LATER), a send-back that failed (CC-06;
    refused for want of permission, CC-07 too: Java would retry locally), orderly local retries (OR-07), a batch
    sent back whole (CC-02), the broker's retryMaxTimes in place of the client's 16 (SY-05: the model with
    maxReconsumeTimes = retryMaxTimes predicts it); anything else is DIFF, which no declaration covers."""
    if key in get_swallowed_keys(run):
        return ["CC-04" if run.workload.mode == "concurrently" else "OR-04"]
    if key in get_unsent_keys(run):
        return ["CC-06"]  # a RECONSUME_LATER read as a success: neither sent back nor retried
    if has_failed_send_back(run, key) and run.workload.mode == "concurrently":
        # RS-14 is judged only where the fates match (get_fault_verdict): a difference under its fault is CC-06's,
        # since a client that keeps its counter and one that loses the retried copy differ the same way here.
        return ["CC-06", "CC-07"] if has_refused_send_back(run, key) else ["CC-06"]
    if run.workload.mode == "orderly":
        return ["OR-07"]
    if not seen.reconsume_times and any(not run.workload.is_success(d.status) for d in run.deliveries):
        return ["CC-02"]  # never shown: it shared a pulled batch with a failure (sent back or, broadcasting, dropped)
    if is_same_outcome(run, seen, get_adjusted()[key]):
        return ["SY-05"]
    batch = get_batch_verdict(run)
    return ["CC-02"] if batch and batch[0] == "deviates" else ["DIFF"]


def get_differential_verdicts(run: Run, prediction: Prediction) -> dict[str, tuple[str, str, frozenset]]:
    """Each message's reconsumeTimes sequence and fate against the 4.9.8 client's: (status, detail, keys) per rule a
    difference is filed under (get_difference_rules). A message whose fate is indefinite (the broker still holds it)
    is no deviation: SY-10 is then "indefinite" unless another message deviates."""
    observed = get_observed_fates(run)
    get_adjusted = functools.cache(lambda: predict_with_group_max(run).fates)
    verdicts: dict[str, tuple[str, str, frozenset]] = {}
    for key, expected in prediction.fates.items():
        seen = observed[key]
        if is_same_outcome(run, seen, expected):
            continue
        difference = (f"{key}: reconsumeTimes {seen.reconsume_times} fate {seen.fate}; 4.9.8 client: "
                      f"{expected.reconsume_times} fate {expected.fate}")
        status = "indefinite" if seen.fate == "indefinite" else "deviates"
        rules = ["SY-10"] if status == "indefinite" else get_difference_rules(run, key, seen, get_adjusted)
        for rule in rules:
            before = verdicts.get(rule, ("indefinite", "", frozenset()))
            merged = "deviates" if "deviates" in (before[0], status) else "indefinite"
            verdicts[rule] = (merged, "; ".join(filter(None, [before[1], difference])), before[2] | {key})
    return verdicts


def is_same_outcome(run: Run, seen, expected) -> bool:
    """Same fate, and — unless the client restarted, which may deliver again what it had not committed — the
    same reconsumeTimes sequence. A restarted BROADCASTING instance starts a queue it had stored no offset for at
    the queue's end [RB-04], so a message stored there meanwhile may never be delivered; and a copy a restarted
    client delivered again (the same reconsumeTimes twice: its offset was not persisted, RB-06) forks the
    message's lineage, so its outcome script's answers fall on other deliveries than the prediction's. Both depend
    on timing the prediction (one instance throughout) does not model: such a message is judged by the Ledger's
    invariants only.

    A scheduled fault that may redeliver (history/workload.py's REDELIVERING_FAULT_KINDS, read from `run.faults`:
    a client restarted or killed, the broker killed) is judged as a restart is: a copy delivered again takes one more
    answer of its outcome script, so a script (SUCCESS, RECONSUME_LATER, ...) killed before its commit may end in
    the DLQ where the prediction consumes it; both are at-least-once, and the Ledger's invariants (SY-10 among
    them) judge that message, unrelaxed."""
    if run.workload.restart_after is not None or has_redelivering_fault(run):
        skipped = run.workload.model == "broadcasting" and not seen.reconsume_times and expected.fate == "consumed"
        forked = len(set(seen.reconsume_times)) < len(seen.reconsume_times)
        return skipped or forked or seen.fate == expected.fate
    return (seen.reconsume_times, seen.fate) == (expected.reconsume_times, expected.fate)


def has_redelivering_fault(run: Run) -> bool:
    """A scheduled fault after which the client may legitimately deliver a copy again (a client restarted or
    killed, the broker killed: an offset not yet committed, or lost), as the run recorded it."""
    return any(event.kind in REDELIVERING_FAULT_KINDS for event in run.faults)


def predict_run(run: Run, settings: RunSettings | None = None) -> Prediction:
    """The 4.9.8 client's prediction of the run's workload (with `settings`, else the run's), its delayed messages
    reaching their queues in the order the run's broker stored them (predict's `arrival`), and each send-back the
    broker failed on its own failing there too (get_wire_send_back_faults)."""
    workload = run.workload
    if extra := get_wire_send_back_faults(run):
        workload = evolve(workload, faults=(*workload.faults, *extra))
    return predict(workload, settings or run.settings, get_arrival_order(run))

def predict_with_group_max(run: Run) -> Prediction:
    """The 4.9.8 client with maxReconsumeTimes = the group's retryMaxTimes: what SB-09's deviation implies."""
    return predict_run(run, evolve(run.settings, max_reconsume_times=run.settings.retry_max_times))

def get_applied_max(run: Run) -> int:
    """The maximum the broker applied to this client: the maxReconsumeTimes of its first send-back header, else of
    its first own send to %RETRY% (an orderly give-up, or the fallback), else the group's retryMaxTimes."""
    for request in run.requests:
        if request.code == CONSUMER_SEND_MSG_BACK:
            sent = request.fields.get("maxReconsumeTimes")
        elif request.fields.get(SEND_FIELDS["topic"].get(request.code, ""), "").startswith("%RETRY%"):
            sent = request.fields.get(SEND_FIELDS["maxReconsumeTimes"][request.code])
        else:
            continue
        if sent is not None:
            return int(sent)
    return run.settings.retry_max_times

def get_invariant_verdicts(run: Run, prediction: Prediction) -> dict[str, tuple[str, str, frozenset]]:
    """[SY-04] [SY-05] [SY-06] [SY-09] [SY-10] the oracle's Ledger over the run, with the maximum the broker
    applied (get_applied_max), plus SY-06's late bound: (status, detail, the keys concerned) per rule."""
    failures = check_invariants(run, get_applied_max(run))
    late = get_late_retries(run)
    if late:
        failures.setdefault("SY-06", []).extend((text, key) for key, text in late)
    verdicts = {rule: ("deviates", "; ".join(text for text, _key in found), frozenset(key for _text, key in found))
                for rule, found in failures.items()}
    for rule in INVARIANT_RULES:
        verdicts.setdefault(rule, ("conforms", "oracle/system_oracle.Ledger holds", frozenset()))
    return verdicts


def get_fault_verdict(kinds: tuple[str, ...], what: str, on_wire: bool = False):
    """[CC-06] [CC-07] A send-back fault of `kinds` hit (with `on_wire`, or the wire shows a failed delivery's
    send-back answered with an error or not at all, whatever caused it: the read-only broker's own NO_PERMISSION),
    no restart after it, and every message's reconsumeTimes and fate are the 4.9.8 client's: `what` happened as it
    does (a deviation is the differential check's)."""

    def check(run: Run, prediction: Prediction) -> tuple[str, str] | None:
        hit = {f.key for f in get_hit_faults(run) if f.kind in kinds}
        if on_wire:
            hit |= {d.uniq_key for d in run.deliveries
                    if not run.workload.is_success(d.status) and has_failed_send_back(run, d.uniq_key)}
        if run.workload.mode != "concurrently" or run.workload.model != "clustering" or not hit \
                or run.workload.restart_after is not None or has_deviation(run, prediction):
            return None
        return "conforms", f"failed send-backs of {len(hit)} messages: {what}"

    return check

def get_orderly_answers_verdict(auto_commit: bool):
    """[OR-05] [OR-06] An orderly listener answered COMMIT or ROLLBACK with autoCommit on (read as SUCCESS), or
    turned autoCommit off, and every message's reconsumeTimes and fate are the 4.9.8 client's (a deviation is
    the differential check's, filed under OR-07)."""

    def check(run: Run, prediction: Prediction) -> tuple[str, str] | None:
        answers = {d.status for d in run.deliveries}
        if run.workload.mode != "orderly" or run.workload.auto_commit is not auto_commit or not answers \
                or (auto_commit and not answers & {"COMMIT", "ROLLBACK"}) or has_deviation(run, prediction):
            return None
        return "conforms", f"autoCommit {str(auto_commit).lower()}, answers {sorted(answers)} applied as 4.9.8 does"

    return check


def has_deviation(run: Run, prediction: Prediction) -> bool:
    """Some message's outcome deviates from the 4.9.8 client's (an indefinite one does not)."""
    return any(status == "deviates" for status, _detail, _keys in get_differential_verdicts(run, prediction).values())
