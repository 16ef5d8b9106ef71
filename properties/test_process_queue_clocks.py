"""Two clocks of the ProcessQueue, at their edges (spec/05-process-queue.md, PQ-06 and PQ-12): takeMessages stamps
lastConsumeTimestamp, and cleanExpiredMsg's head is expired strictly after consumeTimeout minutes.

Expected values are written out from ProcessQueue 4.9.8 and 5.3.3 (permalinks in each test), not read from
model/client/process_queue.py.
"""

from __future__ import annotations

import pytest

from model.client.observations import ListenerInvoked
from model.client.process_queue import create_process_queue, is_consume_expired, put_message, take_messages
from model.system.events import Advance, Produce
from model.system.step import create_system, step
from model.values.config import Config
from model.values.message import PROPERTY_CONSUME_START_TIMESTAMP, Message
from model.values.names import TOPIC as SYSTEM_TOPIC

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


@pytest.mark.parametrize("version", ["4.9.8", "5.3.3"])
def test_an_orderly_consume_request_stamps_the_last_consume_time_at_each_take(version):
    """PQ-06 OR-03: ConsumeRequest.run takes each batch with ProcessQueue.takeMessages (ConsumeMessageOrderlyService
    4.9.8 L466), which stamps lastConsumeTimestamp (ProcessQueue 4.9.8 L315, 5.3.3 L317). m0 is produced at 10 ms
    and the listener is invoked at once; it does not return, so that take is the last: the queue's ProcessQueue,
    created at 0, shows 10."""
    system = create_system(Config(consume_mode="orderly", profile=version), ("c1",), topic_queue_nums=1)
    taken_at = []
    for event in (Advance(10), Produce("m0"), Advance(5_000)):
        system, observations = step(system, event)
        taken_at += [o.time for o in observations if isinstance(o, ListenerInvoked)]
    assert taken_at == [10]
    (pq,) = [pq for mq, pq in system.consumers["c1"].process_queues.items() if mq.topic == SYSTEM_TOPIC]
    assert pq.last_consume_timestamp == 10


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
