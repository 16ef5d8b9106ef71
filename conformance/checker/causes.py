"""The causes a declared deviation can name: each a predicate over one run's history and one message key ("" for
the run as a whole), true when that mechanism explains the message's deviation. A declaration covers only what its
causes explain (conformance/checker/verdicts.py explain_deviations), so a new way of deviating fails the run.
"""

from __future__ import annotations

from collections.abc import Callable
from types import SimpleNamespace

from attrs import frozen

from conformance.checker.checks import (
    ONEWAY_FLAG,
    TRACE_GRAIN_MS,
    get_batch_verdict,
    get_orderly_retry_verdict,
    get_swallowed_keys,
    get_unsent_keys,
)
from conformance.checker.differential import is_same_outcome, predict_with_group_max
from conformance.checker.lifecycle import get_suspend_gaps
from conformance.checker.mechanisms import (
    get_deliveries,
    get_observed_fates,
    get_retry_sends,
    get_send_backs,
    has_failed_send_back,
    has_fallback,
    is_orderly_raised_and_moved_on,
)
from conformance.codec.codes import CONSUMER_SEND_MSG_BACK, UNREGISTER_CLIENT, UPDATE_CONSUMER_OFFSET, ResponseCode
from conformance.history.records import SUCCESS, Delivery, Run
from model.values.config import get_max_reconsume_times


@frozen
class Cause:
    """A mechanism by name, and the predicate that finds it in a history: (run, key) -> bool."""

    name: str
    holds: Callable[[Run, str], bool]


def lacks_max_in_header(run: Run, key: str) -> bool:
    """[SB-09] Every send-back header lacks maxReconsumeTimes, and each asks delayLevel 0."""
    sent = run.get_requests(CONSUMER_SEND_MSG_BACK)
    return key == "" and bool(sent) and all("maxReconsumeTimes" not in r.fields for r in sent) \
        and {r.fields.get("delayLevel") for r in sent} == {"0"}


def is_dead_lettered_at_group_max(run: Run, key: str) -> bool:
    """[SY-05] No header named maxReconsumeTimes, and `key`'s outcome is the 4.9.8 client's with maxReconsumeTimes
    = the group's retryMaxTimes."""
    if not any("maxReconsumeTimes" not in r.fields for r in run.get_requests(CONSUMER_SEND_MSG_BACK)):
        return False
    seen, expected = get_observed_fates(run).get(key), predict_with_group_max(run).fates.get(key)
    return seen is not None and expected is not None and is_same_outcome(run, seen, expected)


def has_swallowed_exception(run: Run, key: str) -> bool:
    """[CC-04] Concurrently: the listener raised on `key` and the copy was neither sent back nor delivered again."""
    return run.workload.mode == "concurrently" and key in get_swallowed_keys(run) \
        and any(d.status == "EXCEPTION" for d in get_deliveries(run, key))


def has_swallowed_null(run: Run, key: str) -> bool:
    """[CC-04] The listener returned null for `key` and the copy was neither sent back nor delivered again."""
    return key in get_swallowed_keys(run) and any(d.status == "NULL" for d in get_deliveries(run, key))


def has_dropped_failed_send_back(run: Run, key: str) -> bool:
    """[CC-06] A send-back of `key` failed (error, no answer, refused) and the client sent no fallback."""
    return has_failed_send_back(run, key) and not has_fallback(run, key)


def has_failure_in_flight_at_stop(run: Run, key: str) -> bool:
    """[CC-06] The listener's last answer to `key` was a failure, no send-back named that copy, and the client was
    stopped (UNREGISTER_CLIENT) after it: the failure never left the client, and the offset it persisted on the way
    out moved past the message."""
    seen = get_deliveries(run, key)
    if not seen or run.workload.is_success(seen[-1].status):
        return False
    last = seen[-1]
    sent = any(int(r.fields.get("offset", -1)) == last.message["commitLogOffset"]
               for r in run.get_requests(CONSUMER_SEND_MSG_BACK))
    return not sent and any(r.time_ms >= last.time_ms - TRACE_GRAIN_MS for r in run.get_requests(UNREGISTER_CLIENT))


