"""The orderly lock's life cycle at its edges (spec/12-orderly.md): the consume gate on a mark exactly 30 s old
and 1 ms older, lockAll over a table where other instances hold some queues, and a commit that arrives after the
queue was dropped. The boundaries are drawn on purpose: a lock mark a random clock lands on is almost never the
one the rule turns on."""

from __future__ import annotations

import immutables
import pytest
from hypothesis import event, given
from hypothesis import strategies as st

from model.broker.locks import BROKER_LOCK_MAX_LIVE_TIME, get_lock_owner, on_lock_batch
from model.broker.state import create_broker
from model.client.observations import Note
from model.client.offset_store import create_offset_store, get_offset
from model.client.orderly import OrderlyResult, OrderlyStatus, Step, process_gate, process_store_commit
from model.client.orderly_service import RESUBMIT, TRY_LOCK, on_try_lock
from model.client.process_queue import REBALANCE_LOCK_MAX_LIVE_TIME, create_process_queue
from model.client.queue_locks import process_lock_all
from model.client.timer_items import ServiceTimer
from model.system.events import Advance, CompleteConsume, Produce, SetMembers
from model.system.step import create_system
from model.values.config import Config, ConsumeMode, MessageModel
from model.values.message import MessageQueue
from model.values.names import GROUP, TOPIC
from model.values.records import evolve
from model.values.timer_heap import get_heap_items
from properties.steps import run

QUEUES = 4
MQS = [MessageQueue(TOPIC, q) for q in range(QUEUES)]
AROUND = st.sampled_from((-1, 0, 1))
TIMES = st.integers(0, 10**9)


@given(locked_at=TIMES, around=AROUND, first=st.booleans())
def test_the_gate_consumes_under_a_mark_up_to_30_s_old(locked_at, around, first):
    """[OR-01] [LK-04] In CLUSTERING a locked queue is consumed while its mark is at most 30 s old (isLockExpired
    is strict); 1 ms later the request tries to lock again (100 ms at entry, 10 ms in the loop)."""
    config = Config(consume_mode=ConsumeMode.ORDERLY)
    pq = evolve(create_process_queue(locked_at), locked=True)
    now = locked_at + REBALANCE_LOCK_MAX_LIVE_TIME + around
    gate = process_gate(pq, config, now, now, first)
    event("OR-01")
    if around <= 0:
        assert gate.step is Step.TAKE, gate
    else:
        assert (gate.step, gate.delay) == (Step.TRY_LOCK_LATER, 100 if first else 10), gate


@given(locked_at=TIMES, age=st.integers(0, 3 * REBALANCE_LOCK_MAX_LIVE_TIME), locked=st.booleans())
def test_broadcasting_gate_never_reads_the_lock(locked_at, age, locked):
    """[LK-05] A BROADCASTING orderly consumer takes messages whatever the lock mark says."""
    config = Config(consume_mode=ConsumeMode.ORDERLY, message_model=MessageModel.BROADCASTING)
    pq = evolve(create_process_queue(locked_at), locked=locked)
    event("LK-05")
    assert process_gate(pq, config, locked_at + age, locked_at + age, True).step is Step.TAKE


@given(others=st.sets(st.sampled_from(MQS)), marks=st.lists(st.booleans(), min_size=QUEUES, max_size=QUEUES),
       now=st.integers(1, 10**9))
def test_lock_all_marks_every_refused_queue_unlocked(others, marks, now):
    """[LK-03] lockAll asks for every queue of the table at once: each granted queue is marked locked at `now`,
    and each queue the broker refused (another instance holds a live lock) is marked unlocked, whatever its mark
    was — so its consumption stops at the next gate."""
    broker = create_broker(Config(), GROUP, {TOPIC: QUEUES})
    broker = on_lock_batch(broker, GROUP, others, "other", now).broker
    marked = zip(MQS, marks, strict=True)
    table = immutables.Map({mq: evolve(create_process_queue(0), locked=mark) for mq, mark in marked})
    broker, table = process_lock_all(broker, GROUP, "c1", table, now)
    event("LK-03")
    for mq in MQS:
        if mq in others:
            assert not table[mq].locked, mq
        else:
            assert (table[mq].locked, table[mq].last_lock_timestamp) == (True, now), mq


@given(committed=st.integers(0, 10**6), dropped=st.booleans(), start=st.none() | st.integers(0, 10**6))
def test_a_commit_after_the_drop_moves_no_offset(committed, dropped, start):
    """[OR-10] [RB-03] processConsumeResult stores a committed batch's offset (not increase-only) unless the
    ProcessQueue was dropped while the listener ran: the queue's new owner, not this instance, moves it then."""
    mq = MQS[0]
    store = create_offset_store(Config())
    if start is not None:
        store = process_store_commit(store, mq, create_process_queue(0), start)
    pq = evolve(create_process_queue(0), dropped=dropped)
    after = process_store_commit(store, mq, pq, committed)
    event("RB-03")
    assert get_offset(after, mq) == (get_offset(store, mq) if dropped else committed)


