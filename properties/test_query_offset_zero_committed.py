"""[RB-04] A committed offset of 0 is a committed offset: QUERY_CONSUMER_OFFSET answers it as it is, whatever the
queue's head or the 5.1.0+ check of it would say about a never-committed queue. mutmut found this unchecked: a
broker taking only offsets > 0 (or >= 1) as committed survived every test."""

from __future__ import annotations

from model.broker.consumer_offsets import commit_offset, on_query_consumer_offset
from model.client.remote_offsets import compute_pull_from_where
from model.system.events import ExpireQueueHead, Produce
from model.system.step import create_system
from model.values.config import Config
from model.values.message import MessageQueue
from model.values.names import GROUP, TOPIC
from model.values.profiles import get_profile
from model.values.records import evolve
from model.values.wire import QueryConsumerOffset, exchange
from properties.steps import run

Q0 = MessageQueue(TOPIC, 0)


def commit_zero(system):
    return evolve(system, broker=commit_offset(system.broker, GROUP, TOPIC, 0, 0))


def test_a_committed_0_is_answered_after_the_queues_head_is_gone():
    """[RB-04] ConsumerManageProcessor.queryConsumerOffset 4.9.8 L128-L149: `offset >= 0` (queryOffset returns
    -1 only for no entry, ConsumerOffsetManager 4.9.8 L142-L153) is SUCCESS with that offset; the minOffset check
    is only for a queue with no committed offset. So a committed 0 is answered 0 even when the queue's head is gone
    (min offset 1), and a CONSUME_FROM_LAST_OFFSET owner starts at 0 (RebalancePushImpl 4.9.8 L162-L165:
    lastOffset >= 0 is the result), not at the queue's end (3)."""
    system = create_system(Config(), ("c1",), topic_queue_nums=1)
    system, _ = run(system, *[Produce(f"m{i}") for i in range(3)], ExpireQueueHead(Q0, 1))
    system = commit_zero(system)
    assert on_query_consumer_offset(system.broker, GROUP, TOPIC, 0, 1) == 0
    assert exchange(system, QueryConsumerOffset(GROUP, Q0))[1].offset == 0
    assert compute_pull_from_where(system, system.consumers["c1"], Q0) == 0


def test_a_committed_0_of_an_empty_queue_is_answered_from_5_1_0():
    """[RB-04] ConsumerManageProcessor.queryConsumerOffset 5.3.3 L321-L328: `offset >= 0` is SUCCESS before the
    checkInMemByConsumeOffset test (L336-L338) that refuses a never-committed empty queue; a committed 0 of a queue
    that never held a message is answered 0."""
    system = commit_zero(create_system(Config(profile=get_profile("5.3.3")), ("c1",), topic_queue_nums=1))
    assert on_query_consumer_offset(system.broker, GROUP, TOPIC, 0, 0, True) == 0
    assert exchange(system, QueryConsumerOffset(GROUP, Q0))[1].offset == 0
