"""CC-08, SY-04, SY-02, CC-05 (spec/08-concurrently.md, spec/11-guarantees.md): the client's offset recording after
a consume request (`consume_common.record_offset`) and the topic a listener is shown (`compute_shown_topic`), driven
by example. mutmut found unchecked that an increase-only update keeps a larger stored offset, that the
OffsetUpdated observation names the ProcessQueue lifetime (incarnation, generation of the queue) the SY-04 ledger
keys its offsets by, and that a %RETRY% message without RETRY_TOPIC keeps its topic."""

from __future__ import annotations

import immutables

from model.client.consume_common import GROUP_RETRY_TOPIC, compute_shown_topic, record_offset
from model.client.listener import ConsumeStatus, ListenerResult
from model.client.observations import OffsetUpdated
from model.client.offset_store import get_offset
from model.system.events import Advance, CompleteConsume, Produce, SetMembers
from model.system.step import create_system
from model.values.config import Config
from model.values.message import PROPERTY_RETRY_TOPIC, Message, MessageQueue
from model.values.names import TOPIC
from properties.steps import run

Q0 = MessageQueue(TOPIC, 0)
SUCCESS = ListenerResult(ConsumeStatus.CONSUME_SUCCESS)


def consumed_two():
    """c1 alone owns Q0 and has consumed k0 and k1 (offsets 0 and 1): its in-memory offset is 2 (CC-08)."""
    system = create_system(Config(profile="4.9.8"), ("c1",), topic_queue_nums=1)
    system, _ = run(system, Produce("k0"), Produce("k1"), Advance(0))
    system, _ = run(system, *[CompleteConsume(rid, SUCCESS) for rid in sorted(system.requests)])
    assert get_offset(system.consumers["c1"].offset_store, Q0) == 2
    return system


def test_an_increase_only_offset_update_keeps_a_larger_stored_offset():
    """CC-08 / SY-04: processConsumeResult stores removeMessage's answer with `updateOffset(mq, offset, true)`
    (ConsumeMessageConcurrentlyService 4.9.8 L298-L301), and an increase-only update goes through
    MixAll.compareAndIncreaseOnly (RemoteBrokerOffsetStore 4.9.8 L59-L74, MixAll 4.9.8 L432-L443): only a strictly
    larger value wins. The stored 2 stays when 1 arrives increase-only, and the update is observed as 2; a plain
    update (`offsetOld.set(offset)`, as the orderly OR-10 path asks) does move it back to 1."""
    system = consumed_two()
    consumer = system.consumers["c1"]
    kept, seen = record_offset(system, consumer, Q0, 1, True, ("CC-08",))
    assert get_offset(kept.consumers["c1"].offset_store, Q0) == 2
    assert [o.offset for o in seen if isinstance(o, OffsetUpdated)] == [2]
    moved, seen = record_offset(system, consumer, Q0, 1, False, ("OR-10",))
    assert get_offset(moved.consumers["c1"].offset_store, Q0) == 1
    assert [o.offset for o in seen if isinstance(o, OffsetUpdated)] == [1]


def test_the_offset_recorded_after_a_consume_names_its_processqueue_lifetime():
    """SY-04 / SY-02: within one ProcessQueue lifetime — an instance's incarnation and its generation of that queue
    (spec/11 SY-02) — the client's offset only grows, and a re-added queue starts anew (removeDirtyOffset and a
    new ProcessQueue, RebalanceImpl 4.9.8 L375-L376, RebalancePushImpl 4.9.8 L136-L138). c1 consumes k0 from Q0,
    loses Q0 to c0, takes it back (a new ProcessQueue: its second generation of Q0) and consumes k1: the two CC-08
    updates name (c1's incarnation, 1) and (c1's incarnation, 2)."""
    system = create_system(Config(profile="4.9.8"), ("c1",), topic_queue_nums=1)
    system, _ = run(system, Produce("k0"), Advance(0))
    (first,) = system.requests
    system, seen = run(system, CompleteConsume(first, SUCCESS))
    incarnation = system.consumers["c1"].incarnation
    before = [o.lifetime for o in seen if isinstance(o, OffsetUpdated) and o.queue == Q0]
    assert before == [(incarnation, 1)]
    system, _ = run(system, SetMembers(("c0", "c1")), Advance(100), SetMembers(("c1",)), Advance(200),
                    Produce("k1"), Advance(300))
    assert system.consumers["c1"].incarnation == incarnation and Q0 in system.consumers["c1"].process_queues
    (second,) = [rid for rid, r in system.requests.items() if r.client_id == "c1" and r.queue == Q0]
    system, seen = run(system, CompleteConsume(second, SUCCESS))
    after = [o.lifetime for o in seen if isinstance(o, OffsetUpdated) and o.queue == Q0]
    assert after == [(incarnation, 2)]


def test_a_retry_topic_message_without_retry_topic_keeps_its_topic():
    """CC-05: resetRetryAndNamespace (DefaultMQPushConsumerImpl 4.9.8 L1157-L1169) sets the topic to RETRY_TOPIC
    only when `retryTopic != null && groupTopic.equals(msg.getTopic())` (L1160-L1163): a message of %RETRY%<group>
    without the property is shown as %RETRY%<group>; with it, as the original topic; another topic is unchanged."""
    bare = Message(GROUP_RETRY_TOPIC, b"x")
    assert compute_shown_topic(bare) == GROUP_RETRY_TOPIC
    tagged = Message(GROUP_RETRY_TOPIC, b"x", properties=immutables.Map({PROPERTY_RETRY_TOPIC: TOPIC}))
    assert compute_shown_topic(tagged) == TOPIC
    other = Message(TOPIC, b"x", properties=immutables.Map({PROPERTY_RETRY_TOPIC: "Elsewhere"}))
    assert compute_shown_topic(other) == TOPIC
