"""Properties of spec/04-delay-timer.md: the DelayTimer machine and example-based checks of the timer's rules.

Expected times come from the reference (§5.1-§5.4): level delays in seconds, FIRST_DELAY_TIME 1000 ms, re-checks
every 100 ms (4.9.3+) or after `countdown` (<= 4.9.2), offset flush every 10 s after 10 s.
"""

from __future__ import annotations

import pytest
from attrs import frozen
from hypothesis import event, given
from hypothesis import strategies as st
from hypothesis.stateful import RuleBasedStateMachine, invariant, precondition, rule

from model.broker.delay_timer import (
    compute_corrected_delay_offset,
    compute_due_cache,
    get_level_offset,
    get_next_schedule_time,
    on_broker_restart,
    on_schedule_timer,
    process_schedule_until,
)
from model.broker.state import Broker
from model.broker.store import put_message
from model.values.config import Config
from model.values.errors import IllegalTransition
from model.values.message import create_message, java_string_hash
from model.values.records import evolve
from properties.coverage import record_rules
from properties.test_store import REFERENCE_DELAY_SECONDS

MAX_LEVEL = 18
FIRST_RUN = 1000
FLUSH_EVERY = 10_000
TOPIC = "Orders"


def get_delay(level: int) -> int:
    return REFERENCE_DELAY_SECONDS[level - 1] * 1000


def get_lateness(config: Config) -> int:
    """How long after its due time a run may deliver: the 100 ms re-check grid, or exactly on time (<= 4.9.2)."""
    return 99 if config.profile.name != "4.9.1" else 0


def send(broker: Broker, config: Config, key: str, level: int, now: int, **put) -> Broker:
    message = create_message(TOPIC, key, body=key.encode(), queue_id=1, delay_level=level)
    store, _ = put_message(broker.store, message, now, config.delay_levels, **put)
    return evolve(broker, store=store)


def get_delivery_times(deliveries) -> list[tuple[str, int]]:
    return [(d.delivered.uniq_key, d.time) for d in deliveries]


PROFILES = pytest.mark.parametrize("profile", ["4.9.1", "4.9.8", "5.3.3"])


@given(profile=st.sampled_from(["4.9.1", "4.9.8", "5.3.3"]), restart_at=st.integers(2_000, 10**6),
       lead=st.integers(0, 1_000))
def test_first_run_is_one_second_after_start(profile, restart_at, lead):
    """DT-01: a level-1 message stored at 0 (due at 1000), and one due at or before a restart's first run, each
    go out at that first run, 1 s after the (re)start."""
    event("DT-01")
    config = Config(profile=profile)
    broker, delivered = process_schedule_until(send(Broker(), config, "a", 1, 0), config, 10**6)
    assert get_delivery_times(delivered) == [("a", FIRST_RUN)]
    broker = on_broker_restart(broker, config, restart_at, graceful=True)
    broker, delivered = process_schedule_until(send(broker, config, "b", 1, restart_at - lead), config, 10**7)
    assert get_delivery_times(delivered) == [("b", restart_at + FIRST_RUN)]


@PROFILES
def test_level_three_is_visible_after_ten_seconds(profile):
    """DT-02: ScheduleMessageServiceTest.deliverDelayedMessageTimerTaskTest, with the default levels."""
    config = Config(profile=profile)
    broker = send(Broker(), config, "k", 3, 0)
    broker, delivered = process_schedule_until(broker, config, 9_999)
    assert delivered == () and broker.store.get_max_offset_in_queue(TOPIC, 1) == 0
    broker, delivered = process_schedule_until(broker, config, 10_000)
    assert get_delivery_times(delivered) == [("k", 10_000)]
    assert broker.store.get_message(TOPIC, 1, 0).body == b"k"