# Deliveries of one pulled batch reach the listener back to back (one listener call per message, consecutive).
BATCH_WINDOW_MS = 5.0
# How soon after a raise the callback's return sends its batch back: at once in the library's thread (3 ms measured);
# the rest is a loaded machine's slack.
SEND_BACK_WINDOW_MS = 100.0


def is_in_a_raising_batch(run: Run, key: str) -> bool:
    """[CC-04] A delivery of `key` (or `key` never shown) shares a pulled batch — deliveries within BATCH_WINDOW_MS —
    with a listener exception or null answer, and the batch holds another message: rocketmq-client-cpp's binding
    leaves the C return value unset when the listener raises, so the batch's answer is undefined (a failure read as
    a success, a copy sent back that was never shown)."""
    raised = [d for d in run.deliveries if d.status in ("EXCEPTION", "NULL")]
    batches = [[d for d in run.deliveries if abs(d.time_ms - r.time_ms) <= BATCH_WINDOW_MS] for r in raised]
    shared = [batch for batch in batches if len({d.uniq_key for d in batch}) > 1]
    with_unshown = [d for d in raised if has_unshown_send_back_after(run, d)]
    unseen = bool(shared or with_unshown) and not get_deliveries(run, key)
    return unseen or any(d.uniq_key == key for d in with_unshown) \
        or any(key in {d.uniq_key for d in batch} for batch in shared)


def has_unshown_send_back_after(run: Run, raised: Delivery) -> bool:
    """[CC-04] A send-back names a copy the listener was never shown, within SEND_BACK_WINDOW_MS after the raise
    `raised`: the batch it was in held a message the listener never got, though it was shown alone
    (conformance-cpp seeds 1102 and 1106: the raise's own message, or its unshown batch-mate, lost)."""
    shown = {d.message["commitLogOffset"] for d in run.deliveries}
    return any(int(r.fields.get("offset", -1)) not in shown and 0 <= r.time_ms - raised.time_ms <= SEND_BACK_WINDOW_MS
               for r in run.get_requests(CONSUMER_SEND_MSG_BACK))


def has_refused_send_back_without_local_retry(run: Run, key: str) -> bool:
    """[CC-07] A send-back of `key` was refused (NO_PERMISSION) and `key` was never delivered after it."""
    refused = [r.time_ms for r in get_send_backs(run, key) if r.response_code == ResponseCode.NO_PERMISSION]
    return bool(refused) and not any(d.time_ms > min(refused) for d in get_deliveries(run, key))


def is_batch_casualty(run: Run, key: str) -> bool:
    """[CC-02] Another message failed, and `key` was sent back although accepted, or never shown to the listener:
    the whole pulled batch shared the failure."""
    batch = get_batch_verdict(run)
    in_batch = batch is not None and batch[0] == "deviates" and key in batch[2]
    others_failed = any(d.uniq_key != key and not run.workload.is_success(d.status) for d in run.deliveries)
    return others_failed and (in_batch or not get_deliveries(run, key))


def has_flat_orderly_retry(run: Run, key: str) -> bool:
    """[OR-07] Orderly: `key` came again after a failure with reconsumeTimes unchanged."""
    config = run.settings.get_config(run.workload.mode, run.workload.model)
    found = get_orderly_retry_verdict(run, SimpleNamespace(max_reconsume_times=get_max_reconsume_times(config)))
    return found is not None and found[0] == "deviates" and key in found[2]


# rocketmq-client-cpp 1.2.3 resubmits an orderly queue 100 ms after RECONSUME_LATER (tryLockLaterAndReconsume); a
# redelivery within this bound is that timer, not the 1000 ms suspend.
QUICK_ORDERLY_RETRY_MS = 500


