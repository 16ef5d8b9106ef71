"""A queue changing hands (spec/10-rebalance.md, spec/12-orderly.md): what the old owner must do before it lets
go, and what the new owner's ProcessQueue starts with. Each test puts the system exactly where the rule decides:
finished messages whose offset only the old owner's memory holds, a lock mark of each profile."""

from __future__ import annotations

from hypothesis import event, example, given
from hypothesis import strategies as st

from model.broker.consumer_offsets import commit_offset, on_query_consumer_offset, query_offset
from model.client.observations import Note
from model.client.offset_store import get_offset
from model.client.process_queue import PULL_MAX_IDLE_TIME, create_process_queue, is_pull_expired
from model.client.remote_offsets import compute_pull_from_where
from model.system.events import Advance, ExpireQueueHead, Produce, SetMembers
from model.system.step import create_system
from model.values.config import Config, ConsumeMode, MessageModel
from model.values.message import MessageQueue
from model.values.names import GROUP, TOPIC
from model.values.profiles import PROFILES, get_profile
from model.values.records import evolve
from model.values.wire import QueryConsumerOffset, exchange
from properties.steps import complete_running, run

Q0 = MessageQueue(TOPIC, 0)
VERSIONS = sorted(PROFILES)


def example_each(name: str, values):
    """Every value as an explicit example: the boundary between profiles is drawn on purpose, not by chance."""
    def decorate(test):
        for value in values:
            test = example(**{name: value})(test)
        return test
    return decorate



@given(counts=st.lists(st.integers(0, 6), min_size=2, max_size=4), mode=st.sampled_from(ConsumeMode))
def test_a_lost_queue_is_persisted_before_it_is_forgotten(counts, mode):
    """[RB-02] [RB-04] The old owner persists a lost queue's in-memory offset before removeOffset, so the new
    owner resumes there: the broker's offset after the hand-over is exactly what the old owner had consumed, even
    when no persistAll or piggybacked commit carried it yet."""
    config = Config(consume_mode=mode)
    system = create_system(config, ("c1",), topic_queue_nums=len(counts))
    produced = [Produce(f"q{q}-{i}", queue_id=q) for q, n in enumerate(counts) for i in range(n)]
    system = complete_running(run(system, *produced, Advance(0))[0])
    before = system.consumers["c1"]
    in_memory = {mq: get_offset(before.offset_store, mq) for mq in before.process_queues}
    broker = {mq: query_offset(system.broker, GROUP, mq.topic, mq.queue_id) for mq in in_memory}
    system, seen = run(system, SetMembers(("c1", "c2")))
    lost = [mq for mq in in_memory if mq not in system.consumers["c1"].process_queues]
    assert lost, "two members of a group of one: the first keeps only part of the queues"
    if mode is ConsumeMode.CONCURRENTLY:  # an orderly queue leaves through OR-12 (test_orderly_consume.py)
        notes = [(o.what, o.time, o.rules) for o in seen if isinstance(o, Note) and "RB-02" in o.rules]
        assert sorted(notes) == sorted((f"c1 dropped {mq}", system.now, ("RB-02",)) for mq in lost)
    event("RB-02")
    for mq in lost:
        expected = broker[mq] if in_memory[mq] is None else in_memory[mq]
        assert query_offset(system.broker, GROUP, mq.topic, mq.queue_id) == expected, (mq, in_memory[mq])


@given(consumed=st.integers(1, 5))
def test_a_leaving_instance_persists_what_it_consumed(consumed):
    """[RB-01] [RB-02] An instance that leaves the group shuts down gracefully: before it goes, it drops its queues
    and persists their offsets, so the broker holds what it consumed though no 5 s persist ran yet."""
    system = create_system(Config(), ("c1",), topic_queue_nums=1)
    system, _ = run(system, *[Produce(f"k{i}") for i in range(consumed)], Advance(0))
    system = complete_running(system)
    assert query_offset(system.broker, GROUP, TOPIC, 0) == -1  # nothing persisted yet
    system, _ = run(system, SetMembers(("c2",)))
    assert "c1" not in system.consumers and query_offset(system.broker, GROUP, TOPIC, 0) == consumed


@given(version=st.sampled_from(VERSIONS))
@example_each("version", VERSIONS)
def test_a_new_orderly_process_queue_starts_with_its_profiles_lock_mark(version):
    """[LK-06] A rebalance that adds a queue marks the new ProcessQueue locked from 4.9.5 on (#2621) and leaves it
    unlocked before, so a 4.9.1 orderly consumer waits for the next lockAll before its first pull."""
    config = Config(consume_mode=ConsumeMode.ORDERLY, profile=version)
    system = create_system(config, ("c1",), topic_queue_nums=2)
    pqs = system.consumers["c1"].process_queues
    mark = get_profile(version).new_process_queue_locked
    event("LK-06")
    assert {MessageQueue(TOPIC, q) for q in range(2)} <= set(pqs)
    assert {mq: pq.locked for mq, pq in pqs.items()} == dict.fromkeys(pqs, mark)


