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

from conformance.checker.deviations import DECLARED, NOT_APPLICABLE, get_declared, get_hit_faults
from conformance.checker.observe import check_invariants, compute_delays_ms, get_arrival_order, get_observed_fates
from conformance.checker.predict import SEND_BACK_FIELDS, Prediction, predict
from conformance.checker.rules import NOT_JUDGED
from conformance.checker.wire_checks import WIRE_CHECKS
from conformance.codec.codes import CONSUMER_SEND_MSG_BACK, PULL_MESSAGE, UNREGISTER_CLIENT, UPDATE_CONSUMER_OFFSET
from conformance.history.records import Run, RunSettings
from conformance.history.workload import SEND_BACK_FAULT_KINDS

ONEWAY_FLAG = 2  # RemotingCommand's RPC_ONEWAY bit
# A retry is due `delay` after its send-back; it must reach the listener within this much more: the model-backed
# broker wakes a held pull when the delayed copy is stored, so this covers the delay timer's 100 ms tick, the
# client's pull and the adapter's round trip, with room for a loaded 2-core machine.
LATE_BOUND_MS = 3000
# The server's trace keeps whole model milliseconds (truncated): a send-back a fast client makes in the millisecond
# of its delivery may carry an earlier time than the delivery the driver recorded.
TRACE_GRAIN_MS = 1.0
INVARIANT_RULES = ("SY-04", "SY-05", "SY-06", "SY-09", "SY-10")
# The rules a difference of fates against the model is attributed to (get_differential_verdicts).
DIFFERENTIAL_RULES = ("CC-02", "CC-04", "CC-06", "CC-07", "OR-04", "OR-07", "SY-05")



@frozen
class Verdict:
    rule: str
    client: dict
    status: str  # conforms | deviates | not applicable | not judged
    detail: str = ""
    counterexample: str = ""
    trace: tuple[str, ...] = ()

    @property
    def client_key(self) -> tuple[str, str]:
        return self.client["name"], self.client["version"]


def get_header_verdict(run: Run, prediction: Prediction) -> tuple[str, str] | None:
    """[SB-09] The send-back header holds the fields a 4.9.8 client sends (maxReconsumeTimes above all)."""
    observed = run.get_requests(CONSUMER_SEND_MSG_BACK)
    if not observed:
        return None
    expected = set(SEND_BACK_FIELDS)
    missing = sorted(expected - set(observed[0].fields))
    levels = sorted({r.fields.get("delayLevel") for r in observed})
    if missing or levels != ["0"]:
        return "deviates", f"header fields missing: {missing}; delayLevel sent: {levels}"
    return "conforms", "group, offset, delayLevel 0, originMsgId, originTopic, maxReconsumeTimes"


def get_default_max_verdict(run: Run, prediction: Prediction) -> tuple[str, str] | None:
    """[CFG-02] A concurrently client left at maxReconsumeTimes -1 sends the 4.9.8 default, 16."""
    observed = run.get_requests(CONSUMER_SEND_MSG_BACK)
    if not observed or run.workload.mode != "concurrently" or run.settings.max_reconsume_times != -1:
        return None
    sent = sorted({r.fields.get("maxReconsumeTimes") for r in observed}, key=str)
    if sent != [str(prediction.max_reconsume_times)]:
        return "deviates", f"maxReconsumeTimes sent: {sent}; 4.9.8: {prediction.max_reconsume_times}"
    return "conforms", f"maxReconsumeTimes {prediction.max_reconsume_times} on every send-back"


# Orderly answers that make the message consume again with reconsumeTimes + 1 (checkReconsumeTimes); a ROLLBACK
# (autoCommit off) puts the taken messages back unchanged, and a success may be taken again after a ROLLBACK.
ORDERLY_RETRY_STATUSES = frozenset({"SUSPEND_CURRENT_QUEUE_A_MOMENT", "EXCEPTION", "NULL"})


