"""What the orderly service does when a listener returns (spec/12-orderly.md), through the system step: what it
observes, the give-up send, the statuses a concurrently-style result stands for, the 60 s slice measured from the
ConsumeRequest's start, and the tryLockLaterAndReconsume delays at a loop's entry and inside it.

Every expected value is read from ConsumeMessageOrderlyService (4.9.8 and 5.3.3, cited per test) and the
DefaultMQPushConsumer defaults: consumeMessageBatchMaxSize 1, suspendCurrentQueueTimeMillis 1000."""

from __future__ import annotations

import pytest

from model.client.listener import ConsumeStatus, ListenerResult
from model.client.observations import DlqArrival, ListenerInvoked, Note, OffsetUpdated, PullObserved, SendBackOutcome
from model.client.orderly import OrderlyResult, OrderlyStatus
from model.client.orderly_service import OrderlyProcessed
from model.system.events import (
    Advance,
    CompleteConsume,
    Crash,
    ExpireQueueHead,
    LockRequestsFail,
    Produce,
    SetMembers,
)
from model.system.step import create_system
from model.values.config import Config
from model.values.message import MessageQueue, get_dlq_topic
from model.values.names import GROUP, TOPIC
from properties.steps import run

MQ = MessageQueue(TOPIC, 0)
SUSPEND = OrderlyResult(OrderlyStatus.SUSPEND)


def start(*keys: str, at: int = 0, **config):
    """One orderly CLUSTERING instance c1 owning the topic's one queue; `keys` produced, the first one's listener
    running (taken at `at`). Returns the system and that invocation."""
    system = create_system(Config(consume_mode="orderly", **config), ("c1",), topic_queue_nums=1)
    system, seen = run(system, *[Produce(key) for key in keys], Advance(at))
    (invoked,) = get_invoked(seen)
    return system, invoked


def get_invoked(seen) -> list[ListenerInvoked]:
    return [o for o in seen if isinstance(o, ListenerInvoked)]


def get_deliveries(seen) -> list[tuple[int, str, int]]:
    """(time, key, reconsumeTimes) of every message handed to a listener."""
    return [(o.time, m.uniq_key, m.reconsume_times) for o in get_invoked(seen) for m in o.messages]


def test_a_result_of_a_crashed_instance_is_observed_discarded_with_the_status_it_stands_for():
    """[OR-11] [OR-04] The instance crashed while its listener ran: the answer reaches no ProcessQueue, so nothing is
    committed or sent. It is still observed whole — the status processConsumeResult would have read (an exception
    is SUSPEND_CURRENT_QUEUE_A_MOMENT: ConsumeRequest.run sets a null status to it, CMOS 4.9.8 L538-L540), the
    context's autoCommit as the listener left it, no offset, nothing sent, discarded, at the instant it returned."""
    system, invoked = start("a")
    system, _ = run(system, Advance(2_500), Crash("c1"))
    answer = OrderlyResult(OrderlyStatus.EXCEPTION, auto_commit=False)
    _, seen = run(system, CompleteConsume(invoked.request_id, answer))
    assert seen == [OrderlyProcessed(invoked.request_id, OrderlyStatus.SUSPEND, False, -1, (), True, 2_500,
                                     ("OR-11",))]