@given(locked_at=TIMES, around=AROUND)
def test_the_broker_lease_passes_to_another_instance_only_after_60_s(locked_at, around):
    """[LK-01] The broker's lease is strict too: another instance asking exactly 60 s after the last renewal is
    refused, 1 ms later it is granted."""
    broker = create_broker(Config(), GROUP, {TOPIC: QUEUES})
    broker = on_lock_batch(broker, GROUP, MQS[:1], "c1", locked_at).broker
    result = on_lock_batch(broker, GROUP, MQS[:1], "c2", locked_at + BROKER_LOCK_MAX_LIVE_TIME + around)
    event("LK-01")
    assert (MQS[0] in result.granted) is (around > 0)


def test_a_queue_left_with_messages_cached_is_unlocked_20_s_later():
    """OR-12 (4.9): a rebalance takes a queue from an idle listener that still caches messages (here after a
    SUSPEND): it leaves the table at once, but its broker lock is released by the delayed UNLOCK 20 s later, not
    before."""
    system = create_system(Config(consume_mode="orderly"), ("c1",), topic_queue_nums=2)
    system, _ = run(system, Produce("a", queue_id=1), Produce("b", queue_id=1), Advance(0))
    system, _ = run(system, CompleteConsume(min(system.requests), OrderlyResult(OrderlyStatus.SUSPEND, True)))
    system, _ = run(system, SetMembers(("c1", "c2")))  # c1 keeps queue 0, c2 is given queue 1
    mq, left_at = MessageQueue(TOPIC, 1), system.now
    assert mq not in system.consumers["c1"].process_queues
    before, _ = run(system, Advance(left_at + 19_999))
    assert get_lock_owner(before.broker, GROUP, mq, before.now) == "c1"
    after, seen = run(system, Advance(left_at + 20_000))
    assert get_lock_owner(after.broker, GROUP, mq, after.now) is None
    unlocks = [(o.what, o.time, o.rules) for o in seen if isinstance(o, Note) and "unlocked" in o.what]
    assert unlocks == [(f"c1 unlocked {mq}", left_at + 20_000, ("OR-12",))]


def test_try_lock_later_locks_the_queue_and_resubmits_10_ms_or_3_s_later():
    """[LK-01] [OR-02] tryLockLaterAndReconsume: lock(mq) for the instance, then a new ConsumeRequest 10 ms later
    when the broker granted it and 3000 ms later when it refused (ConsumeMessageOrderlyService 4.9.8
    tryLockLaterAndReconsume); a lock request that fails (LK-07) is a refusal."""
    system, _ = run(create_system(Config(consume_mode="orderly"), ("c1",), topic_queue_nums=1), Advance(0))
    mq = MessageQueue(TOPIC, 0)
    consumer = system.consumers["c1"]
    unlocked = evolve(consumer.process_queues[mq], locked=False)  # the mark the gate found expired
    system = evolve(system, consumers=system.consumers.set("c1", evolve(
        consumer, process_queues=consumer.process_queues.set(mq, unlocked))))
    timer = ServiceTimer("c1", consumer.incarnation, TRY_LOCK, (mq, consumer.generations[mq]))
    for failing, delay in ((False, 10), (True, 3000)):
        before = evolve(system, lock_faults=frozenset({"c1"} if failing else ()))
        after, notes = on_try_lock(before, timer)
        pq = after.consumers["c1"].process_queues[mq]
        assert (pq.locked, pq.last_lock_timestamp) == ((False, unlocked.last_lock_timestamp) if failing
                                                       else (True, system.now))
        new = [entry for entry in get_heap_items(after.timers) if entry not in get_heap_items(before.timers)]
        assert [(key[0], item.kind, item.payload) for key, item in new] == [
            (system.now + delay, RESUBMIT, (mq, consumer.generations[mq]))]
        owner = get_lock_owner(after.broker, GROUP, mq, after.now)
        assert owner == get_lock_owner(before.broker, GROUP, mq, before.now) if failing else owner == "c1"
        assert [(n.what, n.time, n.rules) for n in notes] == [
            (f"c1 {mq}: lock {'refused' if failing else 'granted'}", system.now, ("LK-01",))]


