"""The orderly consume path (spec/12-orderly.md): ConsumeMessageOrderlyService's ConsumeRequest as pure steps.

A ConsumeRequest for one queue runs a loop: check the gate (dropped, locked, lock expired, 60 s slice), take a batch
from the ProcessQueue into its consuming map, call the listener, and process the listener's status. The listener
call itself is the caller's business (it may take virtual time, and other events may happen meanwhile); this
module only decides what happens before and after it.
"""

from __future__ import annotations

import enum

from attrs import frozen

from model.client import process_queue as pqs
from model.client.offset_store import update_offset
from model.client.queue_locks import is_lock_needed_to_consume
from model.client.retry_message import compute_orderly_retry_message, compute_producer_retry
from model.values.config import Config, compute_suspend_millis, get_max_reconsume_times
from model.values.message import PROPERTY_RECONSUME_TIME, Message
from model.values.records import evolve
from model.values.wire import RESPONSE_SUCCESS, Context, SendMessage, SendResult, exchange

# CMOS 4.9.8 L57: a ConsumeRequest consumes at most this long before it yields and resubmits itself.
MAX_TIME_CONSUME_CONTINUOUSLY = 60_000
# CMOS 4.9.8 L460, L446, L564: resubmit after the slice; re-lock after a lost / missing lock inside and outside.
RESUBMIT_AFTER_SLICE = 10
TRY_LOCK_LATER_IN_LOOP = 10
TRY_LOCK_LATER_AT_ENTRY = 100
# CMOS 4.9.8 L224-237: tryLockLaterAndReconsume resubmits 10 ms after a successful lock, 3000 ms after a failed one.
RESUBMIT_AFTER_LOCK_OK = 10
RESUBMIT_AFTER_LOCK_FAILED = 3_000


class OrderlyStatus(enum.Enum):
    """What the listener did: a ConsumeOrderlyStatus, an exception, or a null return."""

    SUCCESS = "SUCCESS"
    COMMIT = "COMMIT"
    ROLLBACK = "ROLLBACK"
    SUSPEND = "SUSPEND_CURRENT_QUEUE_A_MOMENT"
    EXCEPTION = "exception"
    NULL = "null"


@frozen
class OrderlyResult:
    """One orderly listener invocation as the application ends it: the status (or exception / null) and the
    ConsumeOrderlyContext fields it set (COC defaults: autoCommit true, suspendCurrentQueueTimeMillis -1)."""

    status: OrderlyStatus = OrderlyStatus.SUCCESS
    auto_commit: bool = True
    suspend_current_queue_time_millis: int = -1


class Step(enum.Enum):
    """What the ConsumeRequest loop does next."""

    TAKE = "take"  # take a batch and call the listener
    STOP = "stop"  # the request ends; nothing is scheduled
    TRY_LOCK_LATER = "try_lock_later"  # tryLockLaterAndReconsume(delay)
    RESUBMIT_LATER = "resubmit_later"  # submitConsumeRequestLater(delay)


@frozen
class Gate:
    step: Step
    delay: int = 0
    rules: tuple[str, ...] = ()


def process_gate(pq, config: Config, now: int, began_at: int, first: bool) -> Gate:
    """[OR-01] The ConsumeRequest gate: a dropped queue stops; in CLUSTERING an unlocked or lock-expired queue is
    re-locked later (100 ms at entry, 10 ms inside the loop); [OR-02] after 60 s of continuous consumption the
    request resubmits itself after 10 ms. BROADCASTING never looks at the lock (LK-05). The checks run only
    before a take, so a listener that outlives its lease keeps running beside the next owner (OR-14)."""
    if pq.dropped:
        return Gate(Step.STOP, rules=("OR-01",))
    lock_ok = not is_lock_needed_to_consume(config) or (pq.locked and not pqs.is_lock_expired(pq, now))
    if not lock_ok:
        delay = TRY_LOCK_LATER_AT_ENTRY if first else TRY_LOCK_LATER_IN_LOOP
        return Gate(Step.TRY_LOCK_LATER, delay, ("OR-01", "LK-04"))
    if now - began_at > MAX_TIME_CONSUME_CONTINUOUSLY:
        return Gate(Step.RESUBMIT_LATER, RESUBMIT_AFTER_SLICE, ("OR-02",))
    return Gate(Step.TAKE, rules=("OR-01",))


def process_take(pq, config: Config, now: int | None = None):
    """[OR-03] takeMessages(consumeMessageBatchMaxSize): the lowest offsets move to the consuming map, and the
    request's clock `now` becomes the last consume time (PQ-06; the spec's examples, without a clock, leave it).

    Returns (pq, msgs); an empty batch ends the request (the ProcessQueue is then no longer `consuming`). Always
    taking the lowest cached offsets is what keeps a queue in order (OR-13)."""
    return pqs.take_messages(pq, config.consume_message_batch_max_size, now)


def get_status(outcome: OrderlyStatus) -> OrderlyStatus:
    """[OR-04] An exception or a null return counts as SUSPEND_CURRENT_QUEUE_A_MOMENT."""
    return OrderlyStatus.SUSPEND if outcome in (OrderlyStatus.EXCEPTION, OrderlyStatus.NULL) else outcome


@frozen
class SendBack:
    """The outcome of checkReconsumeTimes: the peer after the sends, the messages with their local counters,
    whether to suspend, the messages stored."""

    peer: object
    msgs: tuple[Message, ...]
    suspend: bool
    sent: tuple[Message, ...]
    rules: tuple[str, ...]


