"""Focused checks of chapters 07-11: each test names the rule it pins; expected values come from the reference."""

from __future__ import annotations

import pytest
from attrs import evolve
from hypothesis import Phase, event, find, given, settings
from hypothesis import strategies as st

from model.broker.consumer_offsets import query_offset
from model.client.concurrently import CONCURRENTLY_SERVICE, compute_ack_index
from model.client.consume_mode import get_consume_service
from model.client.listener import ConsumeStatus, ListenerResult
from model.client.observations import DlqArrival, ListenerInvoked, PullObserved, SendBackOutcome
from model.client.orderly_service import ORDERLY_SERVICE
from model.client.rebalance import compute_allocation, get_subscribed_queues
from model.system.drain import compute_capped_result, drain, is_quiescent
from model.system.events import Advance, CompleteConsume, Crash, DeliverOneway, ExpireQueueHead, Produce, SetMembers
from model.system.step import create_system
from model.values.config import Config, ConsumeMode, MessageModel
from model.values.errors import IllegalTransition
from model.values.message import MessageQueue, java_string_hash
from model.values.names import GROUP, TOPIC
from model.values.profiles import PROFILES
from oracle.ownership import compute_averagely
from properties.steps import run

Q0 = MessageQueue(TOPIC, 0)
FAIL = ListenerResult(ConsumeStatus.RECONSUME_LATER)


@given(mode=st.sampled_from(ConsumeMode), profile=st.sampled_from(sorted(PROFILES)))
def test_concurrently_service_is_chosen(mode, profile):
    """[CC-01] consume_mode alone picks the service, whatever the profile."""
    event("CC-01")
    expected = ORDERLY_SERVICE if mode is ConsumeMode.ORDERLY else CONCURRENTLY_SERVICE
    assert get_consume_service(Config(consume_mode=mode, profile=profile)) is expected


def test_ack_index_rules():
    """[CC-03] [CC-04] RECONSUME_LATER ignores ackIndex; success clamps it; an exception is RECONSUME_LATER."""
    assert compute_ack_index(ListenerResult(ConsumeStatus.RECONSUME_LATER, ack_index=5), 3)[1] == -1
    assert compute_ack_index(ListenerResult(ConsumeStatus.CONSUME_SUCCESS), 3)[1] == 2
    assert compute_ack_index(ListenerResult(ConsumeStatus.CONSUME_SUCCESS, ack_index=-1), 3)[1] == -1
    assert compute_ack_index(ListenerResult(ConsumeStatus.EXCEPTION, ack_index=1), 3)[:2] == (
        ConsumeStatus.RECONSUME_LATER, -1)


def test_broadcasting_never_retries():
    """[SY-08] [CC-09] [PL-09] Failed broadcast messages are dropped; the offset still reaches the end."""
    system = create_system(Config(message_model=MessageModel.BROADCASTING), ("c1", "c2"), topic_queue_nums=1)
    system, _ = run(system, *[Produce(f"k{i}") for i in range(5)], Advance(0))
    system, seen, _ = drain(system, lambda r: CompleteConsume(r.request_id, FAIL))
    assert not [o for o in seen if isinstance(o, SendBackOutcome)]
    assert all(mq.topic == TOPIC for c in system.consumers.values() for mq in c.process_queues)
    assert all(c.offset_store.offsets[Q0].value == 5 for c in system.consumers.values())


def test_a_tag_hash_is_javas_string_hash_code():
    """[PL-04] The broker filters by String.hashCode() of the tag: 16-bit code units, 32-bit overflow, signed.
    Known values: "Aa" and "BB" collide at 2112; "polygenelubricants" is Integer.MIN_VALUE; "中文" (U+4E2D U+6587)
    is 31 x 20013 + 25991; a character outside the BMP counts as its two surrogates."""
    assert java_string_hash("Aa") == java_string_hash("BB") == 2112
    assert java_string_hash("polygenelubricants") == -(2**31)
    assert java_string_hash("中文") == 646_394 and java_string_hash("") == 0
    assert java_string_hash("\U0001F600") == 31 * 0xD83D + 0xDE00


