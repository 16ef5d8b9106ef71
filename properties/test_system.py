"""The whole system under random histories: produce, pull, listener outcomes, failing send-backs, clock steps and
jumps, one-way persists delivered late or lost, rebalance, crash, drain (spec/11-guarantees.md).

`ConsumerGroup` runs the suite configuration (properties/suite.py: profile, message model, retry preset) with
small flow-control thresholds. Three subclasses always run too, whatever the suite says: broadcasting
(SY-08), a tag-filtered subscription (PL-04, PL-05, PL-06) and the tight retry preset (DLQ and by-design losses,
SY-05, SY-10). These are concurrently machines: under RMQSPEC_CONSUME_MODE=orderly they skip themselves, with that
reason, in favour of `OrderlyConsumption` (properties/test_orderly_system.py), which then runs the suite's profile.
"""

from __future__ import annotations

import collections
import functools
import operator

import pytest
from attrs import evolve
from hypothesis import event, target
from hypothesis import strategies as st
from hypothesis.stateful import RuleBasedStateMachine, initialize, invariant, precondition, rule

from model.broker.state import PERM_READ, PERM_WRITE
from model.client.listener import ConsumeStatus, ListenerResult
from model.client.observations import PullObserved
from model.client.process_queue import get_max_span
from model.client.rebalance import get_subscribed_queues
from model.client.timer_items import PullDue
from model.system.drain import drain, is_quiescent
from model.system.events import (
    Advance,
    CompleteConsume,
    Crash,
    DeliverOneway,
    ExpireQueueHead,
    Produce,
    RefuseRequests,
    SetBrokerPermission,
    SetMembers,
)
from model.system.observations import Livelock
from model.system.state import System
from model.system.step import GROUP, create_system, step
from model.values.config import Config, ConsumeMode, MessageModel
from model.values.message import MessageQueue, get_retry_topic, is_retry_topic
from model.values.names import TOPIC
from model.values.timer_heap import get_heap_items
from model.values.wire import ResponseCode
from oracle.fate_oracle import FateOracle
from oracle.system_oracle import Ledger
from properties.coverage import record_rules
from properties.suite import RETRY_PRESETS, RETRY_QUEUE_NUMS, get_machine_config, get_retry_preset, get_suite_config

CLIENTS = ("c1", "c2", "c3")
# "Aa" and "BB" share a String.hashCode: the broker lets "BB" through a subscription to "Aa" (PL-04).
TAGS = (None, "TagA", "TagB", "Aa", "BB")
# DefaultMessageStore.getMessage scans at most max(16000, maxMsgNums * 20) bytes of 20-byte consume-queue units.
SCAN_LIMIT_UNITS = 16000 // 20
OUTCOMES = st.builds(
    ListenerResult,
    status=st.sampled_from(ConsumeStatus),
    ack_index=st.sampled_from([2**31 - 1, -1, 0, 1]),
    delay_level_when_next_consume=st.sampled_from([0, 0, 0, -1, 1, 4, 20]),
)
INITIAL_TAGS = st.lists(st.sampled_from(TAGS), min_size=1, max_size=10)
# Every error code the model's broker answers a send-back, a send or a pull with (None: the refusal ends).
REFUSALS = (None, ResponseCode.SYSTEM_ERROR, ResponseCode.NO_PERMISSION, ResponseCode.TOPIC_NOT_EXIST,
            ResponseCode.SUBSCRIPTION_GROUP_NOT_EXIST)
REFUSED_KINDS = ("send_back", "send", "pull")
ORDERLY_SUITE = get_suite_config().consume_mode is ConsumeMode.ORDERLY
runs_concurrently = pytest.mark.skipif(
    ORDERLY_SUITE, reason="RMQSPEC_CONSUME_MODE=orderly: the system runs under OrderlyConsumption instead")


@functools.lru_cache(maxsize=1024)
def sampled(choices: tuple) -> st.SearchStrategy:
    """`st.sampled_from(choices)`, one object per tuple: Hypothesis validates each new strategy object on its first
    draw, and a new one every step was a measurable part of the machine's time."""
    return st.sampled_from(choices)