@given(stored=st.sampled_from((0, 1, 2)), produced=st.integers(3, 6))
def test_a_stored_offset_of_zero_is_a_stored_offset(stored, produced):
    """[RB-04] computePullFromWhere takes any stored offset >= 0 as it is — 0 included: a BROADCASTING instance
    whose offsets.json says 0 starts at 0, not at the queue's end (CONSUME_FROM_LAST_OFFSET applies only when
    nothing is stored)."""
    config = Config(message_model=MessageModel.BROADCASTING)
    system = create_system(config, ("c1",), topic_queue_nums=1)
    system, _ = run(system, *[Produce(f"k{i}") for i in range(produced)])
    consumer = system.consumers["c1"]
    store = consumer.offset_store
    consumer = evolve(consumer, offset_store=evolve(store, file=store.file.set(Q0, stored)))
    event("RB-04")
    assert compute_pull_from_where(system, consumer, Q0) == stored


@given(model=st.sampled_from(tuple(MessageModel)), head_kept=st.booleans(), first=st.booleans(),
       produced=st.integers(1, 6))
def test_with_nothing_stored_a_new_owner_starts_where_consume_from_where_says(model, head_kept, first, produced):
    """[RB-04] Nothing committed (CLUSTERING) or nothing in offsets.json (BROADCASTING): CLUSTERING starts at 0
    while the queue's head is still stored (the broker answers 0); otherwise CONSUME_FROM_FIRST_OFFSET starts at 0
    (RebalancePushImpl's 0L, even when the head is gone: the pull is then OFFSET_ILLEGAL, PL-08) and
    CONSUME_FROM_LAST_OFFSET at the queue's end."""
    where = "first" if first else "last"
    system = create_system(Config(message_model=model, consume_from_where=where), ("c1",), topic_queue_nums=1)
    system, _ = run(system, *[Produce(f"k{i}") for i in range(produced)])
    low = 0 if head_kept else 1
    system, _ = run(system, ExpireQueueHead(Q0, low))
    found = compute_pull_from_where(system, system.consumers["c1"], Q0)
    event("RB-04")
    if model is MessageModel.CLUSTERING and head_kept:
        assert found == 0
    else:
        assert found == (0 if first else produced)


@given(committed=st.none() | st.integers(0, 5), min_offset=st.integers(0, 3), produced=st.integers(0, 2),
       version=st.sampled_from(VERSIONS))
@example(committed=None, min_offset=0, produced=0, version="5.0.0")
@example(committed=None, min_offset=0, produced=0, version="5.3.3")
def test_the_broker_answers_a_never_committed_queue_0_only_while_its_head_is_stored(committed, min_offset, produced,
                                                                                  version):
    """[RB-04] QUERY_CONSUMER_OFFSET (ConsumerManageProcessor): a committed offset as it is, 0 included; with none,
    0 while the queue's first message is still stored, else QUERY_NOT_FOUND (None) — and from 5.1.0 also
    QUERY_NOT_FOUND for a queue that never held a message (checkInMemByConsumeOffset finds no first unit)."""
    system = create_system(Config(profile=get_profile(version)), ("c1",), topic_queue_nums=1)
    system, _ = run(system, *[Produce(f"m{i}") for i in range(produced)])
    if committed is not None:
        system = evolve(system, broker=commit_offset(system.broker, GROUP, TOPIC, 0, committed))
    answer = route_query(system)
    event("RB-04")
    head_gone = min_offset > 0 if produced else False
    empty_refused = produced == 0 and version in ("5.3.3", "develop")
    expected = committed if committed is not None else None if head_gone or empty_refused else 0
    assert on_query_consumer_offset(system.broker, GROUP, TOPIC, 0, min_offset if produced else 0,
                                    version in ("5.3.3", "develop")) == expected
    if not min_offset or not produced:
        assert answer == expected
    # Without a minimum and the flag, the queue's head is taken to be still stored (a store that deleted nothing).
    assert on_query_consumer_offset(system.broker, GROUP, TOPIC, 0) == (0 if committed is None else committed)


def route_query(system):
    """The answer the cluster gives a client's QUERY_CONSUMER_OFFSET of queue 0 (the broker's own head)."""
    return exchange(system, QueryConsumerOffset(GROUP, Q0))[1].offset


@given(last_pull=st.integers(0, 10**9), around=st.sampled_from((-1, 0, 1)))
def test_a_queue_is_stale_only_after_more_than_120_s_without_a_pull(last_pull, around):
    """[LK-08] isPullExpired (PQ-11) is strict: a queue last pulled exactly 120 s ago is kept, 1 ms later it is
    dropped and added again by the rebalance."""
    pq = evolve(create_process_queue(last_pull), last_pull_timestamp=last_pull)
    event("LK-08")
    assert is_pull_expired(pq, last_pull + PULL_MAX_IDLE_TIME + around) is (around > 0)
