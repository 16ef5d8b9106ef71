"""RB-04 (spec/10-rebalance.md): what a queue newly added to an instance starts with — removeDirtyOffset before
computePullFromWhere, and the RB-04 note of the queue taken. mutmut found add_queue's removal of a stale cached
offset, and the time and rule of its note, unchecked."""

from __future__ import annotations

from model.client.observations import Note
from model.client.rebalance import process_offset_illegal_fix
from model.system.events import Advance, Produce, SetMembers
from model.values.names import GROUP, TOPIC
from properties.steps import complete_running, run
from properties.test_offset_illegal_fix import CONSUMED, Q0, consumed_cluster, fix_for

STALE = 1
BROKER_KEY = (GROUP, TOPIC, 0)



def test_a_queue_taken_back_drops_the_dirty_offset_its_old_repair_left_in_memory():
    """RB-04: updateProcessQueueTableInRebalance calls `removeDirtyOffset(mq)` (RemoteBrokerOffsetStore.removeOffset,
    RebalancePushImpl 4.9.8 L136-L138) before computePullFromWhere for every queue it adds (RebalanceImpl 4.9.8
    L375-L383), and computePullFromWhereWithException reads the broker's offset READ_FROM_STORE (RebalancePushImpl
    4.9.8 L153-L166), which RemoteBrokerOffsetStore 4.9.8 L89-L94 caches. c1 lost Q0 to c0, then its 4.9
    OFFSET_ILLEGAL repair ran anyway and left STALE (1) in its offset table (PL-08); c0 consumed on to 6 and, on
    leaving, persisted 6; c1 takes Q0 back. Its first pull piggybacks only the in-memory offset it holds now
    (DefaultMQPushConsumerImpl 4.9.8 L416-L422, READ_FROM_MEMORY; PL-07): never the dirty 1 — the broker keeps 6."""
    system = consumed_cluster(persisted=True)
    fix = fix_for(system, STALE)
    system, _ = run(system, SetMembers(("c0", "c1")))
    assert Q0 in system.consumers["c0"].process_queues
    system, _ = process_offset_illegal_fix(system, fix)
    assert system.consumers["c1"].offset_store.offsets[Q0].value == STALE
    system = complete_running(run(system, Produce("b0"), Produce("b1"), Advance(system.now))[0])
    system, _ = run(system, SetMembers(("c1",)))
    assert Q0 in system.consumers["c1"].process_queues
    assert system.broker.consumer_offsets[BROKER_KEY] == CONSUMED + 2
    system, _ = run(system, Advance(system.now), Advance(system.now + 1_000))
    assert system.broker.consumer_offsets[BROKER_KEY] == CONSUMED + 2


def test_a_queue_taken_is_noted_at_the_rebalance_instant_under_rb04():
    """RB-04: a queue joins an instance's table when the rebalance runs (RebalanceImpl 4.9.8 L367-L407, logged
    "doRebalance, {}, add a new mq, {}" at L392); the step notes each queue taken at that instant, tagged with the rule.
    c0 joins at 12.345 s and takes both of the group's queues, Q0 and %RETRY% queue 0 (the first of the sorted
    members gets a topic's single queue, AllocateMessageQueueAveragely; RB-01)."""
    system = consumed_cluster()
    system, _ = run(system, Advance(12_345))
    system, seen = run(system, SetMembers(("c0", "c1")))
    assert len(system.consumers["c0"].process_queues) == 2 and not system.consumers["c1"].process_queues
    taken = [(o.time, o.rules) for o in seen if isinstance(o, Note) and "RB-04" in o.rules]
    assert taken == [(12_345, ("RB-04",))] * 2