def get_orderly_retry_verdict(run: Run, prediction: Prediction) -> tuple[str, str] | None:
    """[OR-07] An orderly local retry shows the message with reconsumeTimes + 1 (no restart in between). At the
    maximum the message is given up instead (sent to %RETRY%, its count kept, OR-08); without autoCommit a later
    ROLLBACK puts it back unchanged, so it may come again at the same count."""
    if run.workload.mode != "orderly" or run.workload.restart_after is not None:
        return None
    previous, flat = {}, []
    for d in run.deliveries:
        before = previous.get(d.uniq_key)
        if before is not None and before.status in ORDERLY_RETRY_STATUSES \
                and before.reconsume_times < prediction.max_reconsume_times \
                and d.reconsume_times <= before.reconsume_times:
            flat.append(f"{d.uniq_key} again with reconsumeTimes {d.reconsume_times}")
        previous[d.uniq_key] = d
    if flat:
        return "deviates", "; ".join(flat)
    return ("conforms", "every local retry counted") if any(d.seen_before for d in run.deliveries) else None


def get_batch_verdict(run: Run) -> tuple[str, str] | None:
    """[CC-02] Only failed deliveries are sent back: never a copy the listener accepted or never saw. A copy
    delivered again after a restart is judged by its last delivery before the send-back."""
    requests = run.get_requests(CONSUMER_SEND_MSG_BACK)
    if not requests:
        return None
    wrong = []
    for request in requests:
        offset = int(request.fields.get("offset", -1))
        before = [d for d in run.deliveries
                  if d.message["commitLogOffset"] == offset and d.time_ms <= request.time_ms + TRACE_GRAIN_MS]
        status = before[-1].status if before else None
        if status is None or run.workload.is_success(status):
            wrong.append(f"offset {offset}: {'never delivered' if status is None else 'accepted ' + status}")
    return ("deviates", "; ".join(wrong)) if wrong else ("conforms", f"{len(requests)} send-backs, all failed ones")


# Concurrently answers that count as RECONSUME_LATER [CC-04]: the listener raised, or returned null.
RAISED = ("EXCEPTION", "NULL")


def get_swallowed(run: Run) -> list:
    """Deliveries that raised (concurrently: or returned null) and were read as success: concurrently, the copy
    was not sent back; orderly, the message was not delivered again. A BROADCASTING concurrently consumer drops
    a failure as it drops nothing else (CC-09), so it shows none."""
    if run.workload.model == "broadcasting" and run.workload.mode == "concurrently":
        return []
    if run.workload.mode != "concurrently":
        last = {d.uniq_key: d for d in run.deliveries}
        return [d for d in last.values() if d.status == "EXCEPTION"]
    sent_back = {int(r.fields.get("offset", -1)) for r in run.get_requests(CONSUMER_SEND_MSG_BACK)}
    return [d for d in run.deliveries if d.status in RAISED and d.message["commitLogOffset"] not in sent_back]


def get_unsent_keys(run: Run) -> set[str]:
    """[CC-06] Messages with a RECONSUME_LATER delivery whose copy was never sent back (CLUSTERING, concurrently):
    the client read the failure as a success."""
    if run.workload.model == "broadcasting" or run.workload.mode != "concurrently":
        return set()
    sent_back = {int(r.fields.get("offset", -1)) for r in run.get_requests(CONSUMER_SEND_MSG_BACK)}
    return {d.uniq_key for d in run.deliveries
            if d.status == "RECONSUME_LATER" and d.message["commitLogOffset"] not in sent_back}


def get_swallowed_keys(run: Run) -> set[str]:
    return {d.uniq_key for d in get_swallowed(run)}


def get_exception_verdict(run: Run) -> tuple[str, str] | None:
    """[CC-04] A listener that raises counts as RECONSUME_LATER: its copy is sent back (or retried)."""
    raised = [d for d in run.deliveries if d.status in RAISED]
    if not raised or run.workload.mode != "concurrently" or run.workload.model == "broadcasting":
        return None  # BROADCASTING: a failure is dropped, not sent back (CC-09), so a raise shows nothing here
    swallowed = [d.number for d in get_swallowed(run)]
    if swallowed:
        return "deviates", f"deliveries {swallowed} raised or returned null and were not sent back (read as " \
                           "CONSUME_SUCCESS)"
    return "conforms", f"{len(raised)} raising or null deliveries all sent back"


