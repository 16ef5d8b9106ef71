"""A queue leaving an instance (RB-02) and an instance crashing (RB-06), at the cluster level (spec/10-rebalance.md):
the rule ids the drop's persist and the crash's note carry, and a crash leaving the survivors' held pulls alone
(PL-04). mutmut found these unchecked: the drop's persist tagged with another rule id, the crash note's fields, and a
crash that forgot the survivors' long-polling pulls instead of its own, and a drop that kept the queue's held pull
waking the pulls of the queue's next ProcessQueue; a crash that kept the dead incarnation's held pull waking those of
the restarted instance."""

from __future__ import annotations

from model.client.observations import Note, OffsetCommitted, PullObserved
from model.client.offset_store import get_offset
from model.client.rebalance import add_queue, crash, drop_queue
from model.system.events import Advance, Crash, Produce, SetMembers
from model.system.step import create_system
from model.values.config import Config
from model.values.message import MessageQueue
from model.values.names import TOPIC
from properties.steps import complete_running, run

Q0 = MessageQueue(TOPIC, 0)
Q1 = MessageQueue(TOPIC, 1)



def test_a_dropped_queue_persists_its_offset_under_rb_02():
    """[RB-02] RebalancePushImpl 4.9.8 L85-L87: removeUnnecessaryMessageQueue persists the lost queue's in-memory
    offset (one-way) before removeOffset; the broker's offset moves to what the instance consumed, and the commit
    is the drop's (RB-02), before no 5 s persistAll ran."""
    system = create_system(Config(), ("c1",), topic_queue_nums=1)
    system, _ = run(system, Produce("k0"), Produce("k1"), Advance(0))
    system = complete_running(system)
    assert get_offset(system.consumers["c1"].offset_store, Q0) == 2
    system, seen = drop_queue(system, "c1", Q0)
    commits = [(o.queue, o.offset, o.source, o.rules) for o in seen if isinstance(o, OffsetCommitted)]
    assert commits == [(Q0, 2, "persist", ("RB-02",))]
    assert [(o.time, o.rules) for o in seen if isinstance(o, Note)] == [(system.now, ("RB-02",))]


def test_a_crash_is_noted_under_rb_06_at_its_instant():
    """[RB-06] A hard crash is one observation of rule RB-06 at the instant it happens; nothing is persisted
    (no offset commit is observed); like every Note its text names what happened (tests filter notes by it)."""
    system = create_system(Config(), ("c1", "c2"), topic_queue_nums=2)
    system, _ = run(system, Produce("k0"), Advance(1_000))
    system = complete_running(system)
    system, seen = crash(system, "c1")
    assert len(seen) == 1 and isinstance(seen[0], Note)
    assert (seen[0].time, seen[0].rules) == (1_000, ("RB-06",))
    assert isinstance(seen[0].what, str) and "c1" in seen[0].what
    assert "c1" not in system.consumers and "c1" not in system.members


def test_a_crash_leaves_the_survivors_held_pulls_alone():
    """[RB-06] [PL-04] A crash takes only the crashed instance's state: a survivor's pull that the broker holds by
    long polling is still answered as soon as a message arrives (PullRequestHoldService 4.9.8 L116-L141,
    notifyMessageArriving wakes a held request once the queue's max offset passes its offset), not 15 s later."""
    system = create_system(Config(), ("c1", "c2"), topic_queue_nums=2)
    system, _ = run(system, Advance(1_000))
    owner = {mq: c for c in ("c1", "c2") for mq in system.consumers[c].process_queues if mq.topic == TOPIC}
    assert owner == {Q0: "c1", Q1: "c2"}
    system, _ = run(system, Crash("c1"))
    system, seen = run(system, Produce("k0", queue_id=1), Advance(1_000))
    found = [(o.client_id, o.queue, o.status, o.time) for o in seen if isinstance(o, PullObserved)]
    assert ("c2", Q1, "FOUND", 1_000) in found, found


def test_a_dropped_queues_held_pull_never_moves_its_next_process_queues_pulls():
    """[RB-02] [PL-04] [LK-06] (4.9.1, orderly) c1's pull of queue 0 is held by the broker (long polling) at 5 s
    when the queue is removed (removeProcessQueue, RebalanceImpl 4.9.8 L434-L442: the OFFSET_ILLEGAL repair's
    path) and added again at once with a new ProcessQueue, which 4.9.1 does not mark locked, so its pull waits 1 s
    at a time (DefaultMQPushConsumerImpl 4.9.1 L292-L296): 5 s, 6 s, 7 s. m0, stored at 5.5 s, answers only the
    old held pull, whose PullRequest holds the dropped ProcessQueue and stops (L213-L218): the new request keeps
    its cadence."""
    mq = MessageQueue(TOPIC, 0)
    system = create_system(Config(consume_mode="orderly", profile="4.9.1"), ("c1",), topic_queue_nums=1)
    system, _ = run(system, Advance(5_000))
    assert ("c1", mq) in system.parked
    system, _ = drop_queue(system, "c1", mq)
    system, _ = add_queue(system, "c1", mq)
    assert not system.consumers["c1"].process_queues[mq].locked
    system, seen = run(system, Advance(5_000), Advance(5_500), Produce("m0"), Advance(7_900))
    waits = [o.time for o in seen if isinstance(o, PullObserved) and o.queue == mq and o.status == "FLOW_CONTROL"]
    assert waits == [5_000, 6_000, 7_000]


def test_a_crashed_instances_held_pull_never_moves_its_restarts_pulls():
    """[RB-06] [PL-04] [LK-06] (4.9.1, orderly) c1's pull of queue 0 is held by the broker at 5 s when c1 crashes;
    c1 starts again at once (a fresh instance: nothing of the dead one survives, RB-06) and its rebalance adds the
    queue with a new ProcessQueue, which 4.9.1 does not mark locked, so its pull waits 1 s at a time
    (DefaultMQPushConsumerImpl 4.9.1 L292-L296) until lockAll marks it locked, 1 s after the start. m0, stored at
    5.5 s, answers only the dead instance's held pull (its connection is gone): the new instance's pull waits from
    5 s to 6 s, and no pull of it is made in between."""
    mq = MessageQueue(TOPIC, 0)
    system = create_system(Config(consume_mode="orderly", profile="4.9.1"), ("c1",), topic_queue_nums=1)
    system, _ = run(system, Advance(5_000))
    assert ("c1", mq) in system.parked
    system, _ = run(system, Crash("c1"), SetMembers(("c1",)))
    assert not system.consumers["c1"].process_queues[mq].locked
    system, seen = run(system, Advance(5_000), Advance(5_500), Produce("m0"), Advance(5_900))
    pulls = [(o.time, o.status) for o in seen if isinstance(o, PullObserved) and o.queue == mq]
    assert pulls == [(5_000, "FLOW_CONTROL")]
