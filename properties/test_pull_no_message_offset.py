"""PL-06 (spec/07-pull.md): correctTagsOffset on a NO_NEW_MSG / NO_MATCHED_MSG answer, driven directly —
`on_no_message` run on a one-consumer cluster whose ProcessQueue is empty. mutmut found its increase-only flag
unchecked: every pull answer the system runs reaches it with a nextBeginOffset at or above the cached offset, where
a plain update stores the same value.

Expected values are written out from RocketMQ 4.9.8 (cited in each test), not read from model/.
"""

from __future__ import annotations

from model.client.observations import OffsetUpdated
from model.client.pull import on_no_message
from model.system.events import Advance, CompleteConsume, Produce
from model.system.step import create_system
from model.values.config import Config
from model.values.message import MessageQueue
from model.values.names import TOPIC
from properties.steps import run

Q0 = MessageQueue(TOPIC, 0)
CONSUMED = 4


def consumed_cluster():
    """4.9.8, one consumer c1 owning Q0 that consumed CONSUMED messages: nothing cached, its offset store holds
    CONSUMED."""
    system = create_system(Config(profile="4.9.8"), ("c1",), topic_queue_nums=1)
    system, _ = run(system, *[Produce(f"a{i}") for i in range(CONSUMED)], Advance(0))
    while system.requests:
        system, _ = run(system, CompleteConsume(min(system.requests)))
    consumer = system.consumers["c1"]
    assert consumer.process_queues[Q0].msg_count == 0
    assert consumer.offset_store.offsets[Q0].value == CONSUMED
    return system


def test_no_message_below_the_cached_offset_keeps_it():
    """PL-06: the NO_NEW_MSG / NO_MATCHED_MSG case (DefaultMQPushConsumerImpl 4.9.8 L363-L370) calls
    correctTagsOffset, which with msgCount 0 runs `offsetStore.updateOffset(mq, nextOffset, true)` (L492-L496):
    increaseOnly, so RemoteBrokerOffsetStore.updateOffset 4.9.8 L66-L68 goes through
    MixAll.compareAndIncreaseOnly and a nextBeginOffset (1) below the cached offset (4) leaves 4 in the store."""
    system = consumed_cluster()
    system, seen = on_no_message(system, "c1", Q0, [], 1)
    assert system.consumers["c1"].offset_store.offsets[Q0].value == CONSUMED
    assert [(o.queue, o.offset, o.rules) for o in seen if isinstance(o, OffsetUpdated)] == [
        (Q0, CONSUMED, ("PL-06",))]


def test_no_message_above_the_cached_offset_moves_it():
    """PL-06: correctTagsOffset (DefaultMQPushConsumerImpl 4.9.8 L492-L496) with msgCount 0:
    compareAndIncreaseOnly (RemoteBrokerOffsetStore 4.9.8 L66-L68) takes a larger nextBeginOffset (6 over 4)."""
    system = consumed_cluster()
    system, seen = on_no_message(system, "c1", Q0, [], 6)
    assert system.consumers["c1"].offset_store.offsets[Q0].value == 6
    assert [(o.queue, o.offset) for o in seen if isinstance(o, OffsetUpdated)] == [(Q0, 6)]
