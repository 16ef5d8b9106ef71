"""Properties of spec/12-orderly.md for one ConsumeRequest: gate, takeMessages, listener outcomes, local retry.

Expected values come from the reference's §3 table (written out below as `EXPECTED`), not from model/client/orderly.py.
"""

from __future__ import annotations

import pytest
from attrs import evolve
from hypothesis import event, example, given
from hypothesis import strategies as st

from model.broker.locks import on_lock_batch
from model.broker.state import create_broker
from model.client.offset_store import create_offset_store, get_offset, update_offset
from model.client.orderly import (
    OrderlyStatus,
    Step,
    process_check_reconsume_times,
    process_consume_result,
    process_gate,
    process_store_commit,
    process_take,
)
from model.client.orderly_rebalance import is_force_unlock, process_remove_queue
from model.client.process_queue import create_process_queue, put_message
from model.values.config import Config, MessageModel
from model.values.message import Message, MessageQueue
from properties.coverage import record_rules
from properties.suite import get_suite_config

GROUP, TOPIC = "g", "t"
R = OrderlyStatus
# Reference §3, processConsumeResult: (autoCommit, status) -> (commits, continues, rolls back / requeues).
EXPECTED = {
    (True, R.SUCCESS): ("commit", True),
    (True, R.COMMIT): ("commit", True),
    (True, R.ROLLBACK): ("commit", True),
    (True, R.SUSPEND): ("requeue", False),
    (False, R.SUCCESS): ("keep", True),
    (False, R.COMMIT): ("commit", True),
    (False, R.ROLLBACK): ("requeue", False),
    (False, R.SUSPEND): ("requeue", False),
}


def make_messages(first: int, count: int, reconsume_times: int = 0) -> list[Message]:
    return [Message(TOPIC, body=b"x", queue_offset=first + i, reconsume_times=reconsume_times) for i in range(count)]


def make_pq(first: int, count: int, reconsume_times: int = 0, now: int = 0):
    pq, _ = put_message(create_process_queue(now), make_messages(first, count, reconsume_times))
    return pq


outcomes = st.sampled_from(list(OrderlyStatus))


@given(auto_commit=st.booleans(), outcome=outcomes, first=st.integers(0, 50), count=st.integers(1, 6),
       batch=st.integers(1, 4), suspend=st.integers(-1, 40_000))
def test_listener_outcomes_follow_the_reference_table(auto_commit, outcome, first, count, batch, suspend):
    """OR-04 OR-05 OR-06 OR-07 OR-10"""
    config = Config(consume_mode="orderly", consume_message_batch_max_size=batch)
    broker = create_broker(config, GROUP, {TOPIC: 1})
    pq, msgs = process_take(make_pq(first, count), config)
    status = R.SUSPEND if outcome in (R.EXCEPTION, R.NULL) else outcome
    effect, continues = EXPECTED[(auto_commit, status)]
    result = process_consume_result(broker, pq, config, GROUP, msgs, outcome, 0, auto_commit=auto_commit,
                                    suspend_millis=suspend)
    record_rules(result.rules)
    assert ("OR-04" in result.rules) is (outcome in (R.EXCEPTION, R.NULL))  # a throw or null reads as SUSPEND
    taken = [m.queue_offset for m in msgs]
    assert taken == list(range(first, first + min(batch, count)))
    assert result.continue_consume is continues
    assert result.commit_offset == (taken[-1] + 1 if effect == "commit" else -1)
    millis = 1000 if suspend == -1 else suspend
    assert result.resubmit_after == (None if continues else min(max(millis, 10), 30_000))
    tree = dict(result.pq.msg_tree_map.items())
    consuming = [o for o, _ in result.pq.consuming_msg_orderly_tree_map.items()]
    if effect == "keep":
        assert consuming == taken
    else:
        assert consuming == []
        assert all((offset in tree) is (effect == "requeue") for offset in taken)
    if status is R.SUSPEND:
        assert [tree[o].reconsume_times for o in taken] == [1] * len(taken)


