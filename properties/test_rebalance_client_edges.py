"""RB-01 / LK-08 / LK-01 (spec/10-rebalance.md, spec/12-orderly.md), by example: one instance's rebalance
(updateProcessQueueTableInRebalance) leaves a flow-controlled queue alone however old its recorded last pull, cites
LK-08 when it drops a queue not pulled for 120 s, and, when an orderly queue's lock is refused, goes on to add the
next queues. mutmut found these unchecked in rebalance_client.

Expected values are written out from RocketMQ 4.9.8 (cited in each test) and the spec's rule ids, not read from
model/.
"""

from __future__ import annotations

from model.broker.locks import get_lock_owner
from model.client.observations import Note
from model.system.events import Advance, Crash, Produce, RefuseRequests, SetMembers
from model.system.step import create_system
from model.values.config import Config
from model.values.message import MessageQueue
from model.values.names import GROUP, TOPIC
from model.values.wire import ResponseCode
from properties.steps import run

Q0, Q1, Q2 = (MessageQueue(TOPIC, q) for q in range(3))


def test_a_flow_controlled_queue_is_kept_by_every_rebalance():
    """LK-08 / PL-02: DefaultMQPushConsumerImpl.pullMessage 4.9.8 L219-L226 stamps lastPullTimestamp on every
    attempt, and a queue holding more than pullThresholdForQueue messages re-attempts every 50 ms
    (executePullRequestLater, L245-L253), so RebalanceImpl 4.9.8 L347 `pq.isPullExpired()` never holds for it.
    c1's only queue is held back by the cache from 1 s on and its listener never returns: the rebalances up to
    200 s (every 20 s) neither find it not pulled for 120 s nor drop it; its ProcessQueue stays the same."""
    system = create_system(Config(profile="4.9.8", pull_threshold_for_queue=1), ("c1",), topic_queue_nums=1)
    system, _ = run(system, Produce("a"), Produce("b"), Advance(1_000))
    assert ("c1", Q0) in system.flow_parked
    pq = system.consumers["c1"].process_queues[Q0]
    system, seen = run(system, Advance(200_000))
    assert [o.what for o in seen if isinstance(o, Note) and str(Q0) in o.what] == []
    assert system.consumers["c1"].process_queues[Q0] is pq


def test_a_queue_not_pulled_for_120_s_is_dropped_citing_lk_08():
    """LK-08: c1's first pull of its queue at 0 s is refused and retried only 145 s later
    (PullCallback.onException: pullTimeDelayMillsWhenException, DefaultMQPushConsumerImpl 4.9.8 L403-L411 / PL-11);
    the rebalance at 140 s (every 20 s) finds the queue not pulled for 140 s > 120 s (ProcessQueue.isPullExpired
    4.9.8 L72-L74, RebalanceImpl 4.9.8 L347-L358) and drops it; the spec's LK-08 is the rule that observation
    exercises."""
    config = Config(profile="4.9.8", pull_time_delay_mills_when_exception=145_000)
    system = create_system(config, ("c1",), topic_queue_nums=1)
    system, seen = run(system, RefuseRequests("pull", ResponseCode.SYSTEM_ERROR), Advance(140_000))
    stale = [(o.what, o.time, o.rules) for o in seen if isinstance(o, Note) and "not pulled" in o.what
             and str(Q0) in o.what]
    assert stale == [(f"c1 {Q0}: not pulled for 120 s", 140_000, ("LK-08",))]


def test_a_refused_orderly_lock_skips_only_that_queue():
    """RB-01 / LK-01: updateProcessQueueTableInRebalance (RebalanceImpl 4.9.8 L368-L373) adds each assigned queue
    missing from the table; for an orderly one whose lock(mq) fails it `continue`s to the next queue. c0, c1, c2
    each own one of three queues (AllocateMessageQueueAveragely); c0 crashes, still leasing Q0 at the broker for
    60 s (RebalanceLockManager 4.9.8 L259-L264), and c2 leaves, releasing Q2 at once (no message cached:
    RebalancePushImpl.unlockDelay 4.9.8 L113-L135). c1, now alone, is refused Q0 but still takes Q2."""
    system = create_system(Config(profile="4.9.8", consume_mode="orderly"), ("c0", "c1", "c2"), topic_queue_nums=3)
    assert [mq for mq in (Q0, Q1, Q2) if mq in system.consumers["c1"].process_queues] == [Q1]
    system, _ = run(system, Crash("c0"), SetMembers(("c1",)))
    assert get_lock_owner(system.broker, GROUP, Q0, system.now) == "c0"
    assert [mq for mq in (Q0, Q1, Q2) if mq in system.consumers["c1"].process_queues] == [Q1, Q2]
    assert get_lock_owner(system.broker, GROUP, Q2, system.now) == "c1"
