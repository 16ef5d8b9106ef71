"""The first pull of an orderly queue (spec/12-orderly.md, LK-06) and the lock a rebalance asks before adding one
(LK-05), through the system: the first pull of a locked queue reads the offset store again, so what changed there
since the rebalance added the queue — a previous owner's one-way persist arriving late, messages produced to a
BROADCASTING queue without a stored offset — decides where it starts; a held pull of the queue's previous
ProcessQueue, answered late, moves nothing of the new one's."""

from __future__ import annotations

import pytest

from model.broker.locks import get_lock_owner
from model.client.observations import ListenerInvoked, Note, PullObserved
from model.client.orderly import OrderlyResult, OrderlyStatus
from model.system.events import Advance, CompleteConsume, DeliverOneway, Produce, SetMembers
from model.system.step import create_system
from model.values.config import Config
from model.values.message import MessageQueue
from model.values.names import GROUP, TOPIC
from properties.steps import run

SUCCESS = OrderlyResult(OrderlyStatus.SUCCESS, True)


def get_pulls_and_calls(seen, mq: MessageQueue) -> list[tuple]:
    """The LK-06 notes about `mq` and the listener calls, in order."""
    return [(o.what, o.time, o.rules) if isinstance(o, Note) else (o.client_id, [m.body.decode() for m in o.messages])
            for o in seen
            if (isinstance(o, Note) and "LK-06" in o.rules and str(mq) in o.what) or isinstance(o, ListenerInvoked)]


@pytest.mark.parametrize(("delivered_first", "expected"), [
    (True, [(f"c2 {MessageQueue(TOPIC, 1)}: pull from 2 (was 0)", 0, ("LK-06",)), ("c2", ["c"])]),
    (False, [(f"c2 {MessageQueue(TOPIC, 1)}: pull from 0 (was 0)", 0, ("LK-06",)), ("c2", ["a"])]),
])
def test_the_first_pull_starts_from_an_offset_committed_after_the_rebalance(delivered_first, expected):
    """[LK-06] [RB-04] c1 consumed a and b of queue 1 (offset 2 in its memory) when c2 joins and is given the queue.
    c1 removes it: persist(mq) sends offset 2 one-way (RebalancePushImpl 4.9.8 L85-L87; RemoteBrokerOffsetStore
    4.9.8 L151-L155, L191-L218) and the network holds it; c2's rebalance adds the queue with the offset the broker
    answers then: none stored, the queue's head in memory, so 0 (ConsumerManageProcessor 4.9.8 L132-L149). c2's
    first pull of the locked queue asks computePullFromWhere again (DefaultMQPushConsumerImpl 4.9.8 L277-L297;
    RebalancePushImpl 4.9.8 L161-L165): if the persist arrived first it starts at 2 and c is the first message
    its listener sees, else at 0 and a comes again."""
    mq = MessageQueue(TOPIC, 1)
    system = create_system(Config(consume_mode="orderly", profile="4.9.8"), ("c1",), hold_oneway=True)
    system, _ = run(system, Produce("a", queue_id=1), Produce("b", queue_id=1), Advance(0),
                    CompleteConsume(1, SUCCESS), CompleteConsume(2, SUCCESS), SetMembers(("c1", "c2")))
    assert mq in system.consumers["c2"].process_queues and system.consumers["c2"].next_offsets[mq] == 0
    assert [(commit.queue, commit.offset) for commit in system.oneway.items.values()] == [(mq, 2)]
    if delivered_first:
        system, _ = run(system, DeliverOneway(0))
    system, seen = run(system, Produce("c", queue_id=1), Advance(0))
    assert get_pulls_and_calls(seen, mq) == expected


@pytest.mark.parametrize(("version", "holders", "lock_owner"), [("4.9.8", ["c1"], "c1"),
                                                                ("5.3.3", ["c1", "c2"], None)])
def test_a_broadcasting_rebalance_locks_its_orderly_queues_up_to_5_3_1(version, holders, lock_owner):
    """[LK-05] [LK-06] Two BROADCASTING orderly instances of one group start at 0. 4.9.8 passes isOrder to a
    broadcasting rebalance (RebalanceImpl 4.9.8 L244), which adds a queue only if lock(mq) is granted (L370-L373):
    c1 locks it and c2 is refused. 5.3.3 passes false (RebalanceImpl 5.3.3 L274, L470): both add it and no lock is
    asked. Each added ProcessQueue is marked locked (4.9.8 L376-L377, 5.3.3 L478), so the first pull follows and
    reads the local offset store again: no offsets.json entry (LocalFileOffsetStore 4.9.8 L109-L129), so
    CONSUME_FROM_LAST_OFFSET's max offset at that pull (RebalancePushImpl 4.9.8 L161-L177): m0 and m1, produced
    after the rebalance and before the first pull, are skipped, and m2, produced after it, is each holder's first
    message."""
    mq = MessageQueue(TOPIC, 0)
    config = Config(consume_mode="orderly", profile=version, message_model="broadcasting")
    system = create_system(config, ("c1", "c2"), topic_queue_nums=1)
    assert [c for c in ("c1", "c2") if mq in system.consumers[c].process_queues] == holders
    assert get_lock_owner(system.broker, GROUP, mq, 0) == lock_owner
    system, seen = run(system, Produce("m0"), Produce("m1"), Advance(10), Produce("m2"), Advance(100))
    assert [(o.client_id, [m.body.decode() for m in o.messages], o.time) for o in seen
            if isinstance(o, ListenerInvoked)] == [(c, ["m2"], 10) for c in holders]


def test_a_held_pull_of_a_removed_queue_never_moves_the_pulls_of_its_next_process_queue():
    """[OR-12] [LK-06] [PL-04] (4.9.1) c1's pull of queue 0 is held by the broker (long polling) when the queue
    goes to c0 at 5 s; c1's rebalance removes it. At 7.3 s c0 leaves and c1 adds the queue again with a new
    ProcessQueue, which 4.9.1 does not mark locked (RebalanceImpl 4.9.1 L375-L376), so its pull waits 1 s at a time
    (DefaultMQPushConsumerImpl 4.9.1 L292-L296): 8.3 s, 9.3 s, ... m0, stored at 10.5 s, answers the old held
    pull, whose callback reaches only its own dropped ProcessQueue and PullRequest (L308-L345), and that request
    stops at its next pull (L213-L218): the new request keeps its cadence. lockAll marks the queue locked at 21 s
    (c1 started at 0: 1 s, then every 20 s), so the first locked pull, and m0's listener call, is at 21.3 s."""
    mq = MessageQueue(TOPIC, 0)
    system = create_system(Config(consume_mode="orderly", profile="4.9.1"), ("c1",), topic_queue_nums=1)
    system, _ = run(system, Advance(5_000))
    assert ("c1", mq) in system.parked
    system, _ = run(system, SetMembers(("c0", "c1")), Advance(7_300), SetMembers(("c1",)))
    assert mq in system.consumers["c1"].process_queues and not system.consumers["c1"].process_queues[mq].locked
    system, seen = run(system, Advance(10_500), Produce("m0"), Advance(23_000))
    waits = [o.time for o in seen if isinstance(o, PullObserved) and o.queue == mq and o.status == "FLOW_CONTROL"]
    assert waits == list(range(7_300, 21_300, 1_000))
    assert [(o.time, [m.body.decode() for m in o.messages]) for o in seen
            if isinstance(o, ListenerInvoked)] == [(21_300, ["m0"])]