@given(outcome=st.sampled_from([R.SUSPEND, R.EXCEPTION, R.NULL]), max_times=st.integers(0, 5),
       auto_commit=st.booleans())
def test_a_poison_message_is_delivered_max_plus_one_times_before_the_send(outcome, max_times, auto_commit):
    """OR-07 OR-08 OR-15: the local counter climbs 0..N; the (N+1)-th failure produces it to %RETRY%<group>."""
    config = Config(consume_mode="orderly", max_reconsume_times=max_times)
    broker = create_broker(config, GROUP, {TOPIC: 1})
    pq, deliveries = make_pq(0, 1), 0
    while True:
        pq, msgs = process_take(pq, config)
        deliveries += 1
        assert [m.reconsume_times for m in msgs] == [deliveries - 1]
        result = process_consume_result(broker, pq, config, GROUP, msgs, outcome, 0, auto_commit=auto_commit)
        pq, broker = result.pq, result.broker
        if result.sent:
            break
        assert deliveries <= max_times + 1
    assert deliveries == max_times + 1
    # autoCommit skips the given-up message; manual commit leaves it taken and uncommitted (reference §3).
    assert result.commit_offset == (1 if auto_commit else -1)
    assert result.continue_consume


@given(max_times=st.integers(0, 3), auto_commit=st.booleans())
def test_a_failed_give_up_send_keeps_suspending(max_times, auto_commit):
    """OR-08: when the producer send fails the message stays, with reconsumeTimes + 1, and nothing is committed."""
    config = Config(consume_mode="orderly", max_reconsume_times=max_times)
    broker = create_broker(config, GROUP, {TOPIC: 1})
    pq, msgs = process_take(make_pq(0, 1, reconsume_times=max_times), config)
    result = process_consume_result(broker, pq, config, GROUP, msgs, R.SUSPEND, 0, auto_commit=auto_commit,
                                    send_ok=False)
    assert (result.sent, result.commit_offset, result.continue_consume) == ((), -1, False)
    assert [m.reconsume_times for m in result.pq.msg_tree_map.values()] == [max_times + 1]
    assert result.broker == broker


def test_one_retriable_message_keeps_a_given_up_one_in_the_batch():
    """OR-07 OR-08: checkReconsumeTimes suspends the whole batch if one message is below the maximum; the message
    already produced to %RETRY% is put back too (and will be produced again)."""
    config = Config(consume_mode="orderly", max_reconsume_times=1, consume_message_batch_max_size=2)
    broker = create_broker(config, GROUP, {TOPIC: 1})
    pq, _ = put_message(create_process_queue(), make_messages(0, 1, 1) + make_messages(1, 1, 0))
    pq, msgs = process_take(pq, config)
    result = process_consume_result(broker, pq, config, GROUP, msgs, R.SUSPEND, 0)
    assert len(result.sent) == 1 and not result.continue_consume and result.commit_offset == -1
    assert [m.reconsume_times for m in result.pq.msg_tree_map.values()] == [1, 1]


@given(clustering=st.booleans(), locked=st.booleans(), since_lock=st.integers(0, 60_000),
       since_begin=st.integers(0, 120_000), dropped=st.booleans(), first=st.booleans())
