"""The fast-forward of idle timers is exact (spec/11-guarantees.md, SY-01): the driver with it and the driver
without it (`fast_forward=False`, the reference loop of model/system.py) produce the same observations and the same
system after every event of a random history.

`FastForwardEquivalence` follows the model-versus-model pattern of Hypothesis' stateful testing (its docs compare a
database with a dict): two systems built alike take every event, one through each driver, and must agree on what a
user sees and on every field of the state — the timer heap compared by its (key, item) contents, as the
fast-forward may rebuild it in another shape.
"""

from __future__ import annotations

import attrs
import pytest
from hypothesis import HealthCheck, Phase, event, settings
from hypothesis import strategies as st
from hypothesis.stateful import (
    RuleBasedStateMachine,
    initialize,
    invariant,
    precondition,
    rule,
    run_state_machine_as_test,
)

import model.fast_forward
from model.cluster import (
    Advance,
    CompleteConsume,
    ConsumeStatus,
    Crash,
    DeliverOneway,
    ExpireQueueHead,
    ListenerResult,
    Livelock,
    Produce,
    SetMembers,
    System,
)
from model.config import Config
from model.drain import drain
from model.errors import IllegalTransition
from model.fast_forward import fast_forward
from model.message import MessageQueue
from model.profiles import PROFILES
from model.records import evolve
from model.schedule import get_next_schedule_time
from model.system import TOPIC, create_system, step
from model.timers import get_sorted_heap_items
from properties.suite import MACHINE_THRESHOLDS, RETRY_PRESETS
from properties.test_system import CLIENTS, OUTCOMES, TAGS, make_listener

SUBSCRIPTIONS = (None, frozenset({"TagA", "Aa"}))
# Ticks within one pull cycle, and jumps over many (those of properties/test_system.py).
JUMPS = (10_000, 30_000, 60_000, 300_000, 16 * 60_000)


def assert_same_system(fast: System, slow: System) -> None:
    """[SY-01] Every field equal; the timer heaps hold the same (key, item) entries."""
    assert get_sorted_heap_items(fast.timers) == get_sorted_heap_items(slow.timers)
    for name in (f.name for f in attrs.fields(System) if f.name != "timers"):
        assert getattr(fast, name) == getattr(slow, name), name


class FastForwardEquivalence(RuleBasedStateMachine):
    """Two systems built alike; every event goes to both, the fast one through the fast-forwarding driver."""

    @initialize(profile=st.sampled_from(sorted(PROFILES)), clustering=st.booleans(),
                preset=st.sampled_from(sorted(RETRY_PRESETS)), retry_queue_nums=st.integers(0, 2),
                subscription=st.sampled_from(SUBSCRIPTIONS), hold_oneway=st.booleans(),
                members=st.lists(st.sampled_from(CLIENTS), min_size=1, max_size=3, unique=True))
    def start(self, profile, clustering, preset, retry_queue_nums, subscription, hold_oneway, members):
        config = Config(profile=profile, message_model="clustering" if clustering else "broadcasting",
                        retry_queue_nums=retry_queue_nums, **RETRY_PRESETS[preset], **MACHINE_THRESHOLDS)
        members = tuple(sorted(members))
        self.fast, self.slow = (create_system(config, members, subscription=subscription, hold_oneway=hold_oneway)
                                for _ in range(2))
        self.keys = 0
        self.livelocked = False

    def apply(self, ev) -> None:
        # [SY-12] [PL-10] After a Livelock the history is over: the state is stuck at that instant (the Ledger has
        # checked it is the 5.2.0+ cycle), and every later step would only spin to the bound again.
        if self.livelocked:
            return
        self.fast, seen_fast = step(self.fast, ev)
        self.slow, seen_slow = step(self.slow, ev, fast_forward=False)
        assert seen_fast == seen_slow
        self.livelocked = any(isinstance(o, Livelock) for o in seen_fast)

    @invariant()
    def both_systems_are_equal(self):
        assert_same_system(self.fast, self.slow)

    @rule(queue_id=st.integers(0, 1), delay_level=st.sampled_from([0, 0, 0, 2]), tags=st.sampled_from(TAGS))
    def produce(self, queue_id, delay_level, tags):
        self.keys += 1
        self.apply(Produce(f"k{self.keys}", queue_id, tags=tags, delay_level=delay_level))

    @precondition(lambda self: self.fast.requests)
    @rule(data=st.data(), result=OUTCOMES, rpc_fails=st.booleans(), fallback_fails=st.booleans())
    def listener_returns(self, data, result, rpc_fails, fallback_fails):
        request_id = data.draw(st.sampled_from(sorted(self.fast.requests)))
        self.apply(CompleteConsume(request_id, result, rpc_fails, rpc_fails and fallback_fails))

    @precondition(lambda self: self.fast.requests)
    @rule(delay_level=st.sampled_from([0, -1]))
    def every_running_listener_fails(self, delay_level):
        failed = ListenerResult(ConsumeStatus.RECONSUME_LATER, delay_level_when_next_consume=delay_level)
        for request_id in sorted(self.fast.requests):
            self.apply(CompleteConsume(request_id, failed))

    @rule(ms=st.integers(1, 20_000))
    def clock_ticks(self, ms):
        self.advance(self.fast.now + ms)

    @rule(ms=st.sampled_from(JUMPS))
    def clock_jumps(self, ms):
        self.advance(self.fast.now + ms)

    def advance(self, until: int) -> None:
        # A probe, not the step: how many timers the first idle window of this advance would fire.
        probed = forward(self.fast, until)[2]
        if probed:
            event("SY-01 an idle window was fast-forwarded")
        self.apply(Advance(until))

    @precondition(lambda self: len(self.fast.oneway))
    @rule(data=st.data(), lose=st.booleans())
    def oneway_persist_arrives(self, data, lose):
        self.apply(DeliverOneway(data.draw(st.integers(0, len(self.fast.oneway) - 1)), lose))

    @rule(members=st.sets(st.sampled_from(CLIENTS), min_size=1))
    def group_rebalances(self, members):
        self.apply(SetMembers(tuple(sorted(members))))

    @precondition(lambda self: len(self.fast.consumers) > 1)
    @rule(data=st.data())
    def instance_crashes(self, data):
        self.apply(Crash(data.draw(st.sampled_from(sorted(self.fast.consumers)))))

    @rule(data=st.data(), queue_id=st.integers(0, 1))
    def queue_head_expires(self, data, queue_id):
        """OFFSET_ILLEGAL (PL-08) on the next pull below the new head: a drop the fast-forward must leave alone."""
        high = self.fast.broker.store.get_max_offset_in_queue(TOPIC, queue_id)
        if high:
            self.apply(ExpireQueueHead(MessageQueue(TOPIC, queue_id), data.draw(st.integers(1, high), label="head")))

    @rule(data=st.data(), hold_oneway=st.booleans(), budget=st.sampled_from([None, 40]))
    def drain_to_quiescence(self, data, hold_oneway, budget):
        """Drain (optionally with one-way commits held, and with a small event budget): the same result, the same
        number of events — or the same budget error, and then the history goes on from before the drain."""
        # Failing drains only where the retry budget is small (tight): under 16 retries one spans hours of virtual
        # time, tens of thousands of events through the reference driver.
        rates = (0, 3, 10) if 0 <= self.fast.config.max_reconsume_times <= 2 else (0,)
        failure_rate = data.draw(st.sampled_from(rates), label="failure_rate")
        if not self.fast.members:
            self.apply(SetMembers(("c1",)))
        held = self.fast.hold_oneway
        fast, slow = (run_drain(evolve(s, hold_oneway=hold_oneway), make_listener(failure_rate), budget or 200_000, ff)
                      for s, ff in ((self.fast, True), (self.slow, False)))
        assert fast[1:] == slow[1:]
        if fast[0] is None:
            event("SY-03 drain budget exhausted in both drivers")
            return
        assert_same_system(fast[0], slow[0])
        self.fast, self.slow = (evolve(s, hold_oneway=held) for s in (fast[0], slow[0]))