def test_a_give_up_at_max_reconsume_times_is_sent_stored_and_observed_at_its_instant():
    """[OR-08] [OR-09] 5.3.3, maxReconsumeTimes 1: the first SUSPEND retries locally (reconsumeTimes 1, 1000 ms
    later); the second, at 2.5 s, reaches checkReconsumeTimes with reconsumeTimes 1 >= 1, so sendMessageBack
    produces the message to %RETRY%<group> with RECONSUME_TIME = 1 + 1 (CMOS 5.3.3 L360-L398), which the broker
    dead-letters (2 > 1, SendMessageProcessor 5.3.3 handleRetryAndDLQ) and stores at once, at the send's instant.
    The batch is then committed under autoCommit (offset 1, CMOS L290-L301) and the loop goes on. Observed: the
    processed result with the copy, one send-back on the "orderly" path — no CONSUMER_SEND_MSG_BACK, so no request
    level (0; the copy carries its DELAY) — and the copy's arrival in the DLQ, all at 2.5 s."""
    system, invoked = start("a", profile="5.3.3", max_reconsume_times=1)
    system, seen = run(system, CompleteConsume(invoked.request_id, SUSPEND), Advance(1_000))
    (again,) = get_invoked(seen)
    assert [(again.time, m.reconsume_times) for m in again.messages] == [(1_000, 1)]
    system, _ = run(system, Advance(2_500))
    _, seen = run(system, CompleteConsume(again.request_id, SUSPEND))
    processed, back, arrival, updated = seen[:4]  # then the loop finds nothing more to take
    (stored,) = processed.sent
    assert (stored.topic, stored.reconsume_times, stored.born_timestamp, stored.store_timestamp) == (
        get_dlq_topic(GROUP), 2, 2_500, 2_500)
    assert stored.get_property("RECONSUME_TIME") == "2" and stored.uniq_key == "a"
    assert processed == OrderlyProcessed(again.request_id, OrderlyStatus.SUSPEND, True, 1, (stored,), False, 2_500,
                                         ("OR-07", "OR-08", "OR-05", "OR-10"))
    assert back == SendBackOutcome(stored, "orderly", stored, 0, 2_500, ("OR-09",))
    assert arrival == DlqArrival(stored, 2_500, ("OR-09",))
    assert (updated.offset, updated.time) == (1, 2_500)


def test_a_give_up_whose_send_fails_keeps_the_message_suspended_and_counts_it():
    """[OR-08] 4.9.8, maxReconsumeTimes 0: the first SUSPEND is a give-up, but the producer send throws
    (sendMessageBack returns false), so checkReconsumeTimes suspends the batch with reconsumeTimes + 1 (CMOS 4.9.8
    L362-L366): nothing sent or committed, the same message again 1000 ms later with reconsumeTimes 1."""
    system, invoked = start("a", max_reconsume_times=0)
    system, _ = run(system, Advance(300))
    system, seen = run(system, CompleteConsume(invoked.request_id, SUSPEND, fallback_fails=True), Advance(1_300))
    (processed,) = [o for o in seen if isinstance(o, OrderlyProcessed)]
    assert (processed.commit_offset, processed.sent) == (-1, ())
    assert not [o for o in seen if isinstance(o, (SendBackOutcome, OffsetUpdated))]
    assert get_deliveries(seen) == [(1_300, "a", 1)]


@pytest.mark.parametrize("millis", [3_000, 15])
def test_a_suspend_waits_the_time_the_listener_set_in_its_context(millis):
    """[OR-07] [CFG-04] submitConsumeRequestLater takes the context's suspendCurrentQueueTimeMillis when the listener
    set one (not -1), within 10..30000 ms (CMOS 4.9.8 L247-L269, L290-L298): the message comes back that long after
    the SUSPEND, not the consumer's 1000 ms."""
    system, invoked = start("a")
    answer = OrderlyResult(OrderlyStatus.SUSPEND, suspend_current_queue_time_millis=millis)
    system, seen = run(system, CompleteConsume(invoked.request_id, answer), Advance(5_000))
    assert get_deliveries(seen) == [(millis, "a", 1)]


@pytest.mark.parametrize(("status", "committed", "next_delivery"), [
    (ConsumeStatus.CONSUME_SUCCESS, 1, (0, "b", 0)),
    (ConsumeStatus.RECONSUME_LATER, None, (1_000, "a", 1)),
])
def test_a_concurrently_style_result_counts_as_the_orderly_status_it_stands_for(status, committed, next_delivery):
    """[OR-05] [OR-07] A CONSUME_SUCCESS handed to an orderly request is its SUCCESS: autoCommit commits offset 1 and
    the loop takes the next message at once (CMOS 4.9.8 L280-L289); RECONSUME_LATER is SUSPEND_CURRENT_QUEUE_A_MOMENT:
    nothing committed, the message again after suspendCurrentQueueTimeMillis (1000 ms) with reconsumeTimes 1
    (L290-L298, L358-L375)."""
    system, invoked = start("a", "b")
    system, seen = run(system, CompleteConsume(invoked.request_id, ListenerResult(status)), Advance(1_500))
    (processed,) = [o for o in seen if isinstance(o, OrderlyProcessed)]
    expected = OrderlyStatus.SUCCESS if committed else OrderlyStatus.SUSPEND
    assert (processed.status, processed.commit_offset) == (expected, -1 if committed is None else committed)
    assert [o.offset for o in seen if isinstance(o, OffsetUpdated)] == ([] if committed is None else [committed])
    assert get_deliveries(seen)[0] == next_delivery


