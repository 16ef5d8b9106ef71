"""The per-rule checks of one run's history: each answers (status, detail) for its rule, or None where the run
does not judge it. What is deterministic is compared exactly, timing as bounds (LATE_BOUND_MS late)."""

from __future__ import annotations

from conformance.checker.observe import compute_delays_ms
from conformance.checker.predict import SEND_BACK_FIELDS, Prediction
from conformance.codec.codes import CONSUMER_SEND_MSG_BACK, PULL_MESSAGE, UNREGISTER_CLIENT, UPDATE_CONSUMER_OFFSET
from conformance.history.records import Run
from conformance.history.timers import SLACK_MS, get_disturbances, get_latest_ms

ONEWAY_FLAG = 2  # RemotingCommand's RPC_ONEWAY bit

# A retry is due `delay` after its send-back; it must reach the listener within this much more: the model-backed
# broker wakes a held pull when the delayed copy is stored, so this covers the delay timer's 100 ms tick, the
# client's pull and the adapter's round trip, with room for a loaded 2-core machine. After a fault (or a sign of one
# on the wire) the client's timers may hold it up longer: conformance/history/timers.py's get_latest_ms.
LATE_BOUND_MS = SLACK_MS

# The server's trace keeps whole model milliseconds (truncated): a send-back a fast client makes in the millisecond
# of its delivery may carry an earlier time than the delivery the driver recorded.
TRACE_GRAIN_MS = 1.0
# How much later than the send-back the driver may record the delivery it sends back: the adapter's line is read by
# the driver, the request by the server, each when its own thread runs (a CI rehearsal at load 10 saw 25 ms while the
# client was being restarted). Used only when no delivery of the copy was recorded before the send-back.
RECORD_LAG_MS = 500.0

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
            flat.append(d.uniq_key)
        previous[d.uniq_key] = d
    if flat:
        details = [f"{key} again with reconsumeTimes unchanged" for key in flat]
        return "deviates", "; ".join(details), frozenset(flat)
    return ("conforms", "every local retry counted") if any(d.seen_before for d in run.deliveries) else None

def get_batch_verdict(run: Run) -> tuple[str, str] | None:
    """[CC-02] Only failed deliveries are sent back: never a copy the listener accepted or never saw. A copy
    delivered again after a restart is judged by its last delivery before the send-back."""
    requests = run.get_requests(CONSUMER_SEND_MSG_BACK)
    if not requests:
        return None
    wrong, keys = [], set()
    for request in requests:
        offset = int(request.fields.get("offset", -1))
        of_copy = [d for d in run.deliveries if d.message["commitLogOffset"] == offset]
        before = [d for d in of_copy if d.time_ms <= request.time_ms + TRACE_GRAIN_MS]
        if not before:  # its delivery recorded late: the first one within the recording lag
            before = [d for d in of_copy if d.time_ms <= request.time_ms + RECORD_LAG_MS][:1]
        status = before[-1].status if before else None
        if status is None or run.workload.is_success(status):
            wrong.append(f"offset {offset}: {'never delivered' if status is None else 'accepted ' + status}")
            keys.add(get_key_of_offset(run, offset))
    if wrong:
        return "deviates", "; ".join(wrong), frozenset(keys)
    return "conforms", f"{len(requests)} send-backs, all failed ones"


def get_key_of_offset(run: Run, offset: int) -> str:
    """The key of the copy stored at commit-log `offset`: from a delivery of it, else from what its send-back
    stored ("" when neither tells)."""
    for delivery in run.deliveries:
        if delivery.message["commitLogOffset"] == offset:
            return delivery.uniq_key
    return next((copy.key for copy in run.stored if copy.source_offset == offset), "")

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
    return [d for d in run.deliveries if d.status in RAISED and d.message["commitLogOffset"] not in sent_back
            and not is_shown_again(run, d)]


def is_shown_again(run: Run, delivery) -> bool:
    """The same stored copy reached the listener again later: a failure in flight when the client stopped (a
    restart, a kill), whose offset was not committed past it, so the next instance consumed it again — not a
    failure read as a success, which commits past the copy."""
    return any(d.time_ms > delivery.time_ms and d.message["commitLogOffset"] == delivery.message["commitLogOffset"]
               for d in run.deliveries)