@pytest.mark.parametrize("version", ["4.9.8", "5.3.3"])
def test_a_queue_whose_listener_runs_stays_dropped_until_a_later_rebalance_finds_it_idle(version):
    """[OR-12] removeUnnecessaryMessageQueue of an orderly CLUSTERING queue needs the consume lock, which the
    running listener holds: the ProcessQueue is marked dropped but stays in the table, the broker lock stays the
    instance's, and 4.9.8 has already removed the cached offset (persist, removeOffset, then tryLock: RebalancePushImpl
    4.9.8 L85-L109) where 5.x keeps it until the lock is had (tryRemoveOrderMessageQueue, 5.3.3 L94-L134; no force
    unlock: the lock is 0 s old). The next rebalance (RebalanceImpl 4.9.8 L337-L345) finds the listener idle and the
    cache empty: the queue leaves, its offset is dropped from the cache and the broker lock is released at once
    (4.9.8 unlockDelay L113-L135 with no message cached; 5.3.3 L114-L121)."""
    mq = MessageQueue(TOPIC, 1)
    system = create_system(Config(consume_mode="orderly", profile=version), ("c1",), topic_queue_nums=2)
    system, _ = run(system, Produce("a", queue_id=1), Advance(0))
    system, _ = run(system, CompleteConsume(min(system.requests), OrderlyResult(OrderlyStatus.SUCCESS, True)),
                    Produce("b", queue_id=1), Advance(0))
    assert get_offset(system.consumers["c1"].offset_store, mq) == 1 and len(system.requests) == 1  # "b" runs
    system, seen = run(system, Advance(1_000), SetMembers(("c1", "c2")))  # c2 is given queue 1
    c1 = system.consumers["c1"]
    assert mq in c1.process_queues and c1.process_queues[mq].dropped
    assert get_offset(c1.offset_store, mq) == (None if version == "4.9.8" else 1)
    assert get_lock_owner(system.broker, GROUP, mq, system.now) == "c1"
    removals = [(n.what, n.time, n.rules) for n in seen if isinstance(n, Note) and str(mq) in n.what]
    assert removals == [(f"c1 kept (listener running) {mq}", 1_000, ("OR-12",))]
    system, _ = run(system, CompleteConsume(min(system.requests), OrderlyResult(OrderlyStatus.SUCCESS, True)))
    # The members' next rebalance, 12 s in: between two persistAll (every 5 s from 10 s), which would drop the
    # offset of a queue no longer in the table anyway.
    system, seen = run(system, Advance(12_000), SetMembers(("c1", "c2")))
    c1 = system.consumers["c1"]
    assert mq not in c1.process_queues and get_offset(c1.offset_store, mq) is None
    assert get_lock_owner(system.broker, GROUP, mq, system.now) == "c2"  # released by c1, so c2's lock is granted
    removals = [(n.what, n.time, n.rules) for n in seen if isinstance(n, Note) and f"c1 removed {mq}" in n.what]
    assert removals == [(f"c1 removed {mq}", 12_000, ("OR-12",))]


def test_a_held_back_pull_stamps_its_kept_queue_until_the_drop():
    """[LK-08] [PL-02] [OR-12] (4.9.8) c1's pull of queue 0 is held back by the cache from 1 s on and re-run every
    50 ms, each run stamping lastPullTimestamp; at 25.02 s the queue goes to c0 while c1's listener runs, so c1
    keeps it dropped, and the first run after the drop returns before stamping (DefaultMQPushConsumerImpl 4.9.8
    L219-L226): the last stamp is 25 s. The queue comes back to c1 at 26 s, where the dropped ProcessQueue blocks a
    new one until a rebalance finds it not pulled for more than 120 s: at 160 s (145 s is past), not at 140 s, and
    not later for the listener finishing at 45 s."""
    config = Config(consume_mode="orderly", profile="4.9.8", pull_threshold_for_queue=1)
    system = create_system(config, ("c1",), topic_queue_nums=1)
    mq = MessageQueue(TOPIC, 0)
    system, _ = run(system, Advance(1_000), Produce("a"), Produce("b"), Advance(1_000))
    assert ("c1", mq) in system.flow_parked and len(system.requests) == 1
    system, _ = run(system, Advance(25_020), SetMembers(("c0", "c1")), Advance(26_000), SetMembers(("c1",)))
    pq = system.consumers["c1"].process_queues[mq]
    assert (pq.dropped, pq.last_pull_timestamp) == (True, 25_000)
    system, seen = run(system, Advance(45_000),
                       CompleteConsume(min(system.requests), OrderlyResult(OrderlyStatus.SUCCESS, True)),
                       Advance(200_000))
    stale = [o.time for o in seen if isinstance(o, Note) and o.what == f"c1 {mq}: not pulled for 120 s"]
    assert stale[:1] == [160_000]