def get_listener_view_verdict(run: Run) -> tuple[str, str] | None:
    """[CC-05] The listener sees the original topic and a CONSUME_START_TIME."""
    if not run.deliveries or run.workload.mode != "concurrently":
        return None
    topics = sorted({d.message["topic"] for d in run.deliveries})
    without = sum("CONSUME_START_TIME" not in d.message["properties"] for d in run.deliveries)
    if topics != [run.settings.topic] or without:
        return "deviates", f"topics seen {topics}; {without} of {len(run.deliveries)} without CONSUME_START_TIME"
    return "conforms", "original topic and CONSUME_START_TIME on every delivery"


def get_broadcasting_verdict(run: Run) -> tuple[str, str] | None:
    """[CC-09] [SY-08] BROADCASTING drops a failed message: no send-back, no second delivery."""
    failed = [d for d in run.deliveries if not run.workload.is_success(d.status)]
    if run.workload.model != "broadcasting" or run.workload.mode != "concurrently" or not failed:
        return None
    sent = len(run.get_requests(CONSUMER_SEND_MSG_BACK))
    again = sorted({d.uniq_key for d in failed} & {d.uniq_key for d in run.deliveries if d.seen_before > 0})
    if sent or again:
        return "deviates", f"{sent} send-backs; delivered again after a failure: {again}"
    return "conforms", f"{len(failed)} failed deliveries dropped"


def get_persist_verdict(run: Run) -> tuple[str, str] | None:
    """[RB-05] Offsets are persisted with one-way UPDATE_CONSUMER_OFFSET requests."""
    updates = run.get_requests(UPDATE_CONSUMER_OFFSET)
    if not updates:
        return None
    twoway = sum(not r.flag & ONEWAY_FLAG for r in updates)
    if twoway:
        return "deviates", f"{twoway} of {len(updates)} UPDATE_CONSUMER_OFFSET without the one-way flag"
    return "conforms", f"{len(updates)} one-way UPDATE_CONSUMER_OFFSET"


def get_restart_gap(run: Run) -> tuple[float, float] | None:
    """While the restarted client was away: from the first instance's first UNREGISTER_CLIENT to the first pull
    after it (the second instance pulling); None without a restart."""
    if run.workload.restart_after is None:
        return None
    stops = [r.time_ms for r in run.requests if r.code == UNREGISTER_CLIENT]
    if not stops:
        return None
    pulls = [r.time_ms for r in run.requests if r.code == PULL_MESSAGE and r.time_ms > stops[0]]
    return stops[0], pulls[0] if pulls else float("inf")


def get_late_retries(run: Run) -> list[str]:
    """[SY-06] Retries that reached the listener later than due + LATE_BOUND_MS; one due while a restarted client
    was away is due when it pulls again."""
    delays = compute_delays_ms(run.settings.message_delay_level)
    due_by_copy = {(c.key, c.reconsume_times): c.time_ms + delays[c.delay_level - 1]
                   for c in run.stored if not c.topic.startswith("%DLQ%") and c.delay_level > 0}
    gap = get_restart_gap(run)
    late = []
    for d in run.deliveries:
        due = due_by_copy.pop((d.uniq_key, d.reconsume_times), None)
        if due is not None and gap is not None and due < gap[1] and d.time_ms >= gap[0]:
            due = gap[1]  # due before the second instance pulled, delivered by it
        if due is not None and d.time_ms > due + LATE_BOUND_MS:
            late.append(f"{d.uniq_key} r={d.reconsume_times} at +{d.time_ms - due:.0f} ms after due")
    return late


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


def ignore_prediction(check):
    return lambda run, _prediction: check(run)


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


