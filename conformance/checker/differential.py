"""The differential check: each message's reconsumeTimes sequence and fate against what RocketMQ 4.9.8's client
does with the same workload (conformance/checker/predict.py), and the oracle's invariants over the run."""

from __future__ import annotations

from attrs import evolve

from conformance.checker.checks import get_batch_verdict, get_late_retries, get_swallowed_keys, get_unsent_keys
from conformance.checker.deviations import get_hit_faults
from conformance.checker.mechanisms import get_observed_fates
from conformance.checker.observe import check_invariants, get_arrival_order
from conformance.checker.predict import Prediction, predict
from conformance.codec.codes import CONSUMER_SEND_MSG_BACK
from conformance.history.records import Run, RunSettings

INVARIANT_RULES = ("SY-04", "SY-05", "SY-06", "SY-09", "SY-10")

# The rules a difference of fates against the model is attributed to (get_differential_verdicts).
DIFFERENTIAL_RULES = ("CC-02", "CC-04", "CC-06", "CC-07", "OR-04", "OR-07", "SY-05")

def get_differential_verdicts(run: Run, prediction: Prediction) -> dict[str, tuple[str, str]]:
    """Each message's reconsumeTimes sequence and fate against the 4.9.8 client's, by the rule that explains a
    difference: a send-back fault (CC-06, CC-07), orderly local retries (OR-07), the broker's retryMaxTimes in
    place of the client's 16 (SY-05: the model with maxReconsumeTimes = retryMaxTimes predicts it), a batch sent
    back whole (CC-02); anything else is DIFF, which no declaration covers."""
    observed = get_observed_fates(run)
    adjusted = None
    verdicts: dict[str, tuple[str, str]] = {}
    for key, expected in prediction.fates.items():
        seen = observed[key]
        if is_same_outcome(run, seen, expected):
            continue
        difference = (f"{key}: reconsumeTimes {seen.reconsume_times} fate {seen.fate}; 4.9.8 client: "
                      f"{expected.reconsume_times} fate {expected.fate}")
        hit = {fault.kind for fault in get_hit_faults(run) if fault.key == key}
        rules = []
        if key in get_swallowed_keys(run):
            rule = "CC-04" if run.workload.mode == "concurrently" else "OR-04"
        elif key in get_unsent_keys(run):
            rule = "CC-06"  # a RECONSUME_LATER read as a success: neither sent back nor retried
        elif hit and run.workload.mode == "concurrently":
            # A failed send-back is dropped (CC-06); with the broker not writeable Java would also retry locally.
            # RS-14 is judged only where the fates match (get_fault_verdict): a difference under its fault is CC-06's,
            # since a client that keeps its counter and one that loses the retried copy differ the same way here.
            rule, rules = "CC-06", ["CC-07"] if "broker_not_writeable" in hit else []
        elif run.workload.mode == "orderly":
            rule = "OR-07"
        elif not seen.reconsume_times and any(not run.workload.is_success(d.status) for d in run.deliveries):
            rule = "CC-02"  # never shown: it shared a pulled batch with a failure (sent back or, broadcasting, dropped)
        else:
            if adjusted is None:
                adjusted = predict_with_group_max(run).fates
            same = is_same_outcome(run, seen, adjusted[key])
            batch = get_batch_verdict(run)
            rule = "SY-05" if same else "CC-02" if batch and batch[0] == "deviates" else "DIFF"
        for each in (rule, *rules):
            verdicts[each] = ("deviates", "; ".join(filter(None, [verdicts.get(each, ("", ""))[1], difference])))
    return verdicts

def is_same_outcome(run: Run, seen, expected) -> bool:
    """Same fate, and — unless the client restarted, which may deliver again what it had not committed — the
    same reconsumeTimes sequence. A restarted BROADCASTING instance starts a queue it had stored no offset for at
    the queue's end [RB-04], so a message stored there meanwhile may never be delivered; and a copy a restarted
    client delivered again (the same reconsumeTimes twice: its offset was not persisted, RB-06) forks the
    message's lineage, so its outcome script's answers fall on other deliveries than the prediction's. Both depend
    on timing the prediction (one instance throughout) does not model: such a message is judged by the Ledger's
    invariants only."""
    if run.workload.restart_after is not None:
        skipped = run.workload.model == "broadcasting" and not seen.reconsume_times and expected.fate == "consumed"
        forked = len(set(seen.reconsume_times)) < len(seen.reconsume_times)
        return skipped or forked or seen.fate == expected.fate
    return (seen.reconsume_times, seen.fate) == (expected.reconsume_times, expected.fate)

