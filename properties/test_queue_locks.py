"""Properties of the queue-lock rules of spec/12-orderly.md (LK-01..LK-05), against a dictionary oracle."""

from __future__ import annotations

from hypothesis import event, example, given
from hypothesis import strategies as st
from immutables import Map

from model.broker.locks import get_lock_owner, on_lock_batch, on_unlock_batch
from model.broker.state import Broker
from model.client.orderly_service import ORDERLY_SERVICE
from model.client.process_queue import create_process_queue
from model.client.queue_locks import (
    compute_first_pull_offset,
    is_client_lock_expired,
    is_lock_needed_to_add_queue,
    is_lock_needed_to_consume,
    process_lock_all,
    process_lock_one,
)
from model.system.step import create_system
from model.values.config import Config
from model.values.message import MessageQueue

GROUP = "g"
QUEUES = [MessageQueue("t", i) for i in range(3)]
CLIENTS = ["A", "B", "C"]
LEASE = 60_000  # reference §2: RLM REBALANCE_LOCK_MAX_LIVE_TIME

steps = st.lists(st.tuples(st.sampled_from(["lock", "unlock"]), st.sampled_from(CLIENTS),
                           st.sets(st.sampled_from(QUEUES), min_size=1), st.integers(0, 70_000)), max_size=25)


@given(steps)
def test_a_lease_is_exclusive_until_it_expires(steps):
    """LK-01 LK-02: a queue is granted iff free, the caller's, or older than 60 s; unlock frees only one's own."""
    broker, now, oracle = Broker(), 0, {}  # oracle: mq -> (client, renewed_at)
    for op, client, mqs, advance in steps:
        now += advance
        if op == "lock":
            result = on_lock_batch(broker, GROUP, mqs, client, now)
            broker = result.broker
            expected = {mq for mq in mqs
                        if mq not in oracle or oracle[mq][0] == client or now - oracle[mq][1] > LEASE}
            assert result.granted == expected
            oracle.update({mq: (client, now) for mq in expected})
            event("LK-01 granted" if expected else "LK-01 refused")
        else:
            broker = on_unlock_batch(broker, GROUP, mqs, client)
            for mq in mqs:
                if mq in oracle and oracle[mq][0] == client:
                    del oracle[mq]
            event("LK-02")
        for mq in QUEUES:
            live = oracle.get(mq)
            assert get_lock_owner(broker, GROUP, mq, now) == (live[0] if live and now - live[1] <= LEASE else None)


@given(st.integers(0, 100_000), st.sampled_from(CLIENTS))
def test_lock_all_marks_granted_queues_locked_and_refused_ones_unlocked(now, client):
    """LK-03: lockAll renews the lock mark of every granted queue and clears it on every refused one."""
    broker = on_lock_batch(Broker(), GROUP, QUEUES[:1], "A", 0).broker
    pqs = Map({mq: create_process_queue(0) for mq in QUEUES})
    broker, pqs = process_lock_all(broker, GROUP, client, pqs, now)
    for mq, pq in pqs.items():
        held_by_other = mq == QUEUES[0] and client != "A" and now <= LEASE
        assert pq.locked is not held_by_other
        assert pq.last_lock_timestamp == (0 if held_by_other else now)


@given(st.integers(0, 100_000), st.sampled_from(CLIENTS), st.booleans())
def test_locking_one_queue_marks_it_locked_only_when_granted(now, client, cached):
    """LK-01: lock(mq) is a one-queue lockBatch; a granted lease is the client's own and marks the queue's
    ProcessQueue (if it has one) locked at `now`; a refused one leaves it as it was."""
    mq = QUEUES[0]
    broker = on_lock_batch(Broker(), GROUP, (mq,), "A", 0).broker
    pqs = Map({mq: create_process_queue(0)}) if cached else Map()
    broker, found, granted = process_lock_one(broker, GROUP, client, pqs, mq, now)
    assert granted is (client == "A" or now > LEASE)
    assert get_lock_owner(broker, GROUP, mq, now) == (client if granted else "A")
    if cached:
        pq = found[mq]
        assert (pq.locked, pq.last_lock_timestamp) == ((True, now) if granted else (False, 0))
    else:
        assert found == pqs


@given(st.integers(0, 100_000), st.integers(0, 100_000))
@example(0, 30_000)
@example(0, 30_001)
def test_the_client_mark_goes_stale_after_30_seconds(locked_at, now):
    """LK-04"""
    assert is_client_lock_expired(locked_at, now) is (now - locked_at > 30_000)


# §3, #8772: an orderly BROADCASTING rebalance still locks the queues it adds up to 5.3.1.
BROADCAST_REBALANCE_LOCKS = {"4.9.1": True, "4.9.8": True, "5.0.0": True, "5.3.3": False, "develop": False}


@given(profile=st.sampled_from(sorted(BROADCAST_REBALANCE_LOCKS)),
       model=st.sampled_from(["clustering", "broadcasting"]))
def test_who_needs_a_lock(profile, model):
    """LK-05: BROADCASTING consumes without a lock; its rebalance still locks up to 5.3.1 (#8772)."""
    event("LK-05")
    config = Config(consume_mode="orderly", message_model=model, profile=profile)
    clustering = model == "clustering"
    assert is_lock_needed_to_consume(config) is clustering
    assert is_lock_needed_to_add_queue(config) is (clustering or BROADCAST_REBALANCE_LOCKS[profile])


@given(st.booleans(), st.booleans(), st.integers(0, 100), st.integers(0, 100))
def test_first_pull_reads_the_committed_offset(locked, previously, next_offset, committed):
    """LK-06: only a locked queue pulls; its first pull starts from the store's committed offset (#1825)."""
    offset, now_previously = compute_first_pull_offset(locked, previously, next_offset, committed)
    if not locked:
        assert (offset, now_previously) == (None, previously)
    else:
        assert (offset, now_previously) == (next_offset if previously else committed, True)


@given(delay=st.integers(0, 10_000), model=st.sampled_from(["clustering", "broadcasting"]))
def test_an_unlocked_orderly_pull_waits_the_configured_exception_delay(delay, model):
    """[LK-06] [CFG-01] An orderly pull of an unlocked ProcessQueue is retried pullTimeDelayMillsWhenException
    later: the consumer's setting (1000 ms unless changed), not DefaultMQPushConsumerImpl's field initialiser of
    3000 ms, which the constructor overwrites."""
    config = Config(consume_mode="orderly", message_model=model, pull_time_delay_mills_when_exception=delay)
    system = create_system(config, ("c1",), topic_queue_nums=1)
    unlocked = create_process_queue(0)
    event("LK-06")
    assert ORDERLY_SERVICE.allows_pull(system, "c1", QUEUES[0], unlocked) == (delay, ("LK-06",))
    assert Config().pull_time_delay_mills_when_exception == 1000
