"""The system step function `(system, event) -> (system, observations)` and the discrete-event driver over the
virtual clock: `advance` fires timers in time order, `drain` runs to quiescence (spec/11-guarantees.md)."""

from __future__ import annotations

from collections import Counter
from collections.abc import Callable

from model.broker import PERM_READ, PERM_WRITE, create_broker, get_or_create_topic
from model.cluster import (
    GROUP,
    TOPIC,
    Advance,
    CompleteConsume,
    Crash,
    DeliverOneway,
    DlqArrival,
    ExpireQueueHead,
    Livelock,
    LockRequestsFail,
    OffsetIllegalFix,
    PersistDue,
    Produce,
    Produced,
    PullDue,
    RebalanceDue,
    Resubmit,
    ServiceTimer,
    SetMembers,
    System,
)
from model.config import Config
from model.consume_common import get_current_pq, get_live_consumer
from model.consume_service import get_consume_service
from model.message import create_message, get_retry_topic, is_dlq_topic, java_string_hash
from model.pull import commit_broker_offset, process_pull, wake_parked_pulls
from model.rebalance import crash, process_offset_illegal_fix, process_persist, process_rebalance_due, set_members
from model.records import evolve
from model.schedule import get_next_schedule_time, on_schedule_timer
from model.store import put_record
from model.timers import heap_peek, heap_pop


def create_system(config: Config, members: tuple[str, ...] = ("c1",), *, topic_queue_nums: int = 2,
                  subscription: frozenset | None = None, hold_oneway: bool = False) -> System:
    """[SY-01] A broker with the topic and the group's %RETRY% topic (created at the consumer's first heartbeat,
    with retryQueueNums queues), and the group's instances started and balanced at time 0."""
    broker = create_broker(config, GROUP, {TOPIC: topic_queue_nums})
    if config.is_clustering and config.retry_queue_nums > 0:
        broker, _ = get_or_create_topic(broker, get_retry_topic(GROUP), config.retry_queue_nums,
                                        PERM_READ | PERM_WRITE)
    codes = frozenset(java_string_hash(tag) for tag in subscription) if subscription is not None else frozenset()
    system = System(config=config, broker=broker, topic_queue_nums=topic_queue_nums, subscription=subscription,
                    subscription_codes=codes, hold_oneway=hold_oneway)
    system, _ = set_members(system, members)
    return system


def on_produce(system: System, event: Produce) -> tuple[System, list]:
    message = create_message(TOPIC, event.uniq_key, body=event.uniq_key.encode(), tags=event.tags,
                             queue_id=event.queue_id, delay_level=event.delay_level, born_timestamp=system.now)
    store, record, _properties = put_record(system.broker.store, message, system.now, system.config.delay_levels)
    return evolve(system, broker=evolve(system.broker, store=store)), [Produced(record, system.now, ("SY-01",))]


def on_complete(system: System, event: CompleteConsume) -> tuple[System, list]:
    return get_consume_service(system.config).complete(system, event)


def on_deliver_oneway(system: System, event: DeliverOneway) -> tuple[System, list]:
    """[SY-02] A held one-way offset commit arrives (in any order relative to later ones) or is lost."""
    if not 0 <= event.index < len(system.oneway):
        return system, []
    commit = system.oneway[event.index]
    system = evolve(system, oneway=system.oneway.delete(event.index))
    if event.lose:
        return system, []
    return commit_broker_offset(system, commit.queue, commit.offset, "persist", ("SY-02",), commit.lifetime)


def on_expire_queue_head(system: System, event: ExpireQueueHead) -> tuple[System, list]:
    low = max(system.min_offsets.get(event.queue, 0), event.min_offset)
    return evolve(system, min_offsets=system.min_offsets.set(event.queue, low)), []


def on_lock_requests_fail(system: System, event: LockRequestsFail) -> tuple[System, list]:
    """[LK-07] The instance's lock requests start or stop failing."""
    faults = system.lock_faults | {event.client_id} if event.failing else system.lock_faults - {event.client_id}
    return evolve(system, lock_faults=frozenset(faults)), []


def process_resubmit(system: System, item: Resubmit) -> tuple[System, list]:
    """[CC-07] The 5 s later resubmission; a request of a dropped ProcessQueue returns without consuming."""
    system = evolve(system, pending_resubmits=system.pending_resubmits - 1)
    consumer = get_live_consumer(system, item.client_id, item.incarnation)
    if consumer is None or get_current_pq(consumer, item.queue, item.generation) is None:
        return system, []
    return get_consume_service(system.config).submit(system, item.client_id, item.queue, item.messages, True)


def process_service_timer(system: System, item: ServiceTimer) -> tuple[System, list]:
    return get_consume_service(system.config).on_timer(system, item)


TIMER_HANDLERS: dict[type, Callable] = {
    PullDue: process_pull,
    Resubmit: process_resubmit,
    PersistDue: process_persist,
    RebalanceDue: process_rebalance_due,
    ServiceTimer: process_service_timer,
    OffsetIllegalFix: process_offset_illegal_fix,
}


