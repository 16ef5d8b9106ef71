"""LeaseExpiry: a small driver (one queue, two instances, instant pulls) over the pure lock, gate, take, result
and removal steps, for what the system cannot produce on its own: an instance that hangs (a long GC pause, a stuck
call) and so neither renews its lease nor returns from its listener (OR-14 refuted without its proviso). The
chapter's machine on the whole system is properties/test_orderly_system.py.
"""

from __future__ import annotations

import pytest
from attrs import evolve
from hypothesis import event, settings
from hypothesis import strategies as st
from hypothesis.stateful import (
    RuleBasedStateMachine,
    initialize,
    invariant,
    precondition,
    rule,
    run_state_machine_as_test,
)

from model.broker import commit_offset, create_broker, query_offset
from model.message import Message, MessageQueue
from model.offset_store import create_offset_store
from model.orderly import OrderlyStatus, Step, process_consume_result, process_gate, process_take
from model.orderly_rebalance import process_remove_queue
from model.process_queue import create_process_queue, put_message
from model.queue_locks import on_lock_batch, process_lock_all
from properties.suite import get_suite_config

GROUP, TOPIC, MQ = "g", "t", MessageQueue("t", 0)
CLIENTS = ("A", "B")


class LeaseExpiry(RuleBasedStateMachine):
    STRICT = False  # the refutation subclass asserts exclusivity even across an expired lease or a forced unlock

    def __init__(self):
        super().__init__()
        self.config = evolve(get_suite_config(), consume_mode="orderly", message_model="clustering")
        self.broker = create_broker(self.config, GROUP, {TOPIC: 1})
        self.now, self.produced = 0, 0
        self.pqs = {}  # client -> ProcessQueue (the one queue), absent when not owned
        self.running = {}  # client -> (msgs, pq it was taken from)
        self.finished: set[int] = set()
        self.excused = False  # a lease expired or a 5.x forced unlock happened while a listener ran
        self.generation = 0  # a new ProcessQueue's number: a hung listener's result must not reach its successor
        self.pq_generation: dict[str, int] = {}

    def pull(self, client):
        pq = self.pqs[client]
        start = max([o for o, _ in pq.msg_tree_map.items()] + [o for o, _ in pq.consuming_msg_orderly_tree_map.items()]
                    + [self.pull_from[client] - 1]) + 1
        msgs = [self.stored[o] for o in range(start, self.produced)]
        self.pqs[client], _ = put_message(pq, msgs)

    @rule()
    def produce(self):
        self.stored = getattr(self, "stored", {})
        self.stored[self.produced] = Message(TOPIC, body=b"m", queue_offset=self.produced)
        self.produced += 1
        for client in self.pqs:
            self.pull(client)

    @rule(client=st.sampled_from(CLIENTS))
    def rebalance(self, client):
        """The queue is assigned to `client`; the other instance removes it (OR-12), then `client` locks it (LK-01)."""
        other = CLIENTS[1 - CLIENTS.index(client)]
        if other in self.pqs:
            removal = process_remove_queue(self.broker, create_offset_store(self.config), self.config, GROUP, other,
                                           MQ, self.pqs[other], self.now, other in self.running)
            self.broker = removal.broker
            event("OR-12 removed" if removal.removed else "OR-12 kept (listener running)")
            if other in self.running and removal.removed:
                self.excused = True
            self.pqs.pop(other)
        if client not in self.pqs:
            result = on_lock_batch(self.broker, GROUP, (MQ,), client, self.now)
            self.broker = result.broker
            if MQ in result.granted:
                # LK-06: the new owner starts where the broker's committed offset says.
                self.pull_from = getattr(self, "pull_from", {})
                self.pull_from[client] = max(query_offset(self.broker, GROUP, TOPIC, 0), 0)
                self.pqs[client] = evolve(create_process_queue(self.now), locked=True)
                self.generation += 1
                self.pq_generation[client] = self.generation
                self.pull(client)
                event("LK-01 granted")

    @rule(client=st.sampled_from(CLIENTS))
    def lock_all(self, client):
        if client in self.pqs:
            self.broker, table = process_lock_all(self.broker, GROUP, client, _one(self.pqs[client]), self.now)
            self.pqs[client] = table[MQ]
            event("LK-03")

    @rule(ms=st.sampled_from([10, 1_000, 25_000, 61_000]))
    def advance(self, ms):
        if self.running and ms > 30_000:
            self.excused = True
        self.now += ms

    @precondition(lambda self: self.pqs)
    @rule(data=st.data())
    def listener_starts(self, data):
        client = data.draw(st.sampled_from(sorted(self.pqs)))
        pq = self.pqs[client]
        if client in self.running or process_gate(pq, self.config, self.now, self.now, True).step is not Step.TAKE:
            return
        pq, msgs = process_take(pq, self.config)
        if not msgs:
            return
        self.pqs[client] = pq
        first = msgs[0].queue_offset
        assert all(o in self.finished for o in range(first)), "OR-13: an unfinished message was overtaken"
        others = [c for c in self.running if c != client]
        if others and (self.STRICT or not self.excused):
            raise AssertionError(f"OR-14: {client} and {others} run the listener of {MQ} at once")
        self.running[client] = (msgs, self.pq_generation[client])
        event("OR-03")

    @precondition(lambda self: self.running)
    @rule(data=st.data(), outcome=st.sampled_from(list(OrderlyStatus)), auto_commit=st.booleans())
    def listener_returns(self, data, outcome, auto_commit):
        client = data.draw(st.sampled_from(sorted(self.running)))
        msgs, generation = self.running.pop(client)
        if client not in self.pqs or self.pq_generation[client] != generation:
            return  # the ProcessQueue was dropped: its result is discarded (OR-10, OR-11)
        result = process_consume_result(self.broker, self.pqs[client], self.config, GROUP, msgs, outcome, self.now,
                                        auto_commit=auto_commit)
        self.broker, self.pqs[client] = result.broker, result.pq
        for rule_id in result.rules:
            event(rule_id)
        if outcome in (OrderlyStatus.SUCCESS, OrderlyStatus.COMMIT) or (auto_commit and result.commit_offset >= 0):
            self.finished.update(m.queue_offset for m in msgs)
        if result.sent and auto_commit and result.commit_offset >= 0:
            self.finished.update(m.queue_offset for m in msgs)  # given up and skipped
        if result.sent and not auto_commit and result.continue_consume:
            self.finished.update(m.queue_offset for m in msgs)  # given up, still in the consuming map
        if result.commit_offset >= 0:
            # OR-16: everything below the committed offset was finished.
            assert all(o in self.finished for o in range(result.commit_offset)), "OR-16: commit skipped a message"
            self.broker = commit_offset(self.broker, GROUP, TOPIC, 0, result.commit_offset)

    @rule(client=st.sampled_from(CLIENTS))
    def crash(self, client):
        self.pqs.pop(client, None)
        self.running.pop(client, None)

    @invariant()
    def committed_offset_skips_nothing(self):
        committed = query_offset(self.broker, GROUP, TOPIC, 0)
        assert all(o in self.finished for o in range(committed))