def process_check_reconsume_times(peer, config: Config, group: str, msgs, now: int, send_ok: bool,
                                  random_int: int, send_retried: bool = False) -> SendBack:
    """[OR-07] checkReconsumeTimes: a message below the maximum is retried locally with reconsumeTimes + 1;
    [OR-08] one at the maximum is produced to %RETRY%<group> (the broker routes it, OR-09); a failed send keeps
    it suspended with reconsumeTimes + 1. One message to retry keeps the whole batch suspended. The counter lives
    only in the cached messages and is lost with the ProcessQueue (OR-11); N + 1 deliveries, then the send (OR-15).
    `peer` answers the sends (a Broker, or the cluster that routes them to its broker)."""
    max_times = get_max_reconsume_times(config)
    suspend, out, sent, rules = False, [], [], ["OR-07"]
    for msg in msgs:
        if msg.reconsume_times >= max_times:
            msg = msg.put_property(PROPERTY_RECONSUME_TIME, msg.reconsume_times)
            rules.append("OR-08")
            if send_ok:
                peer, result = process_give_up_send(peer, config, group, msg, now, random_int, send_retried)
                if send_retried:
                    rules.append("RS-14")
                if result.code is RESPONSE_SUCCESS:
                    sent.append(result.stored)
                    out.append(msg)
                    continue
        suspend = True
        out.append(evolve(msg, reconsume_times=msg.reconsume_times + 1))
    return SendBack(peer, tuple(out), suspend, tuple(sent), tuple(rules))


def process_give_up_send(peer, config: Config, group: str, msg: Message, now: int, random_int: int,
                         retried: bool = False) -> tuple[object, SendResult]:
    """[OR-09] sendMessageBack: a producer send of the message to %RETRY%<group>, which the broker's
    handleRetryAndDLQ redirects to the DLQ or (5.0.0-5.1.0, #6163) stores as one more delayed retry. `retried`:
    stored by the producer's retry, without the two header properties (RS-14), so as a retry at reconsumeTimes 0.
    Returns the peer after it answered, and its answer."""
    retry, reconsume_header, max_header = compute_orderly_retry_message(msg, group, config)
    if retried:
        retry, reconsume_header, max_header = compute_producer_retry(retry)
    return exchange(peer, SendMessage(retry, reconsume_header, max_header), Context(config, now, random_int))


@frozen
class ConsumeResult:
    """processConsumeResult's effect: the peer after the give-up sends and the new ProcessQueue, the offset to store
    (-1: none), whether the loop continues, the resubmit delay when it does not (None: no resubmit), the messages
    sent to %RETRY%."""

    peer: object
    pq: object
    commit_offset: int
    continue_consume: bool
    resubmit_after: int | None
    sent: tuple[Message, ...]
    rules: tuple[str, ...]

    @property
    def broker(self):
        """The peer, by the name the spec's examples read (they pass a bare Broker)."""
        return self.peer


def process_consume_result(peer, pq, config: Config, group: str, msgs, outcome: OrderlyStatus, now: int, *,
                           auto_commit: bool = True, suspend_millis: int = -1, send_ok: bool = True,
                           random_int: int = 0, send_retried: bool = False) -> ConsumeResult:
    """[OR-05] With autoCommit (the default) SUCCESS, COMMIT and ROLLBACK all commit; [OR-06] without it only COMMIT
    commits, SUCCESS leaves the batch in the consuming map and ROLLBACK puts it back and resubmits; SUSPEND retries
    locally or gives up (OR-07, OR-08) — after a give-up autoCommit commits and manual commit commits nothing.
    The message model plays no part here: BROADCASTING retries locally too (OR-17)."""
    status = get_status(outcome)
    rules = ("OR-04",) if status is not outcome else ()
    delay = compute_suspend_millis(config, suspend_millis)
    if status is OrderlyStatus.SUSPEND:
        back = process_check_reconsume_times(peer, config, group, msgs, now, send_ok, random_int, send_retried)
        rules += back.rules
        if back.suspend:
            pq = pqs.make_message_to_consume_again(pq, back.msgs)
            return ConsumeResult(back.peer, pq, -1, False, delay, back.sent, rules + ("CFG-04",))
        if not auto_commit:
            return ConsumeResult(back.peer, pq, -1, True, None, back.sent, rules + ("OR-06",))
        pq, offset = pqs.commit(pq)
        return ConsumeResult(back.peer, pq, offset, True, None, back.sent, rules + ("OR-05", "OR-10"))
    if auto_commit or status is OrderlyStatus.COMMIT:
        pq, offset = pqs.commit(pq)
        return ConsumeResult(peer, pq, offset, True, None, (), rules + ("OR-05" if auto_commit else "OR-06", "OR-10"))
    if status is OrderlyStatus.ROLLBACK:
        return ConsumeResult(peer, pqs.rollback(pq), -1, False, delay, (), rules + ("OR-06", "CFG-04"))
    return ConsumeResult(peer, pq, -1, True, None, (), rules + ("OR-06",))


def process_store_commit(offset_store, mq, pq, commit_offset: int):
    """[OR-10] A committed batch moves the in-memory offset with updateOffset(increaseOnly = false), unless the
    ProcessQueue was dropped meanwhile; only finished messages are ever below it (OR-16)."""
    if commit_offset >= 0 and not pq.dropped:
        return update_offset(offset_store, mq, commit_offset, False)
    return offset_store