@functools.lru_cache(maxsize=64)
def create_initial_system(config: Config, subscription: frozenset | None) -> System:
    """The machine's first state: a value, so each configuration's is built once and shared by its test cases."""
    return create_system(config, ("c1",), hold_oneway=True, subscription=subscription)


class ConsumerGroup(RuleBasedStateMachine):
    """One topic of two queues, a group of up to three instances, and every user-visible guarantee."""

    overrides: dict = {}
    subscription: frozenset | None = None
    retry_queue_nums = RETRY_QUEUE_NUMS[get_retry_preset()]
    # Out of 10 attempts; 10 (every attempt fails) only where the retry budget is small, or a drain takes hours.
    drain_failure_rates = (0, 3, 10) if get_retry_preset() == "tight" else (0, 3)

    @initialize(data=st.data())
    def start(self, data):
        retry_queue_nums = data.draw(sampled(tuple(self.retry_queue_nums)), label="retry_queue_nums")
        self.config = get_machine_config(**{"retry_queue_nums": retry_queue_nums, **self.overrides})
        self.system = create_initial_system(self.config, self.subscription)
        self.ledger = Ledger(self.config, self.subscription)
        queues = [MessageQueue(TOPIC, i) for i in range(2)]
        if self.config.is_clustering:
            queues += [MessageQueue(get_retry_topic(GROUP), i) for i in range(retry_queue_nums)]
        self.fates = FateOracle(self.config, queues, ("c1",), self.subscription) if self.config.is_clustering else None
        self.livelocked = False
        self.keys = 0
        self.deepest = {"reconsume": 0, "span": 0}
        # A few messages from the start, so that short runs also reach retries and the DLQ.
        for tags in data.draw(INITIAL_TAGS, label="initial messages"):
            self.keys += 1
            self.apply(Produce(f"k{self.keys}", self.keys % 2, tags=tags))

    def apply(self, ev):
        # [SY-12] [PL-10] After a Livelock the history is over: the state is stuck at that instant (the Ledger has
        # checked it is the 5.2.0+ cycle), and every later step would only spin to the bound again.
        if self.livelocked:
            return []
        self.tell_fates(ev)
        self.system, observations = step(self.system, ev)
        self.observe(observations)
        if self.fates is not None:
            self.fates.check_due(self.system.now)
        self.livelocked = any(isinstance(o, Livelock) for o in observations)
        return observations

    def tell_fates(self, ev):
        """The exact-fate oracle hears of each answer and fault from the workload, before the model steps."""
        fates, kind, now = self.fates, type(ev), self.system.now
        if fates is None:
            return
        if kind is CompleteConsume:
            fates.answer(ev.request_id, ev.result, ev.send_back_rpc_fails, ev.fallback_fails, ev.send_retried)
        elif kind is SetMembers:
            fates.on_members(ev.client_ids, now)
        elif kind is Crash:
            fates.on_crash(ev.client_id, now)
        elif kind is ExpireQueueHead:
            fates.on_expire(ev.queue, ev.min_offset, now)
        elif kind is SetBrokerPermission:
            fates.on_permission(bool(ev.perm & PERM_WRITE))
        elif kind is RefuseRequests:
            fates.on_refusal(ev.kind, ev.code)

    def observe(self, observations):
        self.ledger.record(observations)
        if self.fates is not None:
            self.fates.record(observations)
        # An event is recorded once per test case however often it is called; a clock jump observes hundreds.
        record_rules({rule_id for o in observations for rule_id in o.rules})
        for o in observations:
            if isinstance(o, PullObserved) and o.status == "FOUND":
                self.check_pull_span(o)
            for m in getattr(o, "messages", ()):
                self.deepest["reconsume"] = max(self.deepest["reconsume"], m.reconsume_times)

    def check_pull_span(self, o: PullObserved):
        """[PL-04] [PL-05] A FOUND pull returns at most pullBatchSize messages but, filtering by tag, may pass
        over up to the broker's scan limit of offsets; unfiltered it spans exactly what it returns."""
        spanned = o.next_offset - o.offset
        assert 1 <= o.found <= self.config.pull_batch_size
        if self.subscription is None or is_retry_topic(o.queue.topic):
            assert spanned == o.found, (spanned, o.found)
        assert spanned <= max(SCAN_LIMIT_UNITS, self.config.pull_batch_size)
        if spanned > self.config.pull_batch_size:
            event("PL-05")
            event("PL-05 a filtered pull spans more offsets than pullBatchSize")
        self.deepest["span"] = max(self.deepest["span"], spanned)

    @rule(queue_id=st.integers(0, 1), delay_level=st.sampled_from([0, 0, 0, 2]), tags=st.sampled_from(TAGS))
    def produce(self, queue_id, delay_level, tags):
        self.keys += 1
        self.apply(Produce(f"k{self.keys}", queue_id, tags=tags, delay_level=delay_level))

    @precondition(lambda self: self.system.requests)
    @rule(data=st.data(), result=OUTCOMES, rpc_fails=st.booleans(), fallback_fails=st.booleans())
    def listener_returns(self, data, result, rpc_fails, fallback_fails):
        request_id = data.draw(sampled(tuple(sorted(self.system.requests))))
        self.apply(CompleteConsume(request_id, result, rpc_fails, rpc_fails and fallback_fails))

    @precondition(lambda self: self.system.requests)
    @rule(delay_level=st.sampled_from([0, 0, -1]))
    def every_running_listener_fails(self, delay_level):
        """Drives messages deep: all running requests fail (RECONSUME_LATER) in one step."""
        failed = ListenerResult(ConsumeStatus.RECONSUME_LATER, delay_level_when_next_consume=delay_level)
        for request_id in sorted(self.system.requests):
            self.apply(CompleteConsume(request_id, failed))

    @rule(ms=st.integers(1, 3000))
    def clock_ticks(self, ms):
        self.apply(Advance(self.system.now + ms))

    @rule(ms=st.sampled_from([10_000, 30_000, 60_000, 300_000, 16 * 60_000]))
    def clock_jumps(self, ms):
        if "pull" in self.system.refusals:
            # A refused pull is made again every second (PL-11): a long outage costs thousands of pulls, and a
            # short one shows the same.
            self.apply(RefuseRequests("pull", None))
        self.apply(Advance(self.system.now + ms))

    @precondition(lambda self: len(self.system.oneway))
    @rule(data=st.data(), lose=st.booleans())
    def oneway_persist_arrives(self, data, lose):
        index = data.draw(st.integers(0, len(self.system.oneway) - 1))
        self.apply(DeliverOneway(index, lose))

    @rule(members=st.sets(st.sampled_from(CLIENTS), min_size=1))
    def group_rebalances(self, members):
        self.apply(SetMembers(tuple(sorted(members))))
        self.check_allocation_partitions_the_queues()

    def check_allocation_partitions_the_queues(self):
        """[RB-01] Right after a membership change, CLUSTERING splits the group's queues over the members (each
        queue owned once); BROADCASTING gives every member every queue of the topic."""
        queues = get_subscribed_queues(self.system)
        if self.config.is_clustering:
            owned = [mq for consumer in self.system.consumers.values() for mq in consumer.process_queues]
            assert sorted(owned) == queues, owned
        else:
            assert not [mq for mq in queues if is_retry_topic(mq.topic)]
            for consumer in self.system.consumers.values():
                assert sorted(consumer.process_queues) == queues
        event("RB-01")

    @precondition(lambda self: len(self.system.consumers) > 1)
    @rule(data=st.data())
    def instance_crashes(self, data):
        self.apply(Crash(data.draw(sampled(tuple(sorted(self.system.consumers))))))

    @rule(writeable=st.booleans())
    def broker_permission_changes(self, writeable):
        """[SY-13] The broker turns read-only (sends and send-backs refused with NO_PERMISSION) or writeable."""
        self.apply(SetBrokerPermission(PERM_READ | (PERM_WRITE if writeable else 0)))

    @rule(kind=st.sampled_from(REFUSED_KINDS), code=st.sampled_from(REFUSALS))
    def broker_refuses(self, kind, code):
        """[SY-13] [PL-11] The broker answers send-backs, sends to %RETRY% or pulls with an error code (or again
        handles them)."""
        self.apply(RefuseRequests(kind, code))

    @rule(data=st.data())
    def queue_head_expires(self, data):
        """The broker deletes a queue's head (expired commit-log files), of the topic or of %RETRY%<group>."""
        queue = data.draw(sampled(tuple(get_subscribed_queues(self.system))), label="queue")
        high = self.system.broker.store.get_max_offset_in_queue(queue.topic, queue.queue_id)
        self.apply(ExpireQueueHead(queue, data.draw(st.integers(0, high), label="min_offset")))

    @rule(data=st.data())
    def drain_to_quiescence(self, data):
        failure_rate = data.draw(sampled(self.drain_failure_rates), label="failure_rate")
        if self.livelocked:
            return
        if not self.system.members:
            self.apply(SetMembers(("c1",)))
        # The broker's faults end before the drain: a broker refusing for ever leaves nothing quiescent.
        self.apply(SetBrokerPermission(PERM_READ | PERM_WRITE))
        for kind in sorted(self.system.refusals):
            self.apply(RefuseRequests(kind, None))
        self.system = evolve(self.system, hold_oneway=False)
        self.system, observations, _ = drain(self.system, make_listener(failure_rate, self.fates))
        self.system = evolve(self.system, hold_oneway=True)
        self.observe(observations)
        assert is_quiescent(self.system)
        self.check_at_least_once()

    def check_at_least_once(self):
        """[SY-10] In CLUSTERING, at quiescence each produced message succeeded, is in the DLQ, or was dropped by
        design — and a by-design drop happens only with retryQueueNums = 0."""
        if not self.config.is_clustering:
            return
        maybe_lost = self.fates.maybe_lost
        lost = sorted(set(self.ledger.get_unaccounted()) - maybe_lost)
        assert not lost, f"[SY-10] unaccounted: {[self.fates.explain(key) for key in lost]}"
        # [SY-13] judged by the oracle's own account: a batch discarded with its ProcessQueue finished nothing.
        unaccounted = self.fates.get_unaccounted()
        assert not unaccounted, f"[SY-13] never finished: {[self.fates.explain(key) for key in unaccounted]}"
        event("SY-10")
        if maybe_lost:
            event("SY-13 messages in a deleted queue head may be lost")
        if self.ledger.dropped_by_design:
            event("SY-10 by-design loss (retryQueueNums = 0)")
            assert self.config.retry_queue_nums == 0

    def teardown(self):
        if hasattr(self, "ledger"):
            target(float(self.deepest["reconsume"]), label="reconsume times seen")
            target(float(len(self.ledger.dlq)), label="DLQ arrivals")
            target(float(len(self.ledger.broker_decreases)), label="broker offset decreases")

    @invariant()
    def cached_messages_bounded_and_above_offset(self):
        """[PL-02] cached count <= threshold + pullBatchSize; [SY-03] nothing cached lies below the offset."""
        for consumer in self.system.consumers.values():
            for mq, pq in consumer.process_queues.items():
                assert pq.msg_count <= self.config.pull_threshold_for_queue + self.config.pull_batch_size
                if pq.msg_count > self.config.pull_threshold_for_queue:
                    event("PL-02")
                    event("PL-02 cache above the threshold after a pull")
                entry = consumer.offset_store.offsets.get(mq)
                if pq.msg_tree_map and entry is not None:
                    assert pq.msg_tree_map.first_key() >= entry.value
                    event("SY-03")
                if get_max_span(pq) > self.config.consume_concurrently_max_span:
                    event("PL-03 span above the maximum after a pull")

    @invariant()
    def every_owned_queue_has_one_pending_pull(self):
        """[PL-01] Each live ProcessQueue has exactly one pull of the current token pending: a timer (a long-polling
        one included), or a pull held back by flow control; superseded pulls may linger but do nothing."""
        # The claim reads only these three values: a step that changed none of them (compared by identity, the
        # state being persistent) cannot have broken it.
        read = (self.system.timers, self.system.flow_parked, self.system.consumers)
        checked = getattr(self, "pulls_checked", None)
        if checked is not None and all(map(operator.is_, read, checked)):
            return
        pending = collections.Counter(
            (item.client_id, item.incarnation, item.queue, item.token)
            for _, item in get_heap_items(self.system.timers) if isinstance(item, PullDue))
        for (client_id, mq), (_since, incarnation, token) in self.system.flow_parked.items():
            pending[client_id, incarnation, mq, token] += 1
        for consumer in self.system.consumers.values():
            for mq, pq in consumer.process_queues.items():
                if not pq.dropped:
                    key = (consumer.client_id, consumer.incarnation, mq, consumer.pull_tokens.get(mq))
                    assert pending[key] == 1, (key, pending[key])
                    event("PL-01")
        self.pulls_checked = read

    @invariant()
    def broadcasting_never_touches_retry(self):
        """[SY-08] [PL-09] BROADCASTING: no %RETRY% queue is owned, so nothing in %RETRY%<group> is ever consumed;
        the only copies there are timed-out messages cleanExpiredMsg sent back."""
        if self.config.is_clustering:
            return
        assert not [mq for c in self.system.consumers.values() for mq in c.process_queues if is_retry_topic(mq.topic)]
        event("PL-09")
        event("SY-08")
        stranded = self.system.broker.store.get_max_offset_in_queue(get_retry_topic(GROUP), 0)
        assert stranded <= self.ledger.broadcast_timeouts