def test_the_60_s_slice_counts_from_the_start_of_the_consume_request():
    """[OR-02] A ConsumeRequest loops while now - beginTime <= 60 s, beginTime taken once when it starts (CMOS 4.9.8
    L436, L457-L461): "a" answered at 31 s and "b" at 62 s leave the loop before "c", which a new request takes 10 ms
    later — though no single listener call lasted 60 s. lockAll keeps the lock fresh meanwhile (every 20 s)."""
    system, invoked = start("a", "b", "c")
    system, seen = run(system, Advance(31_000), CompleteConsume(invoked.request_id, OrderlyResult()))
    (second,) = get_invoked(seen)
    system, seen = run(system, Advance(62_000), CompleteConsume(second.request_id, OrderlyResult()),
                       Advance(63_000))
    assert [(o.time, o.rules) for o in seen if isinstance(o, Note) and "resubmit_later" in o.what] == [
        (62_000, ("OR-02",))]
    assert get_deliveries(seen) == [(62_010, "c", 0)]


def test_a_lock_expired_inside_the_loop_is_tried_again_10_ms_later():
    """[LK-04] [LK-07] lockAll fails from 0.5 s on, so the lock taken when the queue was added (at 0) is not renewed;
    "a" answers at 31 s, past the 30 s lease (isLockExpired), so the loop's check sends the request to
    tryLockLaterAndReconsume with 10 ms (CMOS 4.9.8 L450-L455): lock(mq) at 31.010 s — refused, the request fails —
    and a new ConsumeRequest 3000 ms after that (L224-L237), which finds the lock expired at its entry and tries
    again 100 ms later (L558-L565)."""
    system, invoked = start("a", "b")
    system, _ = run(system, Advance(500), LockRequestsFail("c1"), Advance(31_000))
    system, seen = run(system, CompleteConsume(invoked.request_id, OrderlyResult()), Advance(40_000))
    assert [(o.time, o.what.split(": ")[-1]) for o in seen if isinstance(o, Note) and str(MQ) in o.what] == [
        (31_000, "try_lock_later"), (31_010, "lock refused"), (34_010, "try_lock_later"),
        (34_110, "lock refused"), (37_110, "try_lock_later"), (37_210, "lock refused")]
    assert not get_invoked(seen)


def test_a_pulled_batch_finding_the_lock_expired_tries_again_100_ms_later():
    """[LK-04] [LK-07] A message pulled at 40 s, when the lock taken at 0 has not been renewed (lockAll fails) and the
    lease is over: the new ConsumeRequest's entry check fails and it tries the lock 100 ms later (CMOS 4.9.8
    L434-L435, L558-L565), not the loop's 10 ms."""
    system = create_system(Config(consume_mode="orderly"), ("c1",), topic_queue_nums=1)
    system, _ = run(system, Advance(500), LockRequestsFail("c1"), Advance(40_000))
    system, seen = run(system, Produce("a"), Advance(40_500))
    assert [(o.time, o.what.split(": ")[-1]) for o in seen if isinstance(o, Note) and str(MQ) in o.what] == [
        (40_000, "try_lock_later"), (40_100, "lock refused")]


def test_a_message_pulled_while_the_queue_is_suspended_waits_for_the_suspension():
    """[OR-01] [OR-07] "a" is suspended for 1000 ms at 0; "b", pulled at 400 ms, finds the ProcessQueue still
    consuming, so putMessage answers dispatchToConsume false and submitConsumeRequest starts nothing (CMOS 4.9.8
    L206-L216; ProcessQueue.putMessage): the next listener call is the resubmitted request's, at 1000 ms, on "a"."""
    system, invoked = start("a")
    system, _ = run(system, CompleteConsume(invoked.request_id, SUSPEND), Advance(400))
    system, seen = run(system, Produce("b"), Advance(1_500))
    assert get_deliveries(seen) == [(1_000, "a", 1)]