# The boundaries, drawn on purpose: a request yields strictly after 60 s (OR-02), a lock mark is stale strictly
# after 30 s (LK-04).
@example(clustering=True, locked=True, since_lock=0, since_begin=60_000, dropped=False, first=False)
@example(clustering=True, locked=True, since_lock=0, since_begin=60_001, dropped=False, first=False)
@example(clustering=True, locked=True, since_lock=30_000, since_begin=0, dropped=False, first=True)
@example(clustering=True, locked=True, since_lock=30_001, since_begin=0, dropped=False, first=True)
def test_the_gate(clustering, locked, since_lock, since_begin, dropped, first):
    """OR-01 OR-02 LK-04 LK-05"""
    config = Config(consume_mode="orderly", message_model="clustering" if clustering else "broadcasting")
    now = 200_000
    pq = make_pq(0, 1)
    pq = evolve(pq, locked=locked, dropped=dropped, last_lock_timestamp=now - since_lock)
    gate = process_gate(pq, config, now, now - since_begin, first)
    record_rules(gate.rules)
    lock_ok = not clustering or (locked and since_lock <= 30_000)
    if dropped:
        assert gate.step is Step.STOP
    elif not lock_ok:
        assert (gate.step, gate.delay) == (Step.TRY_LOCK_LATER, 100 if first else 10)
    elif since_begin > 60_000:
        assert (gate.step, gate.delay, gate.rules) == (Step.RESUBMIT_LATER, 10, ("OR-02",))
    else:
        assert gate.step is Step.TAKE


@given(offset=st.integers(0, 1_000), reconsume=st.integers(0, 20))
def test_broadcasting_still_retries_locally(offset, reconsume):
    """OR-17: an orderly BROADCASTING consumer requeues a suspended message; "broadcast never retries" is about the
    concurrently path only."""
    config = Config(consume_mode="orderly", message_model=MessageModel.BROADCASTING)
    broker = create_broker(config, GROUP, {TOPIC: 1})
    pq, msgs = process_take(make_pq(offset, 1, reconsume), config)
    assert process_gate(pq, config, 0, 0, True).step is Step.TAKE
    result = process_consume_result(broker, pq, config, GROUP, msgs, R.SUSPEND, 0)
    assert [(o, m.reconsume_times) for o, m in result.pq.msg_tree_map.items()] == [(offset, reconsume + 1)]
    assert result.resubmit_after == 1000
    event("OR-17")


@given(st.integers(0, 50), st.integers(0, 50), st.booleans())
def test_commit_stores_plain_offset(stored, committed, dropped):
    """OR-10: a commit may move the in-memory offset backwards (increaseOnly = false); a dropped queue's is ignored."""
    config = Config(consume_mode="orderly")
    mq = MessageQueue(TOPIC, 0)
    store = update_offset(create_offset_store(config), mq, stored, False)
    pq = evolve(create_process_queue(), dropped=dropped)
    assert get_offset(process_store_commit(store, mq, pq, committed), mq) == (stored if dropped else committed)


@pytest.mark.parametrize("profile", ["4.9.8", "5.3.3"])
@pytest.mark.parametrize("running", [False, True])
@pytest.mark.parametrize("lock_age", [5_000, 25_000])
def test_removing_a_consuming_queue(profile, running, lock_age):
    """OR-12: 4.9 keeps a queue whose listener runs and unlocks later if messages remain; 5.x unlocks at once
    when the listener is idle, and force-unlocks a dropped queue whose lock is older than 20 s."""
    mq = MessageQueue(TOPIC, 0)
    config = evolve(get_suite_config(), profile=profile, consume_mode="orderly", message_model="clustering")
    broker = on_lock_batch(create_broker(config, GROUP, {TOPIC: 1}), GROUP, (mq,), "A", 0).broker
    pq, _ = put_message(evolve(create_process_queue(0), locked=True), [Message(TOPIC, queue_offset=0)])
    store = update_offset(create_offset_store(config), mq, 3, False)
    removal = process_remove_queue(broker, store, config, GROUP, "A", mq, pq, lock_age, running)
    force = profile == "5.3.3" and lock_age > 20_000
    assert removal.removed is (not running or force)
    assert removal.persisted == ((mq, 3),) and removal.rules == ("OR-12",)
    unlocked = mq not in {q for (_g, q) in removal.peer.queue_locks.keys()}
    if profile == "4.9.8":
        assert not unlocked and removal.unlock_at == (None if running else lock_age + 20_000)
        # 4.9.8 drops the cached offset before it knows whether the queue can leave.
        assert get_offset(removal.offset_store, mq) is None
    else:
        assert unlocked is removal.removed and removal.unlock_at is None
        assert get_offset(removal.offset_store, mq) == (None if removal.removed else 3)


