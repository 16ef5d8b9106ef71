"""The mechanisms of apache/rocketmq-client-go v2.1.2 that explain its deviations (conformance/checker/
deviations_go.py): each a predicate over one run's history and one message key ("" for the run as a whole), in the
form of causes.py's.
"""

from __future__ import annotations

from conformance.checker.causes import Cause, has_quick_orderly_retry, has_swallowed_exception, has_swallowed_null
from conformance.checker.checks import TRACE_GRAIN_MS
from conformance.checker.mechanisms import get_deliveries, get_send_backs, has_fallback
from conformance.codec.codes import CONSUMER_SEND_MSG_BACK, PULL_MESSAGE, UNREGISTER_CLIENT, ResponseCode
from conformance.history.records import Run
from model.values.config import get_max_reconsume_times

# rocketmq-client-go's pull: 32 messages, held by the broker up to _BrokerSuspendMaxTime (20 s).
GO_PULL = ("32", "20000")
# A failed send-back's local retry: 5 s after it (the send-back's own RPC timeout, 3 s, comes first when it went
# unanswered); the bound allows a loaded machine's slack.
LOCAL_RETRY_MAX_MS = 5000.0 + 3000.0 + 3000.0


def has_long_pull_suspend(run: Run, key: str) -> bool:
    """[CFG-01] Every pull asks for 32 messages and lets the broker hold it 20 s."""
    pulls = run.get_requests(PULL_MESSAGE)
    return key == "" and bool(pulls) and all(
        (r.fields.get("maxMsgNums"), r.fields.get("suspendTimeoutMillis")) == GO_PULL for r in pulls)


def has_no_unregister(run: Run, key: str) -> bool:
    """[RB-07] The client never sent UNREGISTER_CLIENT: its Shutdown only forgets the group locally."""
    return key == "" and not run.get_requests(UNREGISTER_CLIENT)


def has_error_answer_read_as_done(run: Run, key: str) -> bool:
    """[CC-06] The last delivery of `key` failed, its copy's send-back was answered with a code other than SUCCESS
    (SYSTEM_ERROR, NO_PERMISSION), and no fallback followed: the client read the answer as a success."""
    seen = get_deliveries(run, key)
    if not seen or run.workload.is_success(seen[-1].status) or has_fallback(run, key):
        return False
    last = seen[-1]
    return any(r.response_code is not None and r.response_code != ResponseCode.SUCCESS
               and int(r.fields.get("offset", -1)) == last.message["commitLogOffset"]
               and r.time_ms >= last.time_ms - TRACE_GRAIN_MS for r in get_send_backs(run, key))


def has_local_retry_after_timeout(run: Run, key: str) -> bool:
    """[CC-06] A send-back of `key` went unanswered, the client sent no fallback, and the same stored copy reached
    the listener again within LOCAL_RETRY_MAX_MS (its local retry, reconsumeTimes + 1): the send-back after it names
    that copy again, so the broker counts from the copy's stored reconsumeTimes."""
    if has_fallback(run, key):
        return False
    seen = get_deliveries(run, key)
    for request in get_send_backs(run, key):
        if request.response_code is not None:
            continue
        offset = int(request.fields.get("offset", -1))
        if any(d.message["commitLogOffset"] == offset and 0 < d.time_ms - request.time_ms <= LOCAL_RETRY_MAX_MS
               for d in seen):
            return True
    return False


def get_client_max(run: Run) -> int:
    """The maxReconsumeTimes the run's client applies (-1: unbounded orderly)."""
    return get_max_reconsume_times(run.settings.get_config(run.workload.mode, run.workload.model))


def has_late_orderly_give_up(run: Run, key: str) -> bool:
    """[OR-07] Orderly with a bounded maxReconsumeTimes N: `key` was delivered with reconsumeTimes N + 1 (the client
    gives up only when reconsumeTimes > N, one local retry more than 4.9.8's >= N)."""
    limit = get_client_max(run)
    return run.workload.mode == "orderly" and 0 <= limit < 2 ** 31 - 1 and any(
        d.reconsume_times == limit + 1 for d in get_deliveries(run, key))


def has_orderly_null_read_as_success(run: Run, key: str) -> bool:
    """[OR-07] Orderly: the listener's last answer to `key` was an error with the zero ConsumeResult (NULL) and the
    message never came again: ConsumeSuccess, committed."""
    seen = get_deliveries(run, key)
    return run.workload.mode == "orderly" and bool(seen) and seen[-1].status == "NULL"


