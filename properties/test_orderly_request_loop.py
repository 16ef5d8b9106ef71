"""The orderly ConsumeRequest loop and its timers, run through the system (spec/12-orderly.md): a request that
finds its lock mark stale tries to lock 100 ms later at entry and 10 ms later inside the loop (OR-01, LK-04), a
loop past 60 s resubmits itself 10 ms later (OR-02), a loop that takes nothing ends (OR-03), and lockAll runs every
20 s whether or not its last request failed (LK-03, LK-07). Each expected time is added up by hand from
ConsumeMessageOrderlyService 4.9.8; the notes of each step are compared whole."""

from __future__ import annotations

import pytest

from model.broker.locks import BROKER_LOCK_MAX_LIVE_TIME, get_lock_owner
from model.client.observations import ListenerInvoked, Note
from model.client.orderly import OrderlyResult, OrderlyStatus
from model.system.events import Advance, CompleteConsume, LockRequestsFail, Produce
from model.system.step import create_system
from model.values.config import Config
from model.values.message import MessageQueue
from model.values.names import GROUP, TOPIC
from properties.steps import run

MQ = MessageQueue(TOPIC, 0)
SUCCESS = OrderlyResult(OrderlyStatus.SUCCESS, True)


def started(*keys: str):
    """One 4.9.8 CLUSTERING orderly instance on one queue, the messages `keys` produced and the first taken at 0."""
    system = create_system(Config(consume_mode="orderly", profile="4.9.8"), ("c1",), topic_queue_nums=1)
    system, _ = run(system, *(Produce(key) for key in keys), Advance(0))
    assert sorted(system.requests) == ([1] if keys else [])
    return system


def get_steps(seen) -> list[tuple]:
    """The loop's notes about the queue and the listener calls, in order, as (time, what)."""
    steps = []
    for o in seen:
        if isinstance(o, Note) and o.what.startswith(f"c1 {MQ}: "):
            steps.append((o.time, o.what.removeprefix(f"c1 {MQ}: "), o.rules))
        elif isinstance(o, ListenerInvoked):
            steps.append((o.time, tuple(m.body.decode() for m in o.messages)))
    return steps


TRY = ("try_lock_later", ("OR-01", "LK-04"))
REFUSED = ("lock refused", ("LK-01",))
GRANTED = ("lock granted", ("LK-01",))


@pytest.mark.parametrize(("status", "expected"), [
    # SUSPEND: submitConsumeRequestLater(1000) (L290-L298, suspendCurrentQueueTimeMillis 1000); the new request
    # finds the mark stale at entry (L434-L435) and tries 100 ms later (L564).
    (OrderlyStatus.SUSPEND, [(31_500, *TRY), (31_600, *REFUSED), (34_600, *TRY), (34_700, *REFUSED),
                             (37_700, *TRY), (37_800, *GRANTED), (37_810, ("m0",))]),
    # SUCCESS with m1 cached: the loop goes on and finds the mark stale inside (L450-L455): 10 ms.
    (OrderlyStatus.SUCCESS, [(30_500, *TRY), (30_510, *REFUSED), (33_510, *TRY), (33_610, *REFUSED),
                             (36_610, *TRY), (36_710, *GRANTED), (36_720, ("m1",))]),
])
def test_a_stale_lock_mark_tries_to_lock_100_ms_later_at_entry_and_10_ms_later_in_the_loop(status, expected):
    """[OR-01] [LK-04] [LK-07] The queue was locked at 0 (the rebalance marks a new ProcessQueue locked, RebalanceImpl
    4.9.8 L376-L377) and every lockAll from 1 s on fails, leaving the mark at 0: it is stale from 30 001 ms
    (isLockExpired, ProcessQueue 4.9.8 L68-L70). The listener returns at 30 500. ConsumeRequest.run
    (ConsumeMessageOrderlyService 4.9.8 L425-L566) then calls tryLockLaterAndReconsume with 100 ms when it finds
    the mark stale before its loop and 10 ms inside it; lock(mq) fails while the requests fail, so the request is
    submitted again 3000 ms later (L224-L237), and after the fault ends the lock is granted and the request
    resubmitted 10 ms later takes the queue's next message."""
    system = started("m0", "m1")
    system, _ = run(system, LockRequestsFail("c1"), Advance(30_500))
    system, seen = run(system, CompleteConsume(1, OrderlyResult(status, True)), Advance(36_000),
                       LockRequestsFail("c1", failing=False), Advance(40_000))
    assert get_steps(seen) == expected
    granted_at = expected[-2][0]
    assert get_lock_owner(system.broker, GROUP, MQ, granted_at + BROKER_LOCK_MAX_LIVE_TIME) == "c1"
    assert get_lock_owner(system.broker, GROUP, MQ, granted_at + BROKER_LOCK_MAX_LIVE_TIME + 1) is None


