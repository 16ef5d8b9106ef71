"""[PL-07] The offset a pull carries is committed even when the broker holds that pull (long polling), and the
commit is observed: found by the triage of rebalance's mutants (the held branch of process_pull returned no
observations, so the broker's offset moved unseen)."""

from __future__ import annotations

from model.client.observations import OffsetCommitted
from model.system.events import Advance, Produce
from model.system.step import create_system
from model.values.config import Config
from model.values.message import MessageQueue
from model.values.names import GROUP, TOPIC
from properties.steps import complete_running, run

Q0 = MessageQueue(TOPIC, 0)



def test_a_held_pulls_piggybacked_commit_is_observed():
    """[PL-07] PullMessageProcessor commits the request's offset after its switch on the answer, so also for a
    PULL_NOT_FOUND it suspends (storeOffsetEnable = brokerAllowSuspend && hasCommitOffsetFlag, 4.9.8 L408-L471). c1
    consumes a (the broker has 1 after the 5 s persist), then b at 10 000 (2 in memory); its next pull, 1 s later
    (pullInterval), carries 2 and is held at the queue's end: the broker's 1 -> 2 is observed as that pull's."""
    system = create_system(Config(pull_interval=1000), ("c1",), topic_queue_nums=1)
    system, _ = run(system, Produce("a"), Advance(0))
    system, _ = run(complete_running(system), Advance(10_000))
    assert system.broker.consumer_offsets.get((GROUP, TOPIC, 0)) == 1
    system, _ = run(system, Produce("b"), Advance(10_001))
    system, seen = run(complete_running(system), Advance(11_001))
    commits = [o for o in seen if isinstance(o, OffsetCommitted) and o.queue == Q0]
    assert [(o.offset, o.previous, o.source, o.time, o.rules) for o in commits] == [(2, 1, "pull", 11_000, ("PL-07",))]
    assert system.broker.consumer_offsets.get((GROUP, TOPIC, 0)) == 2