# [SY-12] A legitimate instant fires at most about one pull per 32 cached messages up to pullThresholdForQueue on
# each queue, plus a few timers per instance: hundreds. Twenty thousand at one instant is a cycle of zero-delay
# transitions (PL-10), and the step stops it instead of looping.
MAX_TRANSITIONS_PER_INSTANT = 2_000


def get_next_time(system: System) -> int | None:
    """[SY-01] The earliest time any timed component (client timers, the broker's delay timer) fires."""
    return compute_next_time(system, get_next_schedule_time(system.broker, system.config))


def compute_next_time(system: System, schedule_time: int | None) -> int | None:
    """The earliest of the first client timer and the delay timer's next time `schedule_time`."""
    if system.timers is None:
        return schedule_time
    at = heap_peek(system.timers)[0][0]
    return at if schedule_time is None or at < schedule_time else schedule_time


def process_next(system: System) -> tuple[System, list]:
    """Fire the earliest timer (the broker's delay timer first on a tie) at its time."""
    return fire_next(system, get_next_schedule_time(system.broker, system.config))


def fire_next(system: System, schedule_time: int | None) -> tuple[System, list]:
    """process_next, given the delay timer's next time."""
    peeked = heap_peek(system.timers)
    if schedule_time is not None and (peeked is None or schedule_time <= peeked[0][0]):
        system = evolve(system, now=max(system.now, schedule_time))
        broker, deliveries = on_schedule_timer(system.broker, system.config, system.now)
        arrivals = [DlqArrival(d.delivered, system.now, ("SY-05",))
                    for d in deliveries if is_dlq_topic(d.topic)]
        return evolve(system, broker=broker), arrivals
    (at, _seq), item, timers = heap_pop(system.timers)
    system = evolve(system, timers=timers, now=max(system.now, at))
    return TIMER_HANDLERS[type(item)](system, item)


class InstantBudget:
    """[SY-12] The timers fired at the current virtual instant of one step, by kind; a driver's loop counts every
    fired timer here and stops once `is_spent`."""

    def __init__(self) -> None:
        self.time, self.fired, self.kinds = None, 0, Counter()

    def count(self, system: System, kind: str) -> None:
        """One transition of the driver's loop: a timer of kind `kind` fired."""
        if system.now != self.time:
            self.time, self.fired, self.kinds = system.now, 0, Counter()
        self.fired += 1
        self.kinds[kind] += 1

    def is_spent(self) -> bool:
        return self.fired > MAX_TRANSITIONS_PER_INSTANT

    def get_livelock(self) -> Livelock:
        return Livelock(self.time, self.fired, tuple(sorted(self.kinds.items())))


def get_next_kind(system: System, schedule_time: int | None) -> str:
    """The kind of the timer `fire_next` fires next: the broker's delay timer or a client timer item's class."""
    peeked = heap_peek(system.timers)
    if schedule_time is not None and (peeked is None or schedule_time <= peeked[0][0]):
        return "DelayTimer"
    return type(peeked[1]).__name__


def advance(system: System, until: int) -> tuple[System, list]:
    """[SY-01] Fire every timer due at or before `until`, in time order, then set the clock to `until`;
    [SY-12] unless more than MAX_TRANSITIONS_PER_INSTANT fire at one instant: then the clock stays there and the
    step ends with a Livelock observation."""
    observations, woken_store, budget = [], None, InstantBudget()
    while True:
        # Derived once per timer: the delay timer's next time costs more than the rest of the loop's checks.
        schedule_time = get_next_schedule_time(system.broker, system.config)
        at = compute_next_time(system, schedule_time)
        if at is None or at > until:
            break
        kind = get_next_kind(system, schedule_time)
        system, seen = fire_next(system, schedule_time)
        budget.count(system, kind)
        system = wake_parked_pulls(system, woken_store)
        woken_store = system.broker.store
        observations.extend(seen)
        if budget.is_spent():
            return system, observations + [budget.get_livelock()]
    return evolve(system, now=max(system.now, until)), observations


EVENT_HANDLERS: dict[type, Callable] = {
    Produce: on_produce,
    CompleteConsume: on_complete,
    DeliverOneway: on_deliver_oneway,
    SetMembers: lambda system, event: set_members(system, event.client_ids),
    Crash: lambda system, event: crash(system, event.client_id),
    ExpireQueueHead: on_expire_queue_head,
    LockRequestsFail: on_lock_requests_fail,
}


def step(system: System, event) -> tuple[System, list]:
    """[SY-01] The one transition of the whole system: an event in, the next state and what a user sees out."""
    if isinstance(event, Advance):
        return advance(system, event.until)
    store = system.broker.store
    system, observations = EVENT_HANDLERS[type(event)](system, event)
    # Every state a step returns has woken what it could; an event that put nothing has nothing new to wake for.
    return wake_parked_pulls(system, store), observations
