"""OS-07 (spec/06-offset-store.md), PQ-04 (spec/05-process-queue.md), CC-08 (spec/08-concurrently.md), by example:
the rule a remote persist(mq) is tagged with, whether it sends or not; removeMessage's size counter when one message
stays cached; and the lastConsumeTimestamp a concurrently completion stamps. mutmut found these unchecked.

Expected values are written out from RocketMQ 4.9.8 (cited in each test) and the spec's rule ids, not read from
model/.
"""

from __future__ import annotations

from model.client.listener import ConsumeStatus, ListenerResult
from model.client.offset_store import create_offset_store, persist, update_offset
from model.client.process_queue import compute_removal, create_process_queue, put_message
from model.system.events import Advance, CompleteConsume, Produce
from model.system.step import create_system
from model.values.config import Config
from model.values.message import Message, MessageQueue
from model.values.names import TOPIC
from properties.steps import run

Q0 = MessageQueue(TOPIC, 0)
Q1 = MessageQueue(TOPIC, 1)


def test_remote_persist_sends_the_cached_offset_and_is_tagged_os_07():
    """OS-07: RemoteBrokerOffsetStore.persist(mq) 4.9.8 L151-L165 sends updateConsumeOffsetToBroker(mq, offset)
    for a queue its offsetTable holds; the step is the spec's persist(mq) rule, OS-07 (spec/06-offset-store.md)."""
    store = update_offset(create_offset_store(Config()), Q0, 7, False)
    outcome = persist(store, Q0)
    assert (outcome.value, outcome.rules) == (((Q0, 7),), ("OS-07",))


def test_remote_persist_of_an_uncached_queue_sends_nothing_and_is_tagged_os_07():
    """OS-07: RemoteBrokerOffsetStore.persist(mq) 4.9.8 L151-L165 does nothing when offsetTable.get(mq) is null
    (`if (offset != null)`); the step is still the spec's persist(mq) rule, OS-07."""
    store = update_offset(create_offset_store(Config()), Q0, 7, False)
    outcome = persist(store, Q1)
    assert (outcome.state, outcome.value, outcome.rules) == (store, (), ("OS-07",))


def test_remove_message_keeps_the_size_of_the_one_message_left():
    """PQ-04: ProcessQueue.removeMessage 4.9.8 L201-L210 subtracts each removed message's body length and resets
    msgSize to 0 only when msgCount drops to 0 (`if (msgCount.addAndGet(removedCnt) == 0) msgSize.set(0)`):
    two cached messages of 3 and 5 bytes, the first removed, leaves count 1 and size 5; the offset is the remaining
    first key, 1 (L212-L214)."""
    msgs = [Message(TOPIC, body=b"abc", queue_offset=0), Message(TOPIC, body=b"defgh", queue_offset=1)]
    pq, _ = put_message(create_process_queue(0), msgs)
    pq, offset = compute_removal(pq, msgs[:1], 10)
    assert (pq.msg_count, pq.msg_size, offset) == (1, 5, 1)
    pq, offset = compute_removal(pq, msgs[1:], 20)
    assert (pq.msg_count, pq.msg_size, offset) == (0, 0, 2)


def test_a_concurrently_completion_stamps_the_last_consume_time():
    """CC-08 / PQ-04: processConsumeResult removes the request's messages with ProcessQueue.removeMessage
    (ConsumeMessageConcurrentlyService 4.9.8 L298), which sets lastConsumeTimestamp to the current time first
    (ProcessQueue 4.9.8 L193-L196). m0 is consumed at 0 and the listener returns at 2.5 s: the ProcessQueue shows
    2 500."""
    system = create_system(Config(profile="4.9.8"), ("c1",), topic_queue_nums=1)
    system, _ = run(system, Produce("k1"), Advance(0))
    (request_id,) = system.requests
    system, _ = run(system, Advance(2_500))
    system, _ = run(system, CompleteConsume(request_id, ListenerResult(ConsumeStatus.CONSUME_SUCCESS)))
    assert system.consumers["c1"].process_queues[Q0].last_consume_timestamp == 2_500