def has_orderly_send_back_give_up(run: Run, key: str) -> bool:
    """[SB-09] Orderly: every CONSUMER_SEND_MSG_BACK asks delayLevel -1 (the client's give-up: the broker puts the
    copy in the DLQ at once), where 4.9.8 sends the message to %RETRY% with its count."""
    sent = run.get_requests(CONSUMER_SEND_MSG_BACK)
    return key == "" and run.workload.mode == "orderly" and bool(sent) and {
        r.fields.get("delayLevel") for r in sent} == {"-1"}


def get_instances(run: Run) -> list[int]:
    """Per delivery of the run, the client instance that made it (0, 1, ...): each adapter numbers its deliveries
    from 1 (a batch shares its number, never with the same message twice), so a number lower than the one before,
    or the same number with a message it already held, starts the next instance."""
    instances, current, previous, held = [], 0, 0, set()
    for delivery in run.deliveries:
        if delivery.number < previous or (delivery.number == previous and delivery.uniq_key in held):
            current += 1
        held = held | {delivery.uniq_key} if delivery.number == previous else {delivery.uniq_key}
        previous = delivery.number
        instances.append(current)
    return instances


def is_broadcast_failure_held(run: Run, key: str) -> bool:
    """[CC-09] BROADCASTING: a failed delivery of `key` (any key, for "") came again only in a later client instance
    (after a restart or a kill), never within its own: the client dropped the failure without removing it from the
    process queue, so the offset it persisted locally stayed below it and the next instance consumed it again."""
    if run.workload.model != "broadcasting":
        return False
    instances = get_instances(run)
    seen = list(zip(run.deliveries, instances, strict=True))
    keys = [key] if key else sorted({d.uniq_key for d in run.deliveries})
    for name in keys:
        mine = [(d, i) for d, i in seen if d.uniq_key == name]
        failed = [i for d, i in mine if not run.workload.is_success(d.status)]
        again = [i for d, i in mine[1:]]
        if failed and again and all(i > min(failed) for i in again):
            return True
    return False


def has_uncommitted_orderly_verdict(run: Run, key: str) -> bool:
    """[OR-13] Orderly under autoCommit: a message answered COMMIT or ROLLBACK (any, for "") came again later: the
    answer committed nothing while the queue went on, so its offset stayed at that message until a later
    ConsumeSuccess, and a restart before one consumed it again behind messages that had followed it."""
    if run.workload.mode != "orderly" or not run.workload.auto_commit:
        return False
    seen = [d for d in run.deliveries if not key or d.uniq_key == key]
    return any(d.status in ("COMMIT", "ROLLBACK") and any(
        later.uniq_key == d.uniq_key for later in seen[index + 1:]) for index, d in enumerate(seen))


LONG_PULL_SUSPEND = Cause("a pull held up to 20 s (_BrokerSuspendMaxTime)", has_long_pull_suspend)
NO_UNREGISTER = Cause("no UNREGISTER_CLIENT at shutdown", has_no_unregister)
PANIC_STUCK = Cause("a panicking listener: its goroutine recovers and drops the call, the message stays in the process "
                    "queue, never sent back nor delivered again", has_swallowed_exception)
ERROR_RESULT_SWALLOWED = Cause("an error returned with the zero ConsumeResult (ConsumeSuccess) read as a success",
                               has_swallowed_null)
ERROR_ANSWER_READ_AS_DONE = Cause("a send-back answered with an error code read as done (only a transport error "
                                  "fails it)", has_error_answer_read_as_done)
LOCAL_RETRY_AFTER_TIMEOUT = Cause("an unanswered send-back retried locally 5 s later, the original copy sent back "
                                  "again", has_local_retry_after_timeout)
QUICK_ORDERLY_RETRY = Cause("orderly retry at once: the context's SuspendCurrentQueueTimeMillis is -1",
                            has_quick_orderly_retry)
LATE_ORDERLY_GIVE_UP = Cause("orderly give-up at reconsumeTimes > maxReconsumeTimes", has_late_orderly_give_up)
ORDERLY_NULL_SUCCESS = Cause("orderly: an error with the zero ConsumeResult read as ConsumeSuccess",
                             has_orderly_null_read_as_success)
ORDERLY_GIVE_UP_SEND_BACK = Cause("the orderly give-up is a send-back with delayLevel -1",
                                  has_orderly_send_back_give_up)
BROADCAST_FAILURE_HELD = Cause("BROADCASTING: a failure logged as dropped but left in the process queue, its offset "
                               "never persisted past it, consumed again by the next instance",
                               is_broadcast_failure_held)
AUTOCOMMIT_VERDICT_UNCOMMITTED = Cause("orderly under autoCommit: COMMIT or ROLLBACK commits nothing, the queue "
                                       "goes on, and the message comes again after a restart",
                                       has_uncommitted_orderly_verdict)
