"""The ProcessQueue an orderly queue's removal leaves behind (spec/12-orderly.md, OR-12).

In Java the removed ProcessQueue object lives on after `it.remove()`: the pull request and a running (or, in 5.x,
force-unlocked) ConsumeRequest still hold it and read its flags. The model's table drops it at once and its
requests end on the generation check, so this pins the removal step's own answer: which flags RocketMQ's
removeUnnecessaryMessageQueue changes on it. Expected values are written out from RebalancePushImpl and
RebalanceImpl (permalinks in each test), not read from model/client/orderly_rebalance.py.
"""

from __future__ import annotations

import pytest
from attrs import evolve

from model.broker.locks import on_lock_batch
from model.broker.state import create_broker
from model.client.offset_store import create_offset_store, update_offset
from model.client.orderly_rebalance import process_remove_queue
from model.client.process_queue import create_process_queue, put_message
from model.values.config import Config
from model.values.message import Message, MessageQueue

GROUP, TOPIC, CLIENT = "g", "t", "A"
MQ = MessageQueue(TOPIC, 0)


def remove(profile: str, cached: bool, running: bool, now: int):
    """Client A locked MQ at 0 and holds a ProcessQueue marked locked at 0, with offset 7 cached or nothing."""
    config = Config(consume_mode="orderly", message_model="clustering", profile=profile)
    broker = on_lock_batch(create_broker(config, GROUP, {TOPIC: 1}), GROUP, (MQ,), CLIENT, 0).broker
    pq = evolve(create_process_queue(0), locked=True, last_lock_timestamp=0)
    if cached:
        pq, _ = put_message(pq, [Message(TOPIC, queue_offset=7)])
    store = update_offset(create_offset_store(config), MQ, 7, False)
    return pq, process_remove_queue(broker, store, config, GROUP, CLIENT, MQ, pq, now, running)


@pytest.mark.parametrize("cached", [False, True])
def test_a_4_9_removal_drops_the_process_queue_and_leaves_its_lock_mark(cached):
    """OR-12, 4.9.8: updateProcessQueueTableInRebalance sets dropped before it asks (RebalanceImpl 4.9.8 L339-L343);
    removeUnnecessaryMessageQueue then unlocks at once, or 20 s later when messages are still cached
    (RebalancePushImpl 4.9.8 L85-L127,
    https://github.com/apache/rocketmq/blob/rocketmq-all-4.9.8/client/src/main/java/org/apache/rocketmq/client/impl/consumer/RebalancePushImpl.java#L85-L127),
    and neither path touches the ProcessQueue's own lock mark: RebalanceImpl.unlock only sends UNLOCK_BATCH_MQ
    (RebalanceImpl 4.9.8 L65-L83,
    https://github.com/apache/rocketmq/blob/rocketmq-all-4.9.8/client/src/main/java/org/apache/rocketmq/client/impl/consumer/RebalanceImpl.java#L65-L83).
    The queue left is the one given, dropped, with its cached message and its lock mark as they were."""
    pq, removal = remove("4.9.8", cached, running=False, now=5_000)
    assert removal.removed
    assert removal.pq == evolve(pq, dropped=True)
    assert (removal.pq.locked, removal.pq.msg_count) == (True, 1 if cached else 0)


@pytest.mark.parametrize(("running", "now"), [(False, 5_000), (True, 20_001)])
@pytest.mark.parametrize("cached", [False, True])
def test_a_5_x_removal_clears_the_process_queues_lock_mark(cached, running, now):
    """OR-12, 5.3.3: tryRemoveOrderMessageQueue, with the consume lock or by force (the queue dropped and its lock
    mark strictly older than 20 s), persists and removes the offset, sets the ProcessQueue unlocked and unlocks
    the broker's lease at once, cached messages or not (RebalancePushImpl 5.3.3 L110-L135, setLocked(false) at L119,
    https://github.com/apache/rocketmq/blob/rocketmq-all-5.3.3/client/src/main/java/org/apache/rocketmq/client/impl/consumer/RebalancePushImpl.java#L110-L135).
    The queue left is the one given, dropped and no longer locked, its cache untouched."""
    pq, removal = remove("5.3.3", cached, running, now)
    assert removal.removed
    assert removal.pq == evolve(pq, dropped=True, locked=False)
    assert (removal.pq.dropped, removal.pq.locked) == (True, False)