@pytest.mark.parametrize(("returned_at", "expected"), [
    (60_000, [(60_000, ("m1",))]),
    (60_001, [(60_001, "resubmit_later", ("OR-02",)), (60_011, ("m1",))]),
])
def test_a_loop_longer_than_60_s_resubmits_itself_10_ms_later(returned_at, expected):
    """[OR-02] [OR-03] The loop that began at 0 goes on to the next message while at most 60 000 ms passed
    (MAX_TIME_CONSUME_CONTINUOUSLY, ConsumeMessageOrderlyService 4.9.8 L57-L58, `interval >` at L457-L461); past
    that it ends and submitConsumeRequestLater(10) starts a new loop 10 ms later (L247-L270). Its lock mark stays
    fresh: lockAll renewed it at 41 s. When the last message's listener returns at once, takeMessages finds nothing
    and the loop ends (L466-L468, L554-L555)."""
    system = started("m0", "m1")
    system, _ = run(system, Advance(returned_at))
    taken_at = expected[-1][0]
    system, seen = run(system, CompleteConsume(1, SUCCESS), Advance(taken_at))
    assert get_steps(seen) == expected
    system, seen = run(system, CompleteConsume(2, SUCCESS))
    assert get_steps(seen) == [(taken_at, "nothing to take", ("OR-03",))]


def get_lock_all_notes(seen) -> list[tuple]:
    return [(o.what, o.time, o.rules) for o in seen if isinstance(o, Note) and "lockAll" in o.what]


def test_lock_all_runs_every_20_s_and_a_failed_one_leaves_the_lease_as_it_was():
    """[LK-03] [LK-07] [LK-01] lockMQPeriodically runs 1 s after start and every 20 s after (scheduleAtFixedRate,
    ConsumeMessageOrderlyService 4.9.8 L95-L108), each run one lockBatch of the group's queues that stamps the
    broker lease (RebalanceLockManager 4.9.8 L117-L190) and the client's mark. A run whose request fails only logs
    it (RebalanceImpl.lockAll 4.9.8 L167-L215): the lease and the mark keep the last successful stamp, and the next
    run comes 20 s later as usual."""
    system = started()
    system, seen = run(system, Advance(1_000))
    assert get_lock_all_notes(seen) == [("c1 lockAll", 1_000, ("LK-03",))]
    assert get_lock_owner(system.broker, GROUP, MQ, 1_000 + BROKER_LOCK_MAX_LIVE_TIME) == "c1"
    system, seen = run(system, LockRequestsFail("c1"), Advance(21_000))
    assert get_lock_all_notes(seen) == [("c1 lockAll failed", 21_000, ("LK-07",))]
    assert system.consumers["c1"].process_queues[MQ].last_lock_timestamp == 1_000
    assert get_lock_owner(system.broker, GROUP, MQ, 1_000 + BROKER_LOCK_MAX_LIVE_TIME + 1) is None
    system, seen = run(system, LockRequestsFail("c1", failing=False), Advance(41_000))
    assert get_lock_all_notes(seen) == [("c1 lockAll", 41_000, ("LK-03",))]
    pq = system.consumers["c1"].process_queues[MQ]
    assert (pq.locked, pq.last_lock_timestamp) == (True, 41_000)
    assert get_lock_owner(system.broker, GROUP, MQ, 41_000 + BROKER_LOCK_MAX_LIVE_TIME) == "c1"
    assert get_lock_owner(system.broker, GROUP, MQ, 41_000 + BROKER_LOCK_MAX_LIVE_TIME + 1) is None
