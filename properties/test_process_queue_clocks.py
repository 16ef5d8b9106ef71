"""Two clocks of the ProcessQueue, at their edges (spec/05-process-queue.md, PQ-06 and PQ-12): takeMessages stamps
lastConsumeTimestamp, and cleanExpiredMsg's head is expired strictly after consumeTimeout minutes.

Expected values are written out from ProcessQueue 4.9.8 and 5.3.3 (permalinks in each test), not read from
model/client/process_queue.py.
"""

from __future__ import annotations

import pytest

from model.client.process_queue import create_process_queue, is_consume_expired, put_message, take_messages
from model.values.message import PROPERTY_CONSUME_START_TIMESTAMP, Message

TOPIC = "t"


@pytest.mark.parametrize("cached", [0, 1, 3])
def test_take_messages_stamps_the_last_consume_time_even_when_it_takes_nothing(cached):
    """PQ-06: takeMessages sets lastConsumeTimestamp to the current time under the write lock, before it looks at
    the tree, so an empty take stamps it too (ProcessQueue 4.9.8 L310-L317,
    https://github.com/apache/rocketmq/blob/rocketmq-all-4.9.8/client/src/main/java/org/apache/rocketmq/client/impl/consumer/ProcessQueue.java#L310-L317;
    5.3.3 L312-L319,
    https://github.com/apache/rocketmq/blob/rocketmq-all-5.3.3/client/src/main/java/org/apache/rocketmq/client/impl/consumer/ProcessQueue.java#L312-L319)."""
    pq, _ = put_message(create_process_queue(1_000), [Message(TOPIC, queue_offset=o) for o in range(cached)])
    pq, taken = take_messages(pq, 2, now=9_000)
    assert (pq.last_consume_timestamp, len(taken)) == (9_000, min(cached, 2))


def started(start: int) -> Message:
    return Message(TOPIC, queue_offset=0).put_property(PROPERTY_CONSUME_START_TIMESTAMP, start)


# (CONSUME_START_TIME, now, consumeTimeout minutes) -> expired. A realistic start (epoch milliseconds) is far larger
# than consumeTimeout in milliseconds, so only the elapsed time may count.
EDGES = [
    (1_000, 1_000 + 15 * 60_000, 15, False),
    (1_000, 1_000 + 15 * 60_000 + 1, 15, True),
    (1_764_000_000_000, 1_764_000_000_000 + 1, 15, False),
    (1_764_000_000_000, 1_764_000_000_000 + 60_000, 1, False),
    (1_764_000_000_000, 1_764_000_000_000 + 60_001, 1, True),
    (1_764_000_000_000, 1_764_000_000_000 + 3 * 60_000 + 1, 3, True),
]


@pytest.mark.parametrize(("start", "now", "timeout", "expired"), EDGES)
def test_a_head_is_expired_strictly_after_consume_timeout_minutes(start, now, timeout, expired):
    """PQ-12: cleanExpiredMsg takes the head when `now - CONSUME_START_TIME > consumeTimeout * 60 * 1000`
    (ProcessQueue 4.9.8 L92,
    https://github.com/apache/rocketmq/blob/rocketmq-all-4.9.8/client/src/main/java/org/apache/rocketmq/client/impl/consumer/ProcessQueue.java#L92;
    5.3.3 L88): the elapsed time, strictly more than the timeout in minutes of exactly 60 000 ms."""
    assert is_consume_expired(started(start), now, timeout) is expired
