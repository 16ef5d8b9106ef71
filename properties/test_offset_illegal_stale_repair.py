"""PL-08 (spec/07-pull.md): the 4.9 OFFSET_ILLEGAL repair works by queue, not by ProcessQueue. The 10 s task of
DefaultMQPushConsumerImpl 4.9.8 L371-L394 holds only the pullRequest and calls `updateOffset(mq, nextOffset,
false)`, `persist(mq)` and `removeProcessQueue(mq)` — with no check that the instance still owns the queue, nor
that the queue's ProcessQueue is still the one that pulled OFFSET_ILLEGAL. Only an instance that is gone (its
executor with it) does nothing. Driven directly on the cluster of properties/test_offset_illegal_fix.py."""

from __future__ import annotations

from model.client.observations import OffsetCommitted
from model.client.rebalance import process_offset_illegal_fix
from model.system.events import SetMembers
from model.values.names import GROUP, TOPIC
from properties.steps import run
from properties.test_offset_illegal_fix import CONSUMED, Q0, consumed_cluster, fix_for

STALE = 1
BROKER_KEY = (GROUP, TOPIC, 0)


def pl08_commits(seen):
    return [(o.queue, o.offset) for o in seen if isinstance(o, OffsetCommitted) and o.rules == ("PL-08",)]


def test_a_repair_after_the_queue_went_away_still_commits_the_stale_offset():
    """c0 joins within the 10 s and takes Q0 (sorted first). The old owner c1's repair still runs: updateOffset
    puts Q0 back into its offset table (RemoteBrokerOffsetStore 4.9.8 L59-L74), persist(Q0) sends it (L151-L166)
    — overwriting the new owner's commit with the stale nextBeginOffset — and removeProcessQueue(Q0) finds no
    ProcessQueue, so it does nothing (RebalanceImpl 4.9.8 L434-L442); c0 keeps its queue."""
    system = consumed_cluster(persisted=True)
    fix = fix_for(system, STALE)
    system, _ = run(system, SetMembers(("c0", "c1")))
    assert Q0 not in system.consumers["c1"].process_queues and Q0 in system.consumers["c0"].process_queues
    assert system.broker.consumer_offsets[BROKER_KEY] == CONSUMED
    after, seen = process_offset_illegal_fix(system, fix)
    assert pl08_commits(seen) == [(Q0, STALE)]
    assert after.broker.consumer_offsets[BROKER_KEY] == STALE
    assert Q0 not in after.consumers["c1"].process_queues
    assert after.consumers["c0"].process_queues == system.consumers["c0"].process_queues


def test_a_repair_after_the_queue_came_back_removes_the_new_process_queue():
    """Q0 goes to c0 and comes back to c1 (a new ProcessQueue, a new generation) within the 10 s. The repair of
    the old one still sets and persists the stale offset and removeProcessQueue(Q0) removes the new ProcessQueue,
    persisting once more (RebalancePushImpl removeUnnecessaryMessageQueue) and dropping the cached offset."""
    system = consumed_cluster(persisted=True)
    fix = fix_for(system, STALE)
    system, _ = run(system, SetMembers(("c0", "c1")), SetMembers(("c1",)))
    consumer = system.consumers["c1"]
    assert Q0 in consumer.process_queues and consumer.generations[Q0] != fix.generation
    after, seen = process_offset_illegal_fix(system, fix)
    assert pl08_commits(seen)[:1] == [(Q0, STALE)]
    assert after.broker.consumer_offsets[BROKER_KEY] == STALE
    assert Q0 not in after.consumers["c1"].process_queues
    assert Q0 not in after.consumers["c1"].offset_store.offsets


def test_only_the_instances_end_cancels_the_repair():
    """The same history (c0 joins and takes Q0) with and without c1 leaving: a clean shutdown stops the
    instance's scheduled executor and the 10 s task with it, so the instance that left commits nothing and
    changes nothing, while the one that stayed (no longer owning Q0) still commits the stale offset."""
    system = consumed_cluster(persisted=True)
    fix = fix_for(system, STALE)
    stayed, _ = run(system, SetMembers(("c0", "c1")))
    left, _ = run(stayed, SetMembers(("c0",)))
    assert "c1" not in left.consumers and Q0 in left.consumers["c0"].process_queues
    after, seen = process_offset_illegal_fix(left, fix)
    assert seen == []
    assert after == left
    _after, seen = process_offset_illegal_fix(stayed, fix)
    assert pl08_commits(seen) == [(Q0, STALE)]
