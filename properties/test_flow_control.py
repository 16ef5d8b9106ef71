"""The pull thresholds of spec/07-pull.md at their boundaries: each limit is strict, so a queue holding exactly the
limit is pulled and one over it waits. Hypothesis draws the limit, and the cache is put one below, at and one
above it on purpose (a random cache would almost never sit on the boundary)."""

from __future__ import annotations

from hypothesis import event, given
from hypothesis import strategies as st

from model.client.process_queue import MIB, create_process_queue, put_message
from model.client.pull import compute_flow_control
from model.system.step import create_system
from model.values.config import Config
from model.values.message import Message, MessageQueue
from model.values.names import TOPIC
from model.values.records import evolve

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