def _one(pq):
    from pyrsistent import pmap

    return pmap({MQ: pq})


TestLeaseExpiry = LeaseExpiry.TestCase


class StrictLeaseExpiry(LeaseExpiry):
    """Listeners hang (they never return) and exclusivity is asserted without the lease proviso."""

    STRICT = True

    def listener_returns(self):  # not a rule here: the instance hangs (a long GC pause, a stuck call) ...
        raise NotImplementedError

    def lock_all(self):  # ... so its lockAll task does not renew the lease either
        raise NotImplementedError

    @rule()
    def listener_hangs_past_the_lease(self):
        self.advance(61_000)

    @rule()
    def b_takes_over(self):
        self.rebalance("B")

    @initialize()
    def a_owns_a_message(self):
        self.rebalance("A")
        self.produce()


def test_a_lease_expiring_mid_consume_breaks_exclusivity():
    """OR-14 refuted without its proviso: a listener outliving its lease lets a second instance run the queue."""
    with pytest.raises(AssertionError, match="OR-14"):
        run_state_machine_as_test(StrictLeaseExpiry, settings=settings(
            max_examples=300, stateful_step_count=8, database=None, deadline=None, derandomize=True))


@pytest.mark.parametrize("profile", ["4.9.8", "5.3.3"])
@pytest.mark.parametrize("running", [False, True])
@pytest.mark.parametrize("lock_age", [5_000, 25_000])
def test_removing_a_consuming_queue(profile, running, lock_age):
    """OR-12: 4.9 keeps a queue whose listener runs and unlocks later if messages remain; 5.x unlocks at once
    when the listener is idle, and force-unlocks a dropped queue whose lock is older than 20 s."""
    config = evolve(get_suite_config(), profile=profile, consume_mode="orderly", message_model="clustering")
    broker = on_lock_batch(create_broker(config, GROUP, {TOPIC: 1}), GROUP, (MQ,), "A", 0).broker
    pq, _ = put_message(evolve(create_process_queue(0), locked=True), [Message(TOPIC, queue_offset=0)])
    removal = process_remove_queue(broker, create_offset_store(config), config, GROUP, "A", MQ, pq, lock_age,
                                   running)
    force = profile == "5.3.3" and lock_age > 20_000
    assert removal.removed is (not running or force)
    unlocked = MQ not in {mq for (_g, mq) in removal.broker.queue_locks.keys()}
    if profile == "4.9.8":
        assert not unlocked and removal.unlock_at == (None if running else lock_age + 20_000)
    else:
        assert unlocked is removal.removed and removal.unlock_at is None