def test_tag_hash_collision_is_dropped_by_the_client():
    """[PL-04] [PL-05] [PL-06] "Aa" and "BB" share a hash: the broker passes "BB", the client drops it, and the
    offset passes it only by correctTagsOffset after the 15 s long-poll."""
    assert java_string_hash("Aa") == java_string_hash("BB")
    system = create_system(Config(), topic_queue_nums=1, subscription=frozenset({"Aa"}))
    system, seen = run(system, Produce("k1", tags="BB"), Advance(1000))
    assert not [o for o in seen if isinstance(o, ListenerInvoked)]
    assert system.consumers["c1"].offset_store.offsets.get(Q0) is None
    system, _ = run(system, Advance(16_000))
    assert system.consumers["c1"].offset_store.offsets[Q0].value == 1


def test_the_broker_filters_by_the_subscriptions_tag_hashes():
    """[PL-04] The broker filters a pull by the hash codes of the subscribed tags: of "CC" and "Aa" under a
    subscription to "Aa", the pull finds one message and moves past both."""
    system = create_system(Config(), topic_queue_nums=1, subscription=frozenset({"Aa"}))
    _, seen = run(system, Produce("k1", tags="CC"), Produce("k2", tags="Aa"), Advance(1000))
    pulls = [(o.status, o.offset, o.next_offset, o.found) for o in seen
             if isinstance(o, PullObserved) and o.queue == Q0]
    assert pulls[0] == ("FOUND", 0, 2, 1)


# CT-04 (reference §1.4, #5481): the late failure is sent back a second time before 5.1.0.
LATE_SEND_BACKS = {"4.9.1": 2, "4.9.8": 2, "5.0.0": 2, "5.3.3": 1, "develop": 1}


@settings(max_examples=10)
@given(profile=st.sampled_from(sorted(LATE_SEND_BACKS)), minutes=st.sampled_from([1, 2, 15, 60]))
def test_consume_timeout(profile, minutes):
    """[CT-01] [CT-02] [CT-03] [CT-04] A stuck listener is sent back at level 3 by the run at 2 x consumeTimeout
    (the first run, one period after start, finds it exactly consumeTimeout old: not expired) without moving the
    offset; its late failure sends it back again before 5.1.0 only."""
    period = minutes * 60_000
    system = create_system(Config(profile=profile, consume_timeout=minutes), topic_queue_nums=1)
    system, _ = run(system, Produce("k1"), Advance(0))
    (request_id,) = system.requests
    system, seen = run(system, Advance(2 * period - 1))
    assert not [o for o in seen if isinstance(o, SendBackOutcome)]
    system, seen = run(system, Advance(2 * period))
    assert [o.delay_level for o in seen if isinstance(o, SendBackOutcome)] == [3]
    event("CT-01")
    event("CT-02")
    # cleanExpiredMsg itself never moves the offset; only correctTagsOffset (PL-06) does, once the cache is empty.
    assert all("PL-06" in o.rules for o in seen if type(o).__name__ == "OffsetUpdated")
    event("CT-03")
    system, late = run(system, CompleteConsume(request_id, FAIL))
    assert len([o for o in seen + late if isinstance(o, SendBackOutcome)]) == LATE_SEND_BACKS[profile]
    event("CT-04")