CHECKS = {"SB-09": get_header_verdict, "CC-02": lambda run, _p: get_batch_verdict(run),
          "CC-04": lambda run, _p: get_exception_verdict(run), "CC-05": lambda run, _p: get_listener_view_verdict(run),
          "RB-05": lambda run, _p: get_persist_verdict(run),
          "CC-09": lambda run, _p: get_broadcasting_verdict(run),
          "SY-08": lambda run, _p: get_broadcasting_verdict(run),
          "OR-07": get_orderly_retry_verdict, "CFG-02": get_default_max_verdict,
          "CC-06": get_fault_verdict(SEND_BACK_FAULT_KINDS,
                                     "each message came back as the 4.9.8 client's (fallback send, else local retry)"),
          "CC-07": get_fault_verdict(("broker_not_writeable",), "the fallback failed too; retried locally 5 s later"),
          "RS-14": get_fault_verdict(("fallback_first_refused",),
                                     "the fallback's first attempt was refused; its producer retry restarted "
                                     "reconsumeTimes at 0"),
          "OR-05": get_orderly_answers_verdict(True), "OR-06": get_orderly_answers_verdict(False),
          **{rule: ignore_prediction(check) for rule, check in WIRE_CHECKS.items()}}


def get_client(run: Run) -> dict:
    return {"name": run.client.get("name"), "version": run.client.get("version"),
            "binding": f"{run.client.get('binding', '')} {run.client.get('bindingVersion', '')}".strip()}


def get_found(run: Run, prediction: Prediction) -> dict[str, tuple[str, str]]:
    """(status, detail) per judged rule: a deviation from the differential check wins over a conforming invariant
    or check of the same rule."""
    found: dict[str, tuple[str, str]] = get_invariant_verdicts(run, prediction)
    for rule, check in CHECKS.items():
        result = check(run, prediction)
        if result is not None and found.get(rule, ("conforms",))[0] != "deviates":
            found[rule] = result
    for rule, (status, detail) in get_differential_verdicts(run, prediction).items():
        before = found.get(rule)
        found[rule] = (status, f"{before[1]}; {detail}" if before and before[0] == "deviates" else detail)
    return found


def judge(run: Run, prediction: Prediction, counterexample: str = "") -> list[Verdict]:
    """Every rule x client verdict of one run: a rule the client lacks is "not applicable" (no check of it runs),
    one no run can judge is "not judged", each with the reason."""
    client = get_client(run)
    key = (client["name"], client["version"])
    absent = {rule: why for (rule, who), why in NOT_APPLICABLE.items() if who == key}
    trace = tuple(format_request(r) for r in run.requests)
    verdicts = [Verdict(rule, client, status, detail, counterexample if status == "deviates" else "",
                        trace if status == "deviates" else ())
                for rule, (status, detail) in sorted(get_found(run, prediction).items()) if rule not in absent]
    verdicts += [Verdict(rule, client, "not applicable", why) for rule, why in sorted(absent.items())]
    verdicts += [Verdict(rule, client, "not judged", why) for rule, why in sorted(NOT_JUDGED.items())
                 if rule not in absent]
    return verdicts


def format_request(request) -> str:
    answer = "no response" if request.response_code is None else f"-> {request.response_code}"
    return f"{request.time_ms:.0f} ms conn {request.connection} code {request.code} flag {request.flag} " \
           f"{request.fields} {answer}"


def check_declarations(verdicts: list[Verdict], run: Run) -> list[str]:
    """The problems of one run: a deviation not declared in conformance/checker/deviations.py, and a declared deviation
    whose `when` holds for this run but that did not happen."""
    problems = []
    if not verdicts:
        return problems
    key = verdicts[0].client_key
    deviating = {v.rule for v in verdicts if v.status == "deviates"}
    for verdict in verdicts:
        if verdict.status == "deviates" and get_declared(verdict.rule, key) is None:
            problems.append(f"undeclared deviation of {verdict.rule} by {key}: {verdict.detail}")
    for deviation in DECLARED:
        if deviation.client == key and deviation.when is not None and deviation.when(run) \
                and deviation.rule not in deviating:
            problems.append(f"declared deviation of {deviation.rule} by {key} did not happen: {deviation.claim}")
    return problems
