"""The whole system under random histories: produce, pull, listener outcomes, failing send-backs, clock steps and
jumps, one-way persists delivered late or lost, rebalance, crash, drain (spec/11-guarantees.md)."""

from __future__ import annotations

from attrs import evolve
from hypothesis import event, target
from hypothesis import strategies as st
from hypothesis.stateful import RuleBasedStateMachine, initialize, invariant, precondition, rule

from model.cluster import (
    Advance,
    CompleteConsume,
    ConsumeStatus,
    Crash,
    DeliverOneway,
    ListenerResult,
    Produce,
    SetMembers,
)
from model.config import get_max_reconsume_times
from model.drain import drain, is_quiescent
from model.process_queue import get_max_span
from model.system import create_system, step
from properties.suite import get_suite_config
from properties.system_oracle import Ledger

CLIENTS = ("c1", "c2", "c3")
OUTCOMES = st.builds(
    ListenerResult,
    status=st.sampled_from(ConsumeStatus),
    ack_index=st.sampled_from([2**31 - 1, -1, 0, 1]),
    delay_level_when_next_consume=st.sampled_from([0, 0, 0, -1, 1, 4, 20]),
)


def get_machine_config(retry_queue_nums: int):
    """The suite's config with small flow-control thresholds so that they bind within a few steps."""
    return evolve(get_suite_config(), pull_threshold_for_queue=6, pull_batch_size=4,
                  consume_concurrently_max_span=8, consume_message_batch_max_size=2,
                  retry_queue_nums=retry_queue_nums,
                  max_reconsume_times=min(get_max_reconsume_times(get_suite_config()), 3))


class ConsumerGroup(RuleBasedStateMachine):
    """One topic of two queues, a group of up to three instances, and every user-visible guarantee."""

    @initialize(retry_queue_nums=st.sampled_from([1, 1, 1, 2, 0]))
    def start(self, retry_queue_nums):
        self.config = get_machine_config(retry_queue_nums)
        self.system = create_system(self.config, ("c1",), hold_oneway=True)
        self.ledger = Ledger(self.config)
        self.keys = 0
        self.top_reconsume = 0

    def apply(self, ev):
        self.system, observations = step(self.system, ev)
        self.ledger.record(observations)
        for o in observations:
            for rule_id in o.rules:
                event(rule_id)
        return observations

    @rule(queue_id=st.integers(0, 1), delay_level=st.sampled_from([0, 0, 0, 2]))
    def produce(self, queue_id, delay_level):
        self.keys += 1
        self.apply(Produce(f"k{self.keys}", queue_id, delay_level=delay_level))

    @precondition(lambda self: self.system.requests)
    @rule(data=st.data(), result=OUTCOMES, rpc_fails=st.booleans(), fallback_fails=st.booleans())
    def listener_returns(self, data, result, rpc_fails, fallback_fails):
        request_id = data.draw(st.sampled_from(sorted(self.system.requests)))
        self.apply(CompleteConsume(request_id, result, rpc_fails, rpc_fails and fallback_fails))
        top = max((m.reconsume_times for r in self.system.requests.values() for m in r.messages), default=0)
        self.top_reconsume = max(self.top_reconsume, top)

    @rule(ms=st.integers(1, 3000))
    def clock_ticks(self, ms):
        self.apply(Advance(self.system.now + ms))

    @rule(ms=st.sampled_from([10_000, 60_000, 600_000, 16 * 60_000, 7_200_000]))
    def clock_jumps(self, ms):
        self.apply(Advance(self.system.now + ms))

    @precondition(lambda self: len(self.system.oneway))
    @rule(data=st.data(), lose=st.booleans())
    def oneway_persist_arrives(self, data, lose):
        index = data.draw(st.integers(0, len(self.system.oneway) - 1))
        self.apply(DeliverOneway(index, lose))

    @rule(members=st.sets(st.sampled_from(CLIENTS), min_size=1))
    def group_rebalances(self, members):
        self.apply(SetMembers(tuple(sorted(members))))

    @precondition(lambda self: len(self.system.consumers) > 1)
    @rule(data=st.data())
    def instance_crashes(self, data):
        self.apply(Crash(data.draw(st.sampled_from(sorted(self.system.consumers)))))

    @rule(failure_rate=st.sampled_from([0, 3]))
    def drain_to_quiescence(self, failure_rate):
        if not self.system.members:
            self.apply(SetMembers(("c1",)))
        self.system = evolve(self.system, hold_oneway=False)
        self.system, observations, _ = drain(self.system, make_listener(failure_rate))
        self.system = evolve(self.system, hold_oneway=True)
        self.ledger.record(observations)
        assert is_quiescent(self.system)
        self.check_at_least_once()

    def check_at_least_once(self):
        """[SY-10] At quiescence each produced message succeeded, is in the DLQ, or was dropped by design."""
        assert self.ledger.get_unaccounted() == []
        if self.ledger.dropped_by_design:
            event("SY-10 by-design loss (retryQueueNums = 0)")
            assert self.config.retry_queue_nums == 0

    def teardown(self):
        if hasattr(self, "ledger"):
            target(float(self.top_reconsume), label="reconsume times in flight")
            target(float(len(self.ledger.dlq)), label="DLQ arrivals")

    @invariant()
    def cached_messages_bounded_and_above_offset(self):
        """[PL-02] cached count <= threshold + pullBatchSize; [SY-03] nothing cached lies below the offset."""
        for consumer in self.system.consumers.values():
            for mq, pq in consumer.process_queues.items():
                assert pq.msg_count <= self.config.pull_threshold_for_queue + self.config.pull_batch_size
                entry = consumer.offset_store.offsets.get(mq)
                if pq.msg_tree_map and entry is not None:
                    assert pq.msg_tree_map.first_key() >= entry.value
                if get_max_span(pq) > self.config.consume_concurrently_max_span:
                    event("PL-03 span above the maximum after a pull")


def make_listener(failure_rate: int):
    """A deterministic listener: fails `failure_rate` in 10 attempts, chosen by message and attempt."""

    def listener(request):
        m = request.messages[0]
        fails = (sum(map(ord, m.uniq_key or "")) * 7 + m.reconsume_times * 3) % 10 < failure_rate
        status = ConsumeStatus.RECONSUME_LATER if fails else ConsumeStatus.CONSUME_SUCCESS
        return CompleteConsume(request.request_id, ListenerResult(status))

    return listener


TestConsumerGroup = ConsumerGroup.TestCase