def test_broker_offset_decreases_on_a_late_oneway():
    """[SY-02] [RB-05] [PL-07] Two persists delivered in reverse order move the broker's offset back."""
    system = create_system(Config(), topic_queue_nums=1, hold_oneway=True)
    system, _ = run(system, Produce("k1"), Advance(0))
    system, _ = run(system, CompleteConsume(min(system.requests)), Advance(10_000))
    system, _ = run(system, Produce("k2"), Advance(10_001))
    system, _ = run(system, CompleteConsume(min(system.requests)), Advance(15_000))
    old, new = [c.offset for c in system.oneway if c.queue == Q0]
    assert (old, new) == (1, 2)
    system, _ = run(system, DeliverOneway(len(system.oneway) - 1))
    assert query_offset(system.broker, GROUP, TOPIC, 0) == 2
    index = next(i for i, c in enumerate(system.oneway) if c.queue == Q0)
    system, _ = run(system, DeliverOneway(index))
    assert query_offset(system.broker, GROUP, TOPIC, 0) == 1


# PL-08 (reference §6, #7634): from 5.2.0 the offset is fixed and the queue re-added at once.
OFFSET_ILLEGAL_FIXED_AT_ONCE = {"4.9.1": False, "4.9.8": False, "5.0.0": False, "5.3.3": True, "develop": True}


@settings(max_examples=10)
@given(profile=st.sampled_from(sorted(OFFSET_ILLEGAL_FIXED_AT_ONCE)), produced=st.integers(1, 5), data=st.data())
def test_offset_illegal_moves_to_the_queue_head(profile, produced, data):
    """[PL-08] A pull below the broker's min offset is OFFSET_ILLEGAL: 4.9 fixes the offset 10 s later and re-adds
    the queue at the next 20 s rebalance; 5.3.3 fixes and re-adds at once."""
    head = data.draw(st.integers(1, produced), label="new min offset")
    system = create_system(Config(profile=profile), topic_queue_nums=1)
    system, _ = run(system, *[Produce(f"k{i}") for i in range(produced)], ExpireQueueHead(Q0, head))
    if not OFFSET_ILLEGAL_FIXED_AT_ONCE[profile]:
        system, _ = run(system, Advance(19_999))
        assert not system.requests and query_offset(system.broker, GROUP, TOPIC, 0) == head
    system, _ = run(system, Advance(20_000 if not OFFSET_ILLEGAL_FIXED_AT_ONCE[profile] else 0))
    invoked = [m.queue_offset for r in system.requests.values() for m in r.messages if r.queue == Q0]
    assert sorted(invoked) == list(range(head, produced)), (profile, invoked)
    event("PL-08")


def test_rebalance_discards_in_flight_results():
    """[RB-02] [RB-03] [RB-04] [RB-01] The old owner's result is discarded; the new owner re-consumes from the
    persisted offset."""
    system = create_system(Config(), ("c1",), topic_queue_nums=1)
    system, _ = run(system, Produce("k1"), Advance(0))
    (request_id,) = system.requests
    system, _ = run(system, SetMembers(("c2",)), Advance(1))
    system, seen = run(system, CompleteConsume(request_id))
    assert seen[0].discarded
    assert (seen[0].ack_index, seen[0].time, seen[0].rules) == (0, system.now, ("CC-03", "RB-03"))
    assert [m.uniq_key for r in system.requests.values() for m in r.messages] == ["k1"]


def count_duplicates(finished: int) -> tuple[int, int]:
    """[RB-06] [SY-11] Head stuck, `finished` messages behind it done, crash after a persist: (duplicates, the
    finished messages at or above the persisted offset)."""
    system = create_system(Config(consume_concurrently_max_span=4, pull_batch_size=2), ("c1", "c2"),
                           topic_queue_nums=1)
    system, _ = run(system, *[Produce(f"k{i}") for i in range(finished + 1)])
    owner = next(c for c in system.consumers.values() if Q0 in c.process_queues).client_id
    system, _ = run(system, Advance(1))
    done = set()
    while True:
        pending = [r for r in system.requests.values() if r.messages[0].queue_offset > 0]
        if not pending:
            break
        done.add(pending[0].messages[0].uniq_key)
        system, _ = run(system, CompleteConsume(pending[0].request_id), Advance(system.now + 50))
    system, _ = run(system, Advance(system.now + 10_000), Crash(owner))
    system, seen = run(system, Advance(system.now + 30_000))
    system, more, _ = drain(system)
    again = [m.uniq_key for o in seen + more if isinstance(o, ListenerInvoked) for m in o.messages]
    return len(set(again) & done), len(done)