def test_a_forcibly_removed_queues_listener_still_gives_up_and_holds_the_queue_until_it_returns():
    """[OR-11] [OR-12] 5.3.3, maxReconsumeTimes 0. c1's lockAll fails from 0.5 s, so at 21 s its lock mark (0) is
    over 20 s old and the rebalance that gives the queue to c0 removes it although "a"'s listener runs
    (tryRemoveOrderMessageQueue's forceUnlock, RebalancePushImpl 5.3.3 L110-L135). The queue comes straight back
    (c0 leaves) as a new ProcessQueue that pulls "a" again; its ConsumeRequest waits on the queue's lock object,
    which the running loop holds (messageQueueLock.fetchLockObject(mq): CMOS 5.3.3 L434-L435). The listener's
    SUSPEND at 21.5 s is still processed on its own, dropped ProcessQueue (L555, L274-L345): reconsumeTimes 0 >= 0,
    so the give-up is produced with RECONSUME_TIME 1 and dead-lettered at once (1 > 0), nothing is committed; the
    loop then ends (dropped, L440-L443) and the waiting request consumes "a" from the broker's copy."""
    system, invoked = start("a", profile="5.3.3", max_reconsume_times=0)
    system, _ = run(system, Advance(500), LockRequestsFail("c1"), Advance(21_000), SetMembers(("c0", "c1")))
    assert MQ not in system.consumers["c1"].process_queues
    system, seen = run(system, LockRequestsFail("c1", False), SetMembers(("c1",)), Advance(21_500))
    assert MQ in system.consumers["c1"].process_queues and not get_invoked(seen)
    assert [(o.what, o.time, o.rules) for o in seen if isinstance(o, Note) and "waits" in o.what] == [
        (f"c1 {MQ}: waits for the listener of a removed ProcessQueue", 21_000, ("OR-11",))]
    _, seen = run(system, CompleteConsume(invoked.request_id, SUSPEND))
    processed, back, arrival = seen[:3]
    (stored,) = processed.sent
    assert (stored.topic, stored.uniq_key, stored.reconsume_times, stored.store_timestamp) == (
        get_dlq_topic(GROUP), "a", 1, 21_500)
    assert processed == OrderlyProcessed(invoked.request_id, OrderlyStatus.SUSPEND, True, -1, (stored,), True,
                                         21_500, ("OR-11", "OR-07", "OR-08"))
    assert (back, arrival) == (SendBackOutcome(stored, "orderly", stored, 0, 21_500, ("OR-09",)),
                               DlqArrival(stored, 21_500, ("OR-09",)))
    assert not [o for o in seen if isinstance(o, OffsetUpdated)]
    assert get_deliveries(seen) == [(21_500, "a", 0)]


def test_a_listener_outliving_its_offset_illegal_repair_holds_the_queue_until_it_returns():
    """[OR-11] [PL-08] 4.9.8, maxReconsumeTimes 0, pullThresholdForQueue 1. "a" and "b" are cached, so the pull of 2
    waits for the cache; the broker deletes the queue's head up to 4 meanwhile. "a" answers at 1 s and the loop takes
    "b"; the released pull of 2 is OFFSET_ILLEGAL (1.05 s): the ProcessQueue is dropped and 10 s later removed from
    the table (DefaultMQPushConsumerImpl 4.9.8 L371-L395, RebalanceImpl.removeProcessQueue L434-L442), with "b"'s
    listener still running. The rebalance at 20 s adds the queue back from offset 4 and pulls "e"; its
    ConsumeRequest waits on the queue's lock object (CMOS 4.9.8 L432-L433) until "b" answers SUSPEND at 26 s. That
    answer is processed on the dropped ProcessQueue (L553, L272-L343): the give-up is produced to %RETRY% at level
    3 + 0, which the 4.9.8 broker dead-letters (0 >= 0) while the client's DELAY survives (SendMessageProcessor
    4.9.8 L289-L295), nothing is committed (L338); then the waiting request takes "e"."""
    system, invoked = start("a", "b", max_reconsume_times=0, pull_threshold_for_queue=1)
    system, seen = run(system, Produce("c"), Produce("d"), Produce("e"), ExpireQueueHead(MQ, 4), Advance(1_000),
                       CompleteConsume(invoked.request_id, OrderlyResult()), Advance(25_000))
    (second,) = get_invoked(seen)
    assert [m.uniq_key for m in second.messages] == ["b"] and MQ in system.consumers["c1"].process_queues
    assert [(o.time, o.status, o.next_offset) for o in seen if isinstance(o, PullObserved) and o.queue == MQ] == [
        (1_050, "OFFSET_ILLEGAL", 4), (20_000, "FOUND", 5)]
    _, seen = run(system, Advance(26_000), CompleteConsume(second.request_id, SUSPEND))
    processed, back = seen[:2]
    (stored,) = processed.sent
    assert (stored.get_property("REAL_TOPIC"), stored.delay_time_level, stored.reconsume_times) == (
        get_dlq_topic(GROUP), 3, 0)
    assert processed == OrderlyProcessed(second.request_id, OrderlyStatus.SUSPEND, True, -1, (stored,), True,
                                         26_000, ("OR-11", "OR-07", "OR-08"))
    assert back == SendBackOutcome(stored, "orderly", stored, 0, 26_000, ("OR-09",))
    assert not [o for o in seen if isinstance(o, OffsetUpdated)]
    assert get_deliveries(seen) == [(26_000, "e", 0)]