def get_unsent_keys(run: Run) -> set[str]:
    """[CC-06] Messages with a RECONSUME_LATER delivery whose copy was never sent back (CLUSTERING, concurrently):
    the client read the failure as a success."""
    if run.workload.model == "broadcasting" or run.workload.mode != "concurrently":
        return set()
    sent_back = {int(r.fields.get("offset", -1)) for r in run.get_requests(CONSUMER_SEND_MSG_BACK)}
    return {d.uniq_key for d in run.deliveries if d.status == "RECONSUME_LATER"
            and d.message["commitLogOffset"] not in sent_back and not is_shown_again(run, d)}

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
                           "CONSUME_SUCCESS)", frozenset(get_swallowed_keys(run))
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
        return "deviates", f"{sent} send-backs; delivered again after a failure: {again}", frozenset(again) | {""}
    unpulled = get_unpulled_queues(run, failed)
    if unpulled:
        keys = frozenset(d.uniq_key for d in failed if d.message["queueId"] in unpulled)
        return "indefinite", f"the restarted client pulled queues {unpulled} of its failures no more", keys
    return "conforms", f"{len(failed)} failed deliveries dropped"


def get_unpulled_queues(run: Run, failed: list) -> list[int]:
    """[CC-09] In a run with a restart, the queues of failed deliveries that no pull after the restart read: whether
    the next instance would consume such a failure again (rocketmq-client-go does, from its offset table) is not
    shown by a run that ended first."""
    gap = get_restart_gap(run)
    if gap is None:
        return []
    pulled = {int(r.fields.get("queueId", -1)) for r in run.get_requests(PULL_MESSAGE)
              if r.time_ms > gap[0] and r.fields.get("topic") == run.settings.topic}
    return sorted({d.message["queueId"] for d in failed} - pulled)

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

def get_late_retries(run: Run) -> list[tuple[str, str]]:
    """[SY-06] Retries that reached the listener later than due + LATE_BOUND_MS, or — after a fault or a sign of one
    on the wire — than the client's timers allow (timers.get_latest_ms); and retries the broker still held when the
    run ended past that bound (before it, such a message is indefinite, SY-10). One due while a restarted client was
    away is due when it pulls again."""
    delays = compute_delays_ms(run.settings.message_delay_level)
    due_by_copy = {(c.key, c.reconsume_times): c.time_ms + delays[c.delay_level - 1]
                   for c in run.stored if not c.topic.startswith("%DLQ%") and c.delay_level > 0}
    gap, disturbances = get_restart_gap(run), get_disturbances(run.client, run.faults, run.requests)
    late = []
    for d in run.deliveries:
        due = due_by_copy.pop((d.uniq_key, d.reconsume_times), None)
        if due is not None and gap is not None and due < gap[1] and d.time_ms >= gap[0]:
            due = gap[1]  # due before the second instance pulled, delivered by it
        if due is not None and d.time_ms > get_latest_ms(due, disturbances):
            late.append((d.uniq_key, f"{d.uniq_key} r={d.reconsume_times} at +{d.time_ms - due:.0f} ms after due"))
    return late + get_late_at_end(run, due_by_copy, disturbances)


def get_late_at_end(run: Run, due_by_copy: dict, disturbances: list) -> list[tuple[str, str]]:
    """[SY-06] The retries never delivered (`due_by_copy`: (key, reconsumeTimes) -> due ms) that the broker still
    held when the run ended (Run.final) although their latest time had passed (Run.ended_ms)."""
    pending = run.final.get_pending_keys() if run.final is not None else set()
    shown = {}
    for d in run.deliveries:
        shown[d.uniq_key] = max(shown.get(d.uniq_key, -1), d.reconsume_times)
    late = []
    for (key, times), due in sorted(due_by_copy.items()):
        latest = get_latest_ms(due, disturbances)
        if key in pending and shown.get(key, -1) < times and run.ended_ms > latest:
            late.append((key, f"{key} r={times} not delivered when the run ended, {run.ended_ms - due:.0f} ms "
                              f"after due ({latest - due:.0f} ms allowed)"))
    return late