def has_quick_orderly_retry(run: Run, key: str) -> bool:
    """[CFG-04] Orderly: a failure answer to `key` was followed by a redelivery of its queue within
    QUICK_ORDERLY_RETRY_MS, far under the 1000 ms suspend."""
    config = run.settings.get_config(run.workload.mode, run.workload.model)
    return any(found == key and gap < QUICK_ORDERLY_RETRY_MS
               for found, gap in get_suspend_gaps(run, get_max_reconsume_times(config)))


def has_failed_retry_copy(run: Run, key: str) -> bool:
    """[CC-06] A copy of `key` pulled from %RETRY% (RETRY_TOPIC set) was answered RECONSUME_LATER and never sent
    back nor delivered again."""
    return key in get_unsent_keys(run) | get_swallowed_keys(run) and any(
        d.status == "RECONSUME_LATER" and "RETRY_TOPIC" in d.message["properties"] for d in get_deliveries(run, key))


def has_fallback_after_failed_send_back(run: Run, key: str) -> bool:
    """[CC-06] A send-back of `key` failed and the client then sent `key` to %RETRY% itself (the fallback)."""
    return has_failed_send_back(run, key) and has_fallback(run, key)


def has_dropped_local_retry(run: Run, key: str) -> bool:
    """[CC-07] A send-back of `key` failed, no fallback of it was stored (none sent, or every one refused), the
    client delivered it again itself (a local retry), and it was neither consumed nor dead-lettered: the local retry
    gave it up."""
    stored = any(r.response_code == SUCCESS for r in get_retry_sends(run, key))
    fate = get_observed_fates(run).get(key)
    return has_failed_send_back(run, key) and not stored and len(get_deliveries(run, key)) > 1 \
        and fate is not None and fate.fate == "lost"


def has_delivered_fallback_copy(run: Run, key: str) -> bool:
    """[SY-06] A copy of `key` the client's own fallback send stored (it carries MAX_RECONSUME_TIMES, which a
    broker's send-back copy does not) reached the listener."""
    return any("MAX_RECONSUME_TIMES" in d.message["properties"] for d in get_deliveries(run, key))


def lacks_consume_start_time(run: Run, key: str) -> bool:
    """[CC-05] Some delivery's message has no CONSUME_START_TIME property (and every one shows the original
    topic)."""
    topics = {d.message["topic"] for d in run.deliveries}
    return key == "" and topics == {run.settings.topic} and any(
        "CONSUME_START_TIME" not in d.message["properties"] for d in run.deliveries)


def has_twoway_offset_update(run: Run, key: str) -> bool:
    """[RB-05] Some UPDATE_CONSUMER_OFFSET went without the one-way flag."""
    return key == "" and any(not r.flag & ONEWAY_FLAG for r in run.get_requests(UPDATE_CONSUMER_OFFSET))


FAILURE_IN_FLIGHT_AT_STOP = Cause("a failure in flight when the client stopped: never sent back, its offset "
                                  "persisted past it", has_failure_in_flight_at_stop)
RAISING_BATCH = Cause("a listener exception inside a pulled batch: the binding's unset return value",
                      is_in_a_raising_batch)
SEND_BACK_DROPPED = Cause("a failed send-back dropped: no fallback, no local retry", has_dropped_failed_send_back)
EXCEPTION_SWALLOWED = Cause("a listener exception read as a success", has_swallowed_exception)
ORDERLY_EXCEPTION_MOVED_ON = Cause("orderly: a listener exception read as a success, the queue moved on",
                                   is_orderly_raised_and_moved_on)
NULL_SWALLOWED = Cause("a null answer read as a success", has_swallowed_null)
RETRY_COPY_SWALLOWED = Cause("RECONSUME_LATER on a %RETRY% copy read as a success", has_failed_retry_copy)
