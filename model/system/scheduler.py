"""The discrete-event driver over the virtual clock (spec/11-guarantees.md): the timers of the clients and the
broker's delay timer fire one at a time in time order, each handed to the step that owns it, within SY-12's bound
of transitions per instant."""

from __future__ import annotations

from collections import Counter
from collections.abc import Callable

from model.broker.delay_timer import get_next_schedule_time, on_schedule_timer
from model.client.consume_common import get_current_pq, get_live_consumer
from model.client.consume_mode import get_consume_service
from model.client.observations import DlqArrival
from model.client.pop_consumer import PopDue, process_pop_due
from model.client.pull import process_pull
from model.client.rebalance import process_offset_illegal_fix, process_persist, process_rebalance_due
from model.client.timer_items import OffsetIllegalFix, PersistDue, PullDue, RebalanceDue, Resubmit, ServiceTimer
from model.system.observations import Livelock
from model.system.pop_route import PopPersistDue, ReviveDue, process_pop_persist, process_revive_due
from model.system.route import wake_pulls
from model.system.state import System
from model.values.message import is_dlq_topic
from model.values.records import evolve
from model.values.timer_heap import heap_peek, heap_pop


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
    PopDue: process_pop_due,
    ReviveDue: process_revive_due,
    PopPersistDue: process_pop_persist,
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
    system, seen, _kind = fire_next(system, get_next_schedule_time(system.broker, system.config))
    return system, seen


def fire_next(system: System, schedule_time: int | None) -> tuple[System, list, str]:
    """[SY-01] Fire the earliest timer at its due time, the broker's delay timer first on a tie; `schedule_time` is
    the delay timer's next time. Returns (system, observations, the kind fired: "DelayTimer" or the timer item's
    class name, which the SY-12 budget counts)."""
    peeked = heap_peek(system.timers)
    if schedule_time is not None and (peeked is None or schedule_time <= peeked[0][0]):
        system = evolve(system, now=max(system.now, schedule_time))
        broker, deliveries = on_schedule_timer(system.broker, system.config, system.now)
        arrivals = [DlqArrival(d.delivered, system.now, ("SY-05",))
                    for d in deliveries if is_dlq_topic(d.topic)]
        return evolve(system, broker=broker), arrivals, "DelayTimer"
    (at, _seq), item, timers = heap_pop(system.timers)
    system, seen = TIMER_HANDLERS[type(item)](evolve(system, timers=timers, now=max(system.now, at)), item)
    return system, seen, type(item).__name__


class InstantBudget:
    """[SY-12] The timers fired at the current virtual instant of one step, by kind; a driver's loop counts every
    fired timer here and stops once `is_spent`."""

    def __init__(self) -> None:
        self.time, self.fired, self.kinds = None, 0, Counter()

    def count(self, system: System, kind: str) -> None:
        """One fired timer of kind `kind`, at the system's current instant."""
        if system.now != self.time:
            self.time, self.fired, self.kinds = system.now, 0, Counter()
        self.fired += 1
        self.kinds[kind] += 1

    def is_spent(self) -> bool:
        return self.fired > MAX_TRANSITIONS_PER_INSTANT

    def get_livelock(self) -> Livelock:
        return Livelock(self.time, self.fired, tuple(sorted(self.kinds.items())))


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
        system, seen, kind = fire_next(system, schedule_time)
        budget.count(system, kind)
        system = wake_pulls(system, woken_store)
        woken_store = system.broker.store
        observations.extend(seen)
        if budget.is_spent():
            return system, observations + [budget.get_livelock()]
    return evolve(system, now=max(system.now, until)), observations