def predict_run(run: Run, settings: RunSettings | None = None) -> Prediction:
    """The 4.9.8 client's prediction of the run's workload (with `settings`, else the run's), its delayed messages
    reaching their queues in the order the run's broker stored them (predict's `arrival`)."""
    return predict(run.workload, settings or run.settings, get_arrival_order(run))

def predict_with_group_max(run: Run) -> Prediction:
    """The 4.9.8 client with maxReconsumeTimes = the group's retryMaxTimes: what SB-09's deviation implies."""
    return predict_run(run, evolve(run.settings, max_reconsume_times=run.settings.retry_max_times))

# SEND_MESSAGE and SEND_MESSAGE_V2 (whose header fields are single letters: b topic, l maxReconsumeTimes).
SEND_CODES = {10: ("topic", "maxReconsumeTimes"), 310: ("b", "l")}

def get_applied_max(run: Run) -> int:
    """The maximum the broker applied to this client: the maxReconsumeTimes of its first send-back header, else of
    its first own send to %RETRY% (an orderly give-up, or the fallback), else the group's retryMaxTimes."""
    for request in run.requests:
        if request.code == CONSUMER_SEND_MSG_BACK:
            sent = request.fields.get("maxReconsumeTimes")
        elif request.code in SEND_CODES and request.fields.get(SEND_CODES[request.code][0], "").startswith("%RETRY%"):
            sent = request.fields.get(SEND_CODES[request.code][1])
        else:
            continue
        if sent is not None:
            return int(sent)
    return run.settings.retry_max_times

def get_invariant_verdicts(run: Run, prediction: Prediction) -> dict[str, tuple[str, str]]:
    """[SY-04] [SY-05] [SY-06] [SY-09] [SY-10] properties' Ledger over the run, with the maximum the broker
    applied (get_applied_max), plus SY-06's late bound."""
    failures = check_invariants(run, get_applied_max(run))
    late = get_late_retries(run)
    if late:
        failures.setdefault("SY-06", []).extend(late)
    verdicts = {rule: ("deviates", "; ".join(found)) for rule, found in failures.items()}
    for rule in INVARIANT_RULES:
        verdicts.setdefault(rule, ("conforms", "oracle/system_oracle.Ledger holds"))
    return verdicts

def get_fault_verdict(kinds: tuple[str, ...], what: str):
    """[CC-06] [CC-07] A send-back fault of `kinds` hit (no restart after it), and every message's reconsumeTimes
    and fate are the 4.9.8 client's: `what` happened as it does (a deviation is the differential check's)."""

    def check(run: Run, prediction: Prediction) -> tuple[str, str] | None:
        hit = [f for f in get_hit_faults(run) if f.kind in kinds]
        if run.workload.mode != "concurrently" or run.workload.model != "clustering" or not hit \
                or run.workload.restart_after is not None or get_differential_verdicts(run, prediction):
            return None
        return "conforms", f"{len(hit)} failed send-backs: {what}"

    return check

def get_orderly_answers_verdict(auto_commit: bool):
    """[OR-05] [OR-06] An orderly listener answered COMMIT or ROLLBACK with autoCommit on (read as SUCCESS), or
    turned autoCommit off, and every message's reconsumeTimes and fate are the 4.9.8 client's (a deviation is
    the differential check's, filed under OR-07)."""

    def check(run: Run, prediction: Prediction) -> tuple[str, str] | None:
        answers = {d.status for d in run.deliveries}
        if run.workload.mode != "orderly" or run.workload.auto_commit is not auto_commit or not answers \
                or (auto_commit and not answers & {"COMMIT", "ROLLBACK"}) or get_differential_verdicts(run, prediction):
            return None
        return "conforms", f"autoCommit {str(auto_commit).lower()}, answers {sorted(answers)} applied as 4.9.8 does"

    return check