def test_duplicates_folklore_refuted():
    """[SY-11] REFUTATION of seed 003's "at most span − 1 duplicates" — even span + pullBatchSize fails: Hypothesis
    finds (and shrinks to) a history with more."""
    span, batch = 4, 2
    found = find(st.integers(0, 30), lambda n: count_duplicates(n)[0] > span + batch,
                 settings=settings(max_examples=50, database=None, phases=tuple(Phase)))
    duplicates, finished = count_duplicates(found)
    print(f"seed 003 refuted: {found} messages finished behind a stuck head, crash after a persist -> "
          f"{duplicates} duplicates > maxSpan {span} + pullBatchSize {batch}; true count: {finished} finished "
          f"at or above the persisted offset")
    assert found == span + batch + 1 and duplicates == found


HEAD_STUCK = st.lists(st.one_of(st.integers(0, 9).map(lambda i: ("complete", i)), st.just(("tick", 50))),
                      max_size=40)


@settings(max_examples=30, deadline=None)
@given(HEAD_STUCK)
def test_span_bound_holds_while_the_tail_stays_cached(history):
    """[SY-11] [PL-03] When the bound is true: offset 0 stuck, other messages finishing in any order. If every
    pull found the previous pull's last message still cached, nothing was pulled past maxSpan + pullBatchSize,
    so a crash repeats at most that many finished messages; otherwise Hypothesis sees the bound fail."""
    span, batch = 4, 2
    system = create_system(Config(consume_concurrently_max_span=span, pull_batch_size=batch), ("c1", "c2"),
                           topic_queue_nums=1)
    owner = next(c for c in system.consumers if Q0 in system.consumers[c].process_queues)
    system, _ = run(system, *[Produce(f"k{i}") for i in range(30)])
    finished, tail_cached = set(), True
    for action, arg in history + [("tick", 10_000)]:
        pq = system.consumers[owner].process_queues[Q0]
        last = pq.msg_tree_map.last_key() if pq.msg_count else None
        running = sorted(r for r, q in system.requests.items() if q.messages[0].queue_offset > 0)
        if action == "complete" and running:
            request = system.requests[running[arg % len(running)]]
            finished.update(m.uniq_key for m in request.messages)
            system, seen = run(system, CompleteConsume(request.request_id))
        else:
            system, seen = run(system, Advance(system.now + arg))
        first = next((o for o in seen if isinstance(o, PullObserved) and o.status == "FOUND"), None)
        tail_cached &= first is None or last is None or last == first.offset - 1
    system, _ = run(system, Crash(owner), Advance(system.now + 30_000))
    system, seen, _ = drain(system)
    duplicates = {m.uniq_key for o in seen if isinstance(o, ListenerInvoked) for m in o.messages} & finished
    if tail_cached:
        assert len(duplicates) <= span + batch
        event("SY-11")
        event("PL-03")
    else:
        event("SY-11 a pull after the cache drained behind its stuck head")


def test_duplicates_are_finished_messages_above_persisted():
    """[SY-11] The true bound: exactly the finished messages at or above the persisted offset (the stuck head)."""
    for n in (0, 3, 12):
        duplicates, finished = count_duplicates(n)
        assert duplicates == finished


