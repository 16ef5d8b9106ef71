"""PL-08 (spec/07-pull.md): the 4.9 OFFSET_ILLEGAL repair, driven directly — `process_offset_illegal_fix` run on a
balanced one-consumer cluster with a hand-made OffsetIllegalFix timer. mutmut found its set-not-increase-only
update, its persist of the fixed queue, the PL-08 cite of that persist and its dead-instance guard unchecked (the
only other tests of the repair are slow system runs in test_livelock.py that just time it)."""

from __future__ import annotations

from model.client.observations import OffsetCommitted
from model.client.rebalance import process_offset_illegal_fix
from model.client.timer_items import OffsetIllegalFix
from model.system.events import Advance, CompleteConsume, Crash, Produce, SetMembers
from model.system.step import create_system
from model.values.config import Config
from model.values.message import MessageQueue
from model.values.names import GROUP, TOPIC
from properties.steps import run

Q0 = MessageQueue(TOPIC, 0)
CONSUMED = 4


def consumed_cluster(*, hold_oneway: bool = False, persisted: bool = False):
    """4.9.8, one consumer c1 owning Q0 that consumed CONSUMED messages (its offset store holds CONSUMED); with
    `persisted`, the 10 s persistAll has also brought the broker's offset of Q0 to CONSUMED."""
    system = create_system(Config(profile="4.9.8"), ("c1",), topic_queue_nums=1, hold_oneway=hold_oneway)
    system, _ = run(system, *[Produce(f"a{i}") for i in range(CONSUMED)], Advance(0))
    while system.requests:
        system, _ = run(system, CompleteConsume(min(system.requests)))
    if persisted:
        system, _ = run(system, Advance(10_000))
        assert system.broker.consumer_offsets[(GROUP, TOPIC, 0)] == CONSUMED
    assert system.consumers["c1"].offset_store.offsets[Q0].value == CONSUMED
    return system


def fix_for(system, offset: int) -> OffsetIllegalFix:
    consumer = system.consumers["c1"]
    return OffsetIllegalFix("c1", consumer.incarnation, Q0, consumer.generations[Q0], offset)


def test_the_repair_moves_the_offset_back_and_persists_it_citing_pl08():
    """PL-08: the repair sets the offset with increaseOnly false — DefaultMQPushConsumerImpl 4.9.8 L382-L383
    `updateOffset(pullRequest.getMessageQueue(), pullRequest.getNextOffset(), false)`, i.e. RemoteBrokerOffsetStore
    4.9.8 L66-L71 `offsetOld.set(offset)`, not compareAndIncreaseOnly — so a nextBeginOffset (1) below the stored
    offset (4) wins; the next line (L385) persists that queue: one one-way commit moves the broker's offset from 4
    back to 1, observed as the PL-08 persist."""
    system = consumed_cluster(persisted=True)
    system, seen = process_offset_illegal_fix(system, fix_for(system, 1))
    commits = [o for o in seen if isinstance(o, OffsetCommitted)]
    assert [(c.queue, c.offset, c.previous, c.source, c.rules) for c in commits] == [
        (Q0, 1, CONSUMED, "persist", ("PL-08",))]
    assert system.broker.consumer_offsets[(GROUP, TOPIC, 0)] == 1
    assert Q0 not in system.consumers["c1"].process_queues  # L387 removeProcessQueue


def test_the_repair_persists_the_fixed_queue_before_removing_it():
    """PL-08: DefaultMQPushConsumerImpl 4.9.8 L385 `offsetStore.persist(pullRequest.getMessageQueue())`, then
    L387 removeProcessQueue → RebalancePushImpl 4.9.8 L86-L87 persist(mq) again and removeOffset(mq): two one-way
    commits of the fixed queue, both carrying the repaired offset (held in the network here, SY-02)."""
    system = consumed_cluster(hold_oneway=True)
    before = len(system.oneway)
    system, _ = process_offset_illegal_fix(system, fix_for(system, 2))
    sent = [(u.queue, u.offset) for u in list(system.oneway)[before:]]
    assert sent == [(Q0, 2), (Q0, 2)]
    assert Q0 not in system.consumers["c1"].offset_store.offsets


def test_a_crashed_instances_repair_does_nothing_to_its_restarted_successor():
    """PL-08: the repair is a task of the instance's own scheduled executor (DefaultMQPushConsumerImpl 4.9.8
    L377-L394 executeTaskLater(…, 10000)); an instance that crashed in those 10 s takes it with it, so the
    restarted instance (same client id, same queue) keeps its queue and its offset and nothing is committed."""
    system = consumed_cluster(persisted=True)
    fix = fix_for(system, 1)
    system, _ = run(system, Crash("c1"), SetMembers(("c1",)))
    assert system.consumers["c1"].incarnation != fix.incarnation
    after, seen = process_offset_illegal_fix(system, fix)
    assert seen == []
    assert after == system