def test_a_listener_that_returns_before_its_queue_comes_back_leaves_the_queue_free():
    """[OR-11] [PL-08] As above, but "b" answers SUCCESS at 15 s, after the repair removed its ProcessQueue (11.05 s)
    and before the rebalance at 20 s adds the queue back: the commit is skipped (the ProcessQueue is dropped, CMOS
    4.9.8 L338-L340), nothing is sent, and the loop ends, so the lock object is free and the new ProcessQueue's
    request consumes "e" as soon as it is pulled."""
    system, invoked = start("a", "b", max_reconsume_times=0, pull_threshold_for_queue=1)
    system, seen = run(system, Produce("c"), Produce("d"), Produce("e"), ExpireQueueHead(MQ, 4), Advance(1_000),
                       CompleteConsume(invoked.request_id, OrderlyResult()), Advance(15_000))
    (second,) = get_invoked(seen)
    assert MQ not in system.consumers["c1"].process_queues
    system, seen = run(system, CompleteConsume(second.request_id, OrderlyResult()))
    assert seen == [OrderlyProcessed(second.request_id, OrderlyStatus.SUCCESS, True, -1, (), True, 15_000,
                                     ("OR-11",))]
    _, seen = run(system, Advance(21_000))
    assert get_deliveries(seen) == [(20_000, "e", 0)]
    assert not [o for o in seen if isinstance(o, Note) and "waits" in o.what]


def remove_under_the_listener():
    """The 5.3.3 forced unlock above: c1's queue removed at 21 s under "a"'s listener (maxReconsumeTimes 0) and
    back as a new ProcessQueue whose request waits; returns the system at 21.5 s and that invocation."""
    system, invoked = start("a", profile="5.3.3", max_reconsume_times=0)
    system, _ = run(system, Advance(500), LockRequestsFail("c1"), Advance(21_000), SetMembers(("c0", "c1")),
                    LockRequestsFail("c1", False), SetMembers(("c1",)), Advance(21_500))
    return system, invoked


@pytest.mark.parametrize("send_fails", [False, True])
@pytest.mark.parametrize("status", list(OrderlyStatus))
def test_every_answer_of_a_removed_listener_commits_nothing_and_only_a_suspend_at_the_maximum_sends(status,
                                                                                                  send_fails):
    """[OR-11] [OR-04] [OR-08] Each answer of the removed listener, processed on its dropped ProcessQueue (CMOS
    5.3.3 L274-L345, autoCommit): SUCCESS, COMMIT and ROLLBACK commit, which a dropped ProcessQueue skips (L340);
    SUSPEND — and an exception or null, which ConsumeRequest.run turns into it (L540-L542) — reaches
    checkReconsumeTimes at reconsumeTimes 0 >= 0 and sends the give-up unless the send throws (L360-L377). Then the
    waiting request consumes "a" either way."""
    system, invoked = remove_under_the_listener()
    answer = CompleteConsume(invoked.request_id, OrderlyResult(status), fallback_fails=send_fails)
    _, seen = run(system, answer)
    (processed,) = [o for o in seen if isinstance(o, OrderlyProcessed)]
    suspend = status in (OrderlyStatus.SUSPEND, OrderlyStatus.EXCEPTION, OrderlyStatus.NULL)
    assert (processed.status, processed.commit_offset, processed.discarded) == (
        OrderlyStatus.SUSPEND if suspend else status, -1, True)
    assert [m.topic for m in processed.sent] == ([get_dlq_topic(GROUP)] if suspend and not send_fails else [])
    assert len([o for o in seen if isinstance(o, SendBackOutcome)]) == len(processed.sent)
    assert not [o for o in seen if isinstance(o, OffsetUpdated)]
    assert get_deliveries(seen) == [(21_500, "a", 0)]