def test_fallback_loses_origin_id():
    """[SY-09] [CC-06] [CC-05] A first failure through the fallback loses ORIGIN_MESSAGE_ID in 4.9.8 and
    5.3.3, and keeps it in develop."""
    for profile, kept in (("4.9.8", False), ("5.3.3", False), ("develop", True)):
        system = create_system(Config(profile=profile), topic_queue_nums=1)
        system, _ = run(system, Produce("k1"), Advance(0))
        (request_id,) = system.requests
        original = system.requests[request_id].messages[0].msg_id
        system, _ = run(system, CompleteConsume(request_id, FAIL, send_back_rpc_fails=True), Advance(11_000))
        retry = [m for r in system.requests.values() for m in r.messages]
        assert [m.reconsume_times for m in retry] == [1]
        # develop keeps the id the client knows the message by (its UNIQ_KEY); 4.9.8 / 5.3.3 lose it.
        assert retry[0].origin_message_id == ("k1" if kept else None), (original, retry[0].origin_message_id)


def test_local_resubmit_after_both_send_backs_fail():
    """[CC-07] [CC-08] [CC-02] Both failing: reconsumeTimes + 1 locally, redelivered from the same queue 5 s later."""
    system = create_system(Config(), topic_queue_nums=1)
    system, _ = run(system, Produce("k1"), Advance(0))
    (request_id,) = system.requests
    system, _ = run(system, CompleteConsume(request_id, FAIL, True, True), Advance(4_999))
    assert not system.requests
    system, _ = run(system, Advance(5_000))
    (request,) = system.requests.values()
    assert (request.queue, request.messages[0].reconsume_times) == (Q0, 1)


def test_a_fallback_the_broker_refuses_is_retried_locally():
    """[CC-07] The send-back fails and the broker refuses the fallback send too (a group whose %RETRY% topic has
    no queues, retryQueueNums 0): the outcome is "failed" with nothing stored, and the message comes back from the
    same queue 5 s later with reconsumeTimes + 1."""
    system = create_system(Config(retry_queue_nums=0), topic_queue_nums=1)
    system, _ = run(system, Produce("k1"), Advance(0))
    (request_id,) = system.requests
    system, observed = run(system, CompleteConsume(request_id, FAIL, True, False), Advance(4_999))
    outcomes = [o for o in observed if isinstance(o, SendBackOutcome)]
    assert [(o.message.uniq_key, o.path, o.stored, o.time) for o in outcomes] == [("k1", "failed", None, 0)]
    assert "CC-07" in outcomes[0].rules and not system.requests
    system, _ = run(system, Advance(5_000))
    (request,) = system.requests.values()
    assert (request.queue, request.messages[0].reconsume_times) == (Q0, 1)


def test_a_held_commit_or_a_pending_resubmission_is_not_quiescence():
    """[SY-03] A drained system is quiescent; the same system with one one-way commit not yet delivered, or one
    resubmission pending, is not: draining must go on until each is done."""
    system = create_system(Config(), topic_queue_nums=1)
    system, _ = run(system, Produce("k1"), Advance(0))
    system, _, _ = drain(system, lambda r: CompleteConsume(r.request_id, compute_capped_result(r, 1)))
    assert is_quiescent(system)
    assert not is_quiescent(evolve(system, pending_resubmits=1))
    assert not is_quiescent(evolve(system, oneway=system.oneway.append(("c1", Q0, 1))))


def test_a_broadcasting_consumer_with_empty_queues_is_quiescent_at_once():
    """[SY-03] BROADCASTING, three queues, one message in queue 0: once it is consumed the system is quiescent,
    though the two empty queues have no offset yet (a BROADCASTING store has nothing to read for them); draining
    does not wait for their long polls to come back 15 s later."""
    system = create_system(Config(message_model="broadcasting"), topic_queue_nums=3)
    system, _ = run(system, Produce("k1", queue_id=0), Advance(0))
    system, _, _ = drain(system, lambda r: CompleteConsume(r.request_id, compute_capped_result(r, 1)))
    assert system.now == 0 and is_quiescent(system)