class BroadcastingConsumerGroup(ConsumerGroup):
    """The same histories with every instance consuming every queue (SY-08, CC-09)."""

    overrides = {"message_model": MessageModel.BROADCASTING}


class TagFilteredConsumerGroup(ConsumerGroup):
    """A subscription "TagA || Aa": "BB" collides with "Aa" and is dropped by the client (PL-04, PL-05, PL-06)."""

    subscription = frozenset({"TagA", "Aa"})

    def teardown(self):
        super().teardown()
        if hasattr(self, "ledger"):
            target(float(self.deepest["span"]), label="offsets spanned by one pull")


class DeadLetteringConsumerGroup(ConsumerGroup):
    """The tight retry preset, whatever the suite says: the DLQ and the by-design loss within a few steps."""

    overrides = RETRY_PRESETS["tight"]
    retry_queue_nums = RETRY_QUEUE_NUMS["tight"]
    drain_failure_rates = (0, 3, 10)


def make_listener(failure_rate: int, fates: FateOracle | None = None):
    """A deterministic listener: fails `failure_rate` in 10 attempts, chosen by message and attempt; `fates` hears
    each answer."""

    def listener(request):
        m = request.messages[0]
        fails = (sum(map(ord, m.uniq_key or "")) * 7 + m.reconsume_times * 3) % 10 < failure_rate
        status = ConsumeStatus.RECONSUME_LATER if fails else ConsumeStatus.CONSUME_SUCCESS
        if fates is not None:
            fates.answer(request.request_id, ListenerResult(status))
        return CompleteConsume(request.request_id, ListenerResult(status))

    return listener


TestConsumerGroup = runs_concurrently(ConsumerGroup.TestCase)
TestBroadcastingConsumerGroup = runs_concurrently(BroadcastingConsumerGroup.TestCase)
TestTagFilteredConsumerGroup = runs_concurrently(TagFilteredConsumerGroup.TestCase)
TestDeadLetteringConsumerGroup = runs_concurrently(DeadLetteringConsumerGroup.TestCase)


def test_the_suite_configuration_is_what_runs():
    """[SY-01] The concurrently machines run the suite's profile and model; orderly suites run OrderlyConsumption."""
    suite = get_suite_config()
    if ORDERLY_SUITE:
        from properties.test_orderly_system import OrderlyConsumption

        config = OrderlyConsumption().system.config
        assert (config.consume_mode, config.profile) == (ConsumeMode.ORDERLY, suite.profile)
        return
    config = get_machine_config(retry_queue_nums=1)
    assert (config.profile, config.message_model, config.consume_mode) == (
        suite.profile, suite.message_model, suite.consume_mode)
    assert config.max_reconsume_times == suite.max_reconsume_times