def run_drain(system: System, listener, max_events: int, fast: bool) -> tuple:
    """(system, observations, events), or (None, None, the error) when the event budget ran out."""
    try:
        return drain(system, listener, max_events, fast_forward=fast)
    except IllegalTransition as error:
        return None, None, str(error)


TestFastForwardEquivalence = FastForwardEquivalence.TestCase


def forward(system: System, until: int) -> tuple[System, list, int]:
    """The first idle window of an advance to `until`, as model.system.advance would open it."""
    return fast_forward(system, until, get_next_schedule_time(system.broker, system.config))


def test_an_idle_jump_is_fast_forwarded():
    """[SY-01] After a drain the group is idle: a 16-minute jump goes through one window of hundreds of timers (the
    pull cycles, persists, rebalances and cleanExpiredMsg runs), and ends as the reference loop ends."""
    config = Config(**MACHINE_THRESHOLDS)
    system = create_system(config, ("c1", "c2"), hold_oneway=True)
    for key in range(6):
        system, _ = step(system, Produce(f"k{key}", key % 2))
    system, _, _ = drain(system)
    until = system.now + 16 * 60_000
    forwarded, seen, fired = forward(system, until)
    # 3 owned queues x (2 pulls per 15 s) + 2 instances x (a persist per 5 s + a rebalance per 20 s), 16 minutes
    assert fired >= 3 * 2 * 64 + 2 * (192 + 48)
    assert forwarded.now > system.now and forwarded.timer_seq == system.timer_seq + fired
    reference, reference_seen = step(system, Advance(until), fast_forward=False)
    fast, fast_seen = step(system, Advance(until))
    assert fast_seen == reference_seen and seen == reference_seen[:len(seen)]
    assert_same_system(fast, reference)


def test_a_broken_fast_forward_is_caught(monkeypatch):
    """[SY-01] The equivalence machine can fail: a fast-forward that forgets to bump a pull's token (so a held pull
    would not make the older one stale) is found within the default budget."""

    def schedule_without_new_token(window, client, mq, at, suspended):
        token = client.tokens.get(mq, 0)
        consumer = client.consumer
        window.schedule(at, model.fast_forward.PullDue(consumer.client_id, consumer.incarnation, mq, token, suspended))

    monkeypatch.setattr(model.fast_forward, "schedule_idle_pull", schedule_without_new_token)
    budget = settings(max_examples=20, stateful_step_count=30, deadline=None, database=None, derandomize=True,
                      phases=[Phase.generate], suppress_health_check=list(HealthCheck))
    with pytest.raises(AssertionError):
        run_state_machine_as_test(FastForwardEquivalence, settings=budget)