def test_a_drain_that_cannot_finish_says_why():
    """[SY-03] drain stops with an illegal transition naming its state and why: still busy after its event budget,
    or idle with nothing left to wait for (no live consumer)."""
    system = create_system(Config(), topic_queue_nums=1)
    system, _ = run(system, Produce("k1"), Produce("k2"), Advance(0))
    listener = lambda r: CompleteConsume(r.request_id, compute_capped_result(r, 1))  # noqa: E731
    with pytest.raises(IllegalTransition, match=r"in state not quiescent: still busy after 1 events$"):
        drain(system, listener, max_events=1)
    with pytest.raises(IllegalTransition, match=r"in state idle but not quiescent: no timer left"):
        drain(create_system(Config(), ()), listener)


def test_flow_control_threshold():
    """[PL-01] [PL-02] [PL-03] [SY-01] [SY-03] [SY-04] [SY-05] [SY-06] [SY-07] [SY-10] With nothing consumed the
    cache stops growing just past the threshold (strict >, plus one batch)."""
    system = create_system(Config(pull_threshold_for_queue=5, pull_batch_size=4), topic_queue_nums=1)
    system, _ = run(system, *[Produce(f"k{i}") for i in range(20)], Advance(1000))
    assert system.consumers["c1"].process_queues[Q0].msg_count == 8


@settings(max_examples=10)
@given(profile=st.sampled_from(sorted(PROFILES)), retry_times=st.integers(1, 8))
def test_seed_000_cap_gives_one_plus_retry_times_invocations(profile, retry_times):
    """[SY-07] Seed 000's cap (DELAY >= 2 + retryTimes -> level -1) works through the stale DELAY of a retry
    (min(2 + reconsumeTimes, 18), §5.6): 1 + retryTimes invocations, reconsumeTimes 0..retryTimes, then the DLQ."""
    system = create_system(Config(profile=profile), topic_queue_nums=1)
    system, first = run(system, Produce("order-1"), Advance(0))
    system, rest, _ = drain(system, lambda r: CompleteConsume(r.request_id, compute_capped_result(r, retry_times)))
    invoked = [o.messages[0].reconsume_times for o in first + rest if isinstance(o, ListenerInvoked)]
    assert invoked == list(range(retry_times + 1))
    assert [o.message.uniq_key for o in first + rest if isinstance(o, DlqArrival)] == ["order-1"]
    event("SY-07")


@given(topic_queues=st.integers(1, 8), retry_queues=st.integers(1, 3), n_members=st.integers(1, 5))
def test_each_topic_is_allocated_on_its_own(topic_queues, retry_queues, n_members):
    """RB-01: rebalanceByTopic allocates the topic and %RETRY%<group> separately, each over the sorted members."""
    event("RB-01")
    members = tuple(f"c{i}" for i in range(1, n_members + 1))
    system = create_system(Config(retry_queue_nums=retry_queues), members, topic_queue_nums=topic_queues)
    queues = get_subscribed_queues(system)
    for member in members:
        expected = set()
        for topic in {mq.topic for mq in queues}:
            expected |= set(compute_averagely(sorted(q for q in queues if q.topic == topic), sorted(members),
                                                      member))
        assert compute_allocation(system, member) == expected


def test_drain_streams_observations_to_observe():
    """[SY-03] With `observe`, drain hands over each event's observations as they happen and keeps none: the same
    observations in the same order, the same end state and event count as a drain that collects them."""
    system = create_system(Config(max_reconsume_times=2), ("c1", "c2"), topic_queue_nums=2)
    system, _ = run(system, *[Produce(f"k{i}", i % 2) for i in range(12)])
    fail_some = lambda r: CompleteConsume(r.request_id, FAIL if r.messages[0].uniq_key in ("k3", "k7") else  # noqa: E731
                                          ListenerResult())
    collected_system, collected, collected_events = drain(system, fail_some)
    streamed = []
    streamed_system, kept, streamed_events = drain(system, fail_some, observe=streamed.extend)
    assert kept == [] and streamed == collected and len(streamed) > 12
    assert streamed_events == collected_events and streamed_system.now == collected_system.now
    assert any(isinstance(o, SendBackOutcome) for o in streamed)
