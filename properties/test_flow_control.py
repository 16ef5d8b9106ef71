"""The pull thresholds of spec/07-pull.md at their boundaries: each limit is strict, so a queue holding exactly the
limit is pulled and one over it waits. Hypothesis draws the limit, and the cache is put one below, at and one
above it on purpose (a random cache would almost never sit on the boundary)."""

from __future__ import annotations

from hypothesis import event, given
from hypothesis import strategies as st

from model.client.observations import Note, PullObserved
from model.client.process_queue import MIB, create_process_queue, put_message
from model.client.pull import compute_flow_control
from model.system.events import Advance, CompleteConsume, Produce, RefuseRequests, SetMembers
from model.system.step import create_system
from model.values.config import Config
from model.values.message import Message, MessageQueue
from model.values.names import TOPIC
from model.values.records import evolve
from model.values.wire import ResponseCode
from properties.steps import run

Q0 = MessageQueue(TOPIC, 0)
AROUND = st.sampled_from((-1, 0, 1))


def get_flow_control(config: Config, pq) -> tuple[int | None, tuple[str, ...]]:
    system = create_system(config, topic_queue_nums=1)
    return compute_flow_control(system, "c1", Q0, pq)


@given(limit=st.integers(1, 65535), around=AROUND)
def test_cached_count_limit_is_strict(limit, around):
    """[PL-02] cachedMessageCount > pullThresholdForQueue holds the pull back; = the threshold does not."""
    count = limit + around
    verdict = get_flow_control(Config(pull_threshold_for_queue=limit), evolve(create_process_queue(), msg_count=count))
    event("PL-02")
    assert verdict == ((50, ("PL-02",)) if count > limit else (None, ())), (count, limit, verdict)


@given(limit=st.integers(1, 1024), around=AROUND, spare=st.integers(0, MIB - 1))
def test_cached_size_limit_is_strict_in_whole_mib(limit, around, spare):
    """[PL-02] The size check compares whole MiB (rounded down) with pullThresholdSizeForQueue, strictly: up to
    limit + 1 MiB − 1 byte is still pulled."""
    size = (limit + around) * MIB + spare
    verdict = get_flow_control(Config(pull_threshold_size_for_queue=limit), evolve(create_process_queue(),
                                                                                   msg_size=size))
    event("PL-02")
    assert verdict == ((50, ("PL-02",)) if limit + around > limit else (None, ())), (size, limit, verdict)


@given(limit=st.integers(1, 3000), around=AROUND)
def test_concurrently_span_limit_is_strict(limit, around):
    """[PL-03] A concurrently pull waits while maxSpan (last − first cached offset) > consumeConcurrentlyMaxSpan;
    a span of exactly the limit is pulled."""
    span = max(0, limit + around)
    pq, _ = put_message(create_process_queue(), [Message(TOPIC, queue_offset=0), Message(TOPIC, queue_offset=span)])
    verdict = get_flow_control(Config(consume_concurrently_max_span=limit), pq)
    event("PL-03")
    assert (verdict[0] is not None) == (span > limit), (span, limit, verdict)


def test_a_held_back_pull_goes_on_at_the_first_50_ms_tick_after_the_cache_drains():
    """[PL-02] [LK-08] pullMessage stamps lastPullTimestamp, and while the cache holds more than
    pullThresholdForQueue messages it runs again 50 ms later (DefaultMQPushConsumerImpl 4.9.8 L219-L252,
    PULL_TIME_DELAY_MILLS_WHEN_CACHE_FLOW_CONTROL L92): held back at 1010 ms, it re-checks at 1060, 1110, ...;
    the cache drains at 2234 ms, so the re-check at 2260 ms pulls, and the last one before it stamped 2210 ms.
    The model reports the held-back pull once: its re-checks change nothing but the stamp."""
    system = create_system(Config(pull_threshold_for_queue=1), ("c1",), topic_queue_nums=1)
    system, seen = run(system, Advance(1_010), Produce("a"), Produce("b"), Advance(2_234), CompleteConsume(1))
    assert system.consumers["c1"].process_queues[Q0].last_pull_timestamp == 2_210
    system, more = run(system, Produce("c"), Advance(3_000))
    pulls = [(o.status, o.offset, o.time) for o in seen + more if isinstance(o, PullObserved)]
    assert pulls == [("FOUND", 0, 1_010), ("FLOW_CONTROL", -1, 1_010), ("FOUND", 2, 2_260),
                     ("FLOW_CONTROL", -1, 2_260)]
    assert system.consumers["c1"].process_queues[Q0].last_pull_timestamp == 2_260


def test_a_held_back_pull_ends_with_its_process_queue():
    """[PL-02] [LK-08] The 50 ms re-runs of a held-back pull belong to its PullRequest, which ends with its
    ProcessQueue (pullMessage returns first thing for a dropped one, DefaultMQPushConsumerImpl 4.9.8 L219-L224):
    the queue's next ProcessQueue is judged by its own pulls. c1's pull of the queue is held back at 1 s, the queue
    goes to c0 and comes back at 2 s, where its first pull is refused and retried only 145 s later
    (pullTimeDelayMillsWhenException, PL-11); so the rebalance at 140 s finds it not pulled for 138 s
    (isPullExpired, RebalanceImpl 4.9.8 L347-L362) and adds it again."""
    config = Config(pull_threshold_for_queue=1, pull_time_delay_mills_when_exception=145_000)
    system = create_system(config, ("c1",), topic_queue_nums=1)
    system, _ = run(system, Produce("a"), Produce("b"), Advance(1_000))
    assert ("c1", Q0) in system.flow_parked
    system, seen = run(system, SetMembers(("c0", "c1")), RefuseRequests("pull", ResponseCode.SYSTEM_ERROR),
                       Advance(2_000), SetMembers(("c1",)), Advance(140_000))
    notes = [(o.what, o.time) for o in seen if isinstance(o, Note) and o.what.startswith(f"c1 {Q0}")]
    assert notes == [(f"c1 {Q0}: pull refused", 2_000), (f"c1 {Q0}: not pulled for 120 s", 140_000),
                     (f"c1 {Q0}: pull refused", 140_000)]