@pytest.mark.parametrize("running", [False, True])
@pytest.mark.parametrize(
    "consume_mode, message_model",
    [("orderly", "broadcasting"), ("concurrently", "clustering"), ("concurrently", "broadcasting")],
)
def test_any_other_queue_just_leaves(consume_mode, message_model, running):
    """OR-12: only an orderly CLUSTERING queue needs the consume lock to leave; any other queue leaves at once, its
    offset persisted (sent to the broker, or written to the local file) and dropped from the cache, the broker's
    locks untouched."""
    mq = MessageQueue(TOPIC, 0)
    config = evolve(get_suite_config(), consume_mode=consume_mode, message_model=message_model)
    broker = on_lock_batch(create_broker(config, GROUP, {TOPIC: 1}), GROUP, (mq,), "A", 0).broker
    pq, _ = put_message(create_process_queue(0), [Message(TOPIC, queue_offset=0)])
    store = update_offset(create_offset_store(config), mq, 3, False)
    removal = process_remove_queue(broker, store, config, GROUP, "A", mq, pq, 5_000, running)
    assert (removal.removed, removal.unlock_at, removal.rules) == (True, None, ("OR-12",))
    assert removal.pq.dropped and removal.peer.queue_locks == broker.queue_locks
    assert get_offset(removal.offset_store, mq) is None
    if message_model == "clustering":
        assert removal.persisted == ((mq, 3),)
    else:
        assert removal.persisted == () and removal.offset_store.file.get(mq) == 3


@pytest.mark.parametrize("version", ["4.9.8", "5.3.3"])
def test_a_dropped_queue_is_force_unlocked_only_past_20_s_since_its_lock(version):
    """[OR-12] 5.x removeUnnecessaryMessageQueue: forceUnlock when the queue is dropped and now is strictly later
    than its last lock + 20 s (RebalancePushImpl 5.3.3 L113); 4.9.8 has no force unlock."""
    config = Config(consume_mode="orderly", profile=version)
    pq = evolve(create_process_queue(1_000), dropped=True, last_lock_timestamp=1_000)
    forced = [is_force_unlock(config, pq, 1_000 + age) for age in (19_999, 20_000, 20_001)]
    assert forced == ([False, False, True] if version == "5.3.3" else [False] * 3)
    assert not is_force_unlock(config, evolve(pq, dropped=False), 1_000 + 20_001)


@pytest.mark.parametrize("retried", [False, True])
def test_the_give_up_send_is_stored_at_the_send_time_in_the_queue_the_producer_chose(retried):
    """OR-08, OR-09: sendMessageBack is a producer send (ConsumeMessageOrderlyService 4.9.8 L377-L398): the producer
    picks a queue of %RETRY%<group> (TopicPublishInfo.selectOneMessageQueue, 4.9.8 L88-L96; the model's draw stands
    for its random start) and the broker stores the copy at the instant it answers. At r = max the 4.9 broker sends
    it to the DLQ, parked first for DELAY 3 + r; resent by the producer's retry without the header (RS-14) it is a
    delayed retry whose real queue is the one the producer chose."""
    config = evolve(get_suite_config(), profile="4.9.8", consume_mode="orderly", max_reconsume_times=2,
                    retry_queue_nums=4)
    broker = create_broker(config, GROUP, {TOPIC: 1})
    (msg,) = make_messages(5, 1, reconsume_times=2)
    send_back = process_check_reconsume_times(broker, config, GROUP, (msg,), 7_000, True, 3, retried)
    (stored,) = send_back.sent
    assert (stored.store_timestamp, stored.born_timestamp, stored.properties["DELAY"]) == (7_000, 7_000, "5")
    real = ("%RETRY%g", "3") if retried else ("%DLQ%g", "0")
    assert (stored.properties["REAL_TOPIC"], stored.properties["REAL_QID"]) == real
