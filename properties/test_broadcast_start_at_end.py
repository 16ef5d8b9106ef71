"""SY-03's rest for a BROADCASTING consumer that starts at a queue's end: the drain is not done until the consumer's
offset is at the end, even though it pulls nothing. The local offset store of a new consumer has no offset
(LocalFileOffsetStore.readOffset answers -1, rocketmq-all-4.9.8
client/src/main/java/org/apache/rocketmq/client/consumer/store/LocalFileOffsetStore.java L97-L129), so
CONSUME_FROM_LAST_OFFSET starts at the queue's max offset, 1, past the message already stored
(client/src/main/java/org/apache/rocketmq/client/impl/consumer/RebalancePushImpl.java L161-L182); the pull at 1
finds no new message and correctTagsOffset puts 1 in the store (DefaultMQPushConsumerImpl.java L363-L369,
L492-L496)."""

from __future__ import annotations

from model.client.observations import ListenerInvoked
from model.client.offset_store import get_offset
from model.system.drain import drain, is_quiescent
from model.system.events import Produce, SetMembers
from model.system.step import create_system, step
from model.values.config import Config
from model.values.message import MessageQueue
from model.values.names import TOPIC

Q0 = MessageQueue(TOPIC, 0)


def test_a_broadcasting_consumer_started_at_the_end_is_at_rest_once_its_offset_is_there():
    """m0 stored, then c1 starts: it will pull from 1 and has no offset yet — not at rest; the drain ends with the
    offset at 1 and m0 never delivered."""
    system = create_system(Config(message_model="broadcasting"), (), topic_queue_nums=1)
    for event in (Produce("m0"), SetMembers(("c1",))):
        system, _ = step(system, event)
    consumer = system.consumers["c1"]
    assert (consumer.next_offsets[Q0], get_offset(consumer.offset_store, Q0)) == (1, None)
    assert not is_quiescent(system)
    system, seen, _ = drain(system)
    consumer = system.consumers["c1"]
    assert (consumer.next_offsets[Q0], get_offset(consumer.offset_store, Q0)) == (1, 1)
    assert not [o for o in seen if isinstance(o, ListenerInvoked)]