@given(st.integers(0, 200_000), st.integers(1, MAX_LEVEL), st.sampled_from(["4.9.1", "4.9.8"]))
def test_cadence_per_profile(stored_at, level, profile):
    """DT-02: delivered on the first 100 ms re-check at or after the deliver time (4.9.8), exactly at it (4.9.1)."""
    config = Config(profile=profile)
    event(f"DT-02 {profile}")
    broker, delivered = process_schedule_until(send(Broker(), config, "k", level, stored_at), config, 10**8)
    due = stored_at + get_delay(level)
    if profile == "4.9.1":
        expected = max(due, FIRST_RUN)
    else:  # the level's runs are at 1000 + 100 k while it waits
        expected = max(FIRST_RUN, FIRST_RUN + -(-(due - FIRST_RUN) // 100) * 100)
    assert get_delivery_times(delivered) == [("k", expected)]


@pytest.mark.parametrize("profile, expected", [("4.9.1", [5_000, 5_050]), ("4.9.8", [5_000, 5_100])])
def test_head_not_due_after_a_delivery(profile, expected):
    """DT-02: the run that delivers at 5000 finds the next unit (due 5050) not due and re-schedules the level."""
    config = Config(profile=profile)
    broker = send(send(Broker(), config, "a", 2, 0), config, "b", 2, 50)
    _broker, delivered = process_schedule_until(broker, config, 10**6)
    assert [time for _key, time in get_delivery_times(delivered)] == expected


def test_idle_level_costs_nothing():
    """DT-04: a broker with nothing scheduled has no event; a week of virtual time is one call and no events."""
    config = Config()
    assert get_next_schedule_time(Broker(), config) is None
    broker, delivered = process_schedule_until(Broker(), config, 7 * 86_400_000)
    assert delivered == () and broker == Broker()


def test_batch_is_delivered_in_one_run():
    """DT-04: three due units of a level (held back by a restart) go out in one run, in queue order."""
    config = Config()
    broker = Broker()
    for index, at in enumerate([0, 10, 20]):
        broker = send(broker, config, f"m{index}", 2, at)
    broker = on_broker_restart(broker, config, 30_000, graceful=True)
    broker, delivered = on_schedule_timer(broker, config, 31_000)
    assert get_delivery_times(delivered) == [("m0", 31_000), ("m1", 31_000), ("m2", 31_000)]
    assert get_level_offset(broker.schedule, 2) == 3


@pytest.mark.parametrize("lead, expected", [(60_000, FIRST_RUN), (500, 10_500), (0, 10_000)])
def test_clock_set_back_delivers_at_once(lead, expected):
    """DT-07: deliver time 10 s + lead after a put at 0; more than 10 s away at a run means deliver now."""
    config = Config(profile="4.9.1")
    broker, delivered = process_schedule_until(send(Broker(), config, "k", 3, 0, clock_lead=lead), config, 10**6)
    assert get_delivery_times(delivered) == [("k", expected)]
    assert ("DT-07" in delivered[0].rules) == (expected < 10_000 + lead)


def test_offsets_flush_on_the_ten_second_grid():
    """DT-08: delivered at 25 000 and 26 000, persisted by the flush at 30 000 (10 s, then every 10 s)."""
    config = Config()
    broker = send(send(Broker(), config, "a", 2, 20_000), config, "b", 2, 21_000)
    broker, _ = process_schedule_until(broker, config, 29_999)
    assert dict(broker.schedule.persisted_offsets) == {} and get_level_offset(broker.schedule, 2) == 2
    broker, _ = process_schedule_until(broker, config, 30_000)
    assert dict(broker.schedule.persisted_offsets) == {2: 2} and broker.schedule.last_flush == 30_000


def test_flushes_start_ten_seconds_after_start_whatever_the_interval():
    """DT-08: flushDelayOffsetInterval 7 000: the flush task's first run is 10 000 after the start and then every
    7 000 (scheduleAtFixedRate(..., 10000, interval)), so a delivery at 25 000 is persisted at 31 000."""
    config = Config(flush_delay_offset_interval=7_000)
    broker, _ = process_schedule_until(send(Broker(), config, "a", 2, 20_000), config, 30_999)
    assert dict(broker.schedule.persisted_offsets) == {}
    broker, _ = process_schedule_until(broker, config, 31_000)
    assert dict(broker.schedule.persisted_offsets) == {2: 1} and broker.schedule.last_flush == 31_000


def test_crash_between_flushes_delivers_twice():
    """DT-09: persisted at 10 000 (offset 1); "b" delivered at 12 000; a crash at 15 000 re-delivers "b" only."""
    config = Config()
    broker = send(send(Broker(), config, "a", 1, 0), config, "b", 1, 11_000)
    broker, first = process_schedule_until(broker, config, 15_000)
    assert get_delivery_times(first) == [("a", 1_000), ("b", 12_000)]
    broker = on_broker_restart(broker, config, 15_000)
    assert get_level_offset(broker.schedule, 1) == 1
    broker, second = process_schedule_until(broker, config, 10**6)
    assert get_delivery_times(second) == [("b", 16_000)] and "DT-09" in second[0].rules


def test_crash_resumes_a_level_that_had_not_delivered_at_zero():
    """DT-09 / DT-08: the flush at 10 000 writes level 1's offset only (a level enters the offset table when it
    delivers: level 4's message is due at 30 000); a crash at 15 000 resumes level 4 at 0, so its message is still
    delivered, once, when due, and level 1 is not delivered again; the restarted broker's flushes keep the grid of
    its own start (first at 25 000)."""
    config = Config()
    broker = send(send(Broker(), config, "a", 1, 0), config, "d", 4, 0)
    broker, first = process_schedule_until(broker, config, 15_000)
    assert get_delivery_times(first) == [("a", 1_000)]
    assert dict(broker.schedule.persisted_offsets) == {1: 1}
    broker = on_broker_restart(broker, config, 15_000)
    assert (get_level_offset(broker.schedule, 1), get_level_offset(broker.schedule, 4)) == (1, 0)
    broker, second = process_schedule_until(broker, config, 10**6)
    assert get_delivery_times(second) == [("d", 30_000)]
    assert broker.schedule.last_flush == 35_000  # the first flush after the delivery at 30 000


def test_crash_before_the_first_flush_delivers_again_a_second_after_the_restart():
    """DT-09 / DT-01: "a" delivered at 1 000, a crash at 5 000 before any flush: nothing was persisted, so level 1
    resumes at 0 and delivers "a" again at the restarted level's first run, 1 000 after the restart."""
    config = Config()
    broker, first = process_schedule_until(send(Broker(), config, "a", 1, 0), config, 5_000)
    assert get_delivery_times(first) == [("a", 1_000)] and dict(broker.schedule.persisted_offsets) == {}
    broker = on_broker_restart(broker, config, 5_000)
    broker, second = process_schedule_until(broker, config, 10**6)
    assert get_delivery_times(second) == [("a", 6_000)] and "DT-09" in second[0].rules


def test_a_timer_past_a_due_level_is_an_illegal_transition():
    """DT-04: the schedule is processed in time order; a timer at 3 000 when level 1 was due at 1 000 names the
    state (the levels due) and the event."""
    config = Config()
    broker = send(Broker(), config, "a", 1, 0)
    with pytest.raises(IllegalTransition) as raised:
        on_schedule_timer(broker, config, 3_000)
    assert raised.value.state.startswith("levels [1] due") and raised.value.event == "schedule timer at 3000"


def test_graceful_restart_delivers_once():
    """DT-09 / DT-08: shutdown() persists, so nothing is delivered again."""
    config = Config()
    broker, first = process_schedule_until(send(Broker(), config, "a", 1, 0), config, 5_000)
    broker = on_broker_restart(broker, config, 5_000, graceful=True)
    broker, second = process_schedule_until(broker, config, 10**6)
    assert len(first) == 1 and second == ()


@given(st.integers(-100, 100), st.integers(0, 50), st.integers(0, 50))
def test_correct_delay_offset_clamps(offset, low, span):
    """DT-09: correctDelayOffset moves an offset below cqMin to cqMin and above cqMax to cqMax."""
    event("DT-09")
    high = low + span
    corrected = compute_corrected_delay_offset(offset, low, high)
    assert low <= corrected <= high
    assert corrected == offset or (offset < low and corrected == low) or (offset > high and corrected == high)


@frozen
class Scheduled:
    """What the machine sent: its oracle record, built without the model."""

    key: str
    level: int  # clamped (ST-04)
    queue_offset: int
    stored_at: int
    deliver_at: int  # store time (+ clock lead) + the reference delay
    body: bytes
    tags: str | None
    properties: dict
    reconsume_times: int


@frozen
class Observed:
    """One delivery with the oracle's context just before it."""

    record: Scheduled
    time: int
    expected_offset: int
    previous_delivery: int
    started_at: int
    delivery: object
    # Delivered before, then lost to a crash: the offset is below the highest one the level ever reached.
    again: bool


class DelayTimer(RuleBasedStateMachine):
    """[DT-03] The delay-level timer of one broker against an oracle that knows only the reference's rules."""

    profile = "4.9.8"

    def __init__(self):
        super().__init__()
        self.config = Config(profile=self.profile)
        self.broker = Broker()
        self.now = 0
        self.started_at = 0
        self.queues: dict[int, list[Scheduled]] = {}  # level -> records in queue order
        self.offsets: dict[int, int] = {}  # oracle in-memory offsets
        self.persisted: dict[int, int] = {}  # oracle delayOffset.json
        self.last_delivery: dict[int, int] = {}
        self.observed: list[Observed] = []
        self.seen_offsets: dict[int, int] = {}
        self.reached: dict[int, int] = {}  # oracle: the highest offset + 1 each level ever delivered, crashes or not

    def put(self, level: int, reconsume_times: int, body: bytes, lead: int, tags: str | None = None) -> None:
        key = f"m{sum(len(q) for q in self.queues.values())}"
        message = create_message(f"%RETRY%{TOPIC}", key, body=body, tags=tags, queue_id=0, delay_level=level)
        message = evolve(message.put_property("ORIGIN_MESSAGE_ID", f"origin-{key}"), reconsume_times=reconsume_times)
        store, _ = put_message(self.broker.store, message, self.now, self.config.delay_levels, clock_lead=lead)
        self.broker = evolve(self.broker, store=store)
        clamped = min(level, MAX_LEVEL)
        queue = self.queues.setdefault(clamped, [])
        properties = dict(message.properties) | {"DELAY": str(clamped), "REAL_TOPIC": message.topic, "REAL_QID": "0"}
        queue.append(Scheduled(key, clamped, len(queue), self.now, self.now + lead + get_delay(clamped), body,
                               tags, properties, reconsume_times))
        event("ST-04" if level > MAX_LEVEL else "ST-01")

    @rule(level=st.integers(1, 25), reconsume_times=st.integers(0, 16), body=st.binary(max_size=6),
          tags=st.none() | st.sampled_from(["TagA", "TagB"]))
    def schedule_message(self, level, reconsume_times, body, tags):
        self.put(level, reconsume_times, body, 0, tags)

    @rule(level=st.integers(1, 6), lead=st.integers(1, 600_000))
    def schedule_message_before_clock_set_back(self, level, lead):
        self.put(level, 0, b"", lead)

    def advance_to(self, until: int) -> None:
        self.broker, deliveries = process_schedule_until(self.broker, self.config, until)
        self.observed, since = [], self.now
        for delivery in deliveries:
            level = delivery.level
            record = self.queues[level][delivery.schedule_offset]
            self.observed.append(Observed(record, delivery.time, self.offsets.get(level, 0),
                                          self.last_delivery.get(level, -1), self.started_at, delivery,
                                          delivery.schedule_offset < self.reached.get(level, 0)))
            self.reached[level] = max(self.reached.get(level, 0), delivery.schedule_offset + 1)
            self.record_flushes(delivery.time - 1, since)
            since = delivery.time
            self.offsets[level] = delivery.schedule_offset + 1
            self.last_delivery[level] = delivery.time
            record_rules(delivery.rules)
        self.record_flushes(until, since)
        self.now = until

    def record_flushes(self, through: int, since: int) -> None:
        """The oracle's delayOffset.json: a flush at start + 10 s + k * 10 s in [since, through] (no delivery in
        between) writes the current offsets; a flush writes the offsets at the end of its ms."""
        first = self.started_at + FLUSH_EVERY
        if through >= first and first + (through - first) // FLUSH_EVERY * FLUSH_EVERY >= since:
            self.persisted.update(self.offsets)

    @rule(step=st.one_of(st.integers(1, 300), st.integers(1_000, 8_000_000)))
    def advance_clock(self, step):
        self.advance_to(self.now + step)

    @rule()
    def flush_offsets(self):
        first = self.started_at + FLUSH_EVERY
        grid = first if self.now < first else first + ((self.now - first) // FLUSH_EVERY + 1) * FLUSH_EVERY
        self.advance_to(grid)
        event("DT-08")

    @rule(graceful=st.booleans())
    def restart_broker(self, graceful):
        if graceful:
            self.persisted.update(self.offsets)
        self.broker = on_broker_restart(self.broker, self.config, self.now, graceful=graceful)
        self.started_at = self.now
        self.offsets = dict(self.persisted)
        self.seen_offsets = {}
        event("DT-09")

    @invariant()
    def nothing_is_lost(self):
        """DT-04: the first message not yet delivered (again) in each level is not overdue."""
        for level, queue in self.queues.items():
            offset = self.offsets.get(level, 0)
            if offset < len(queue):
                bound = max(queue[offset].deliver_at, self.last_delivery.get(level, -1), self.started_at + FIRST_RUN)
                assert self.now <= bound + get_lateness(self.config), f"level {level} offset {offset} is overdue"
                event("DT-04")

    @invariant()
    def level_offsets_never_decrease(self):
        """DT-04 / DT-09: the model's level offsets only grow, except at a restart, where they are the oracle's."""
        for level in self.queues:
            offset = get_level_offset(self.broker.schedule, level)
            assert offset >= self.seen_offsets.get(level, 0)
            assert offset == self.offsets.get(level, 0)
            self.seen_offsets[level] = offset

    @invariant()
    def persisted_offsets_match(self):
        """DT-08: delayOffset.json holds the offsets of the last flush."""
        persisted = self.broker.schedule.persisted_offsets
        assert {level: persisted.get(level, 0) for level in self.queues} == {
            level: self.persisted.get(level, 0) for level in self.queues}

    @invariant()
    def fifo_within_a_level(self):
        """DT-03: each delivery is the next offset of its level (re-deliveries only after a crash, DT-09)."""
        for seen in self.observed:
            assert seen.delivery.schedule_offset == seen.expected_offset
        if len(self.observed) > 1:
            event("DT-03")

    @invariant()
    def cached_due_times_are_derived_afresh(self):
        """[DT-04] The due-time cache the timer keeps between events is only an optimisation: its due times and their
        earliest are those derived from the same state with no cache."""
        cached = compute_due_cache(self.broker, self.config)
        fresh = compute_due_cache(evolve(self.broker, schedule=evolve(self.broker.schedule, due_cache=None)),
                                  self.config)
        assert (tuple(cached.dues), cached.earliest) == (tuple(fresh.dues), fresh.earliest)

    @invariant()
    def never_delivered_before_due(self):
        """DT-02 / DT-07: not before the deliver time, unless that was further away than the level's delay; a
        delivery cites DT-02, DT-05 and DT-06, DT-07 exactly when it went before its deliver time, and DT-09 exactly
        when it delivers again what a crash lost."""
        for seen in self.observed:
            record = seen.record
            assert seen.time >= record.stored_at
            if seen.time < record.deliver_at:
                assert record.deliver_at > seen.time + get_delay(record.level)
            rules = seen.delivery.rules
            assert rules[:3] == ("DT-02", "DT-05", "DT-06")
            assert ("DT-07" in rules) == (seen.time < record.deliver_at)
            assert ("DT-09" in rules) == seen.again

    @invariant()
    def delivered_within_cadence(self):
        """DT-02: at most the profile's lateness after it was due, its predecessor went, and the level first ran."""
        for seen in self.observed:
            bound = max(seen.record.deliver_at, seen.previous_delivery, seen.started_at + FIRST_RUN)
            assert seen.time <= bound + get_lateness(self.config)

    @invariant()
    def properties_are_preserved(self):
        """DT-05 / ST-01: real topic and queue, body, tags, properties, ORIGIN_MESSAGE_ID and reconsume times kept;
        the delivered copy's consume-queue unit carries the tags' hash (not a deliver time) and the delivery's time;
        the delivery names the parked copy it moved."""
        for seen in self.observed:
            delivered, record = seen.delivery.delivered, seen.record
            assert (delivered.topic, delivered.queue_id) == (f"%RETRY%{TOPIC}", 0)
            assert delivered.body == record.body and delivered.reconsume_times == record.reconsume_times
            assert delivered.tags == record.tags
            unit = self.broker.store.get_queue_units(delivered.topic, 0)[delivered.queue_offset]
            assert (unit.tags_code, unit.stored_at) == (java_string_hash(record.tags), seen.time)
            scheduled = seen.delivery.scheduled
            assert (scheduled.topic, scheduled.queue_offset) == ("SCHEDULE_TOPIC_XXXX", record.queue_offset)
            assert dict(delivered.properties) == record.properties
            assert delivered.origin_message_id == f"origin-{record.key}"
            assert delivered.store_timestamp == seen.time

    @invariant()
    def stale_delay_is_present(self):
        """DT-06: DELAY shows the clamped level, and the delivered copy was not parked again."""
        for seen in self.observed:
            assert seen.delivery.delivered.get_property("DELAY") == str(seen.record.level)
        for level, queue in self.queues.items():
            assert self.broker.store.get_max_offset_in_queue("SCHEDULE_TOPIC_XXXX", level - 1) == len(queue)

    @precondition(lambda self: self.queues)
    @rule()
    def drain(self):
        """Advance past every deliver time: afterwards every message has been delivered (nothing lost)."""
        latest = max(r.deliver_at for queue in self.queues.values() for r in queue)
        self.advance_to(max(self.now, latest, self.started_at + FIRST_RUN) + 100)
        for level, queue in self.queues.items():
            assert self.offsets.get(level, 0) == len(queue)


class DelayTimer491(DelayTimer):
    profile = "4.9.1"


class DelayTimer533(DelayTimer):
    profile = "5.3.3"


TestDelayTimer = DelayTimer.TestCase
TestDelayTimer491 = DelayTimer491.TestCase
TestDelayTimer533 = DelayTimer533.TestCase
