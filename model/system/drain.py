"""Running the system to quiescence with a listener policy, and the application-level retry cap of seed 000
(spec/11-guarantees.md).

At quiescence the guarantees of chapter 11 are checked by properties/: the client's offsets only grew [SY-04],
retries stayed within budget and timing [SY-05] [SY-06], broadcasting never retried [SY-08], retries keep
their identity [SY-09], every message is accounted for [SY-10], and duplicates after a crash are exactly the
finished messages at or above the persisted offset [SY-11].
"""

from __future__ import annotations

from collections.abc import Callable

from model.broker.consumer_offsets import query_offset
from model.broker.delay_timer import get_next_schedule_time, has_due_levels
from model.client.consumer import ConsumeRequest
from model.client.listener import ConsumeStatus, ListenerResult
from model.client.offset_store import get_offset
from model.client.pop_consumer import PopConsumeRequest
from model.client.rebalance import get_subscribed_queues
from model.system.events import Advance, CompleteConsume, CompletePop, DeliverOneway
from model.system.pop_route import is_pop_quiescent
from model.system.route import wake_pulls
from model.system.scheduler import InstantBudget, compute_next_time, fire_next
from model.system.state import System
from model.system.step import step
from model.values.errors import IllegalTransition
from model.values.names import GROUP
from model.values.records import evolve

Listener = Callable[[ConsumeRequest], CompleteConsume]
PopListener = Callable[[PopConsumeRequest], CompletePop]


def succeed(request: ConsumeRequest) -> CompleteConsume:
    return CompleteConsume(request.request_id)


def succeed_pop(request: PopConsumeRequest) -> CompletePop:
    return CompletePop(request.request_id)


def get_pop_completion(system: System, pop_listener: PopListener):
    """The event that ends the first running POP listener: its result, or — in the millisecond of its pop — the
    clock moving 1 ms first (a listener takes at least 1 ms, so no change meets its pop's checkpoint, PO-11)."""
    request = system.pop_requests[min(system.pop_requests)]
    return Advance(system.now + 1) if request.started_at >= system.now else pop_listener(request)


def compute_capped_result(request: ConsumeRequest, retry_times: int) -> ListenerResult:
    """[SY-07] Seed 000's policy: a failing listener that sees getDelayTimeLevel() >= 2 + retryTimes asks for
    delayLevelWhenNextConsume = -1 (DLQ now). It works through the stale DELAY property of a retry."""
    head = request.messages[0]
    level = -1 if head.delay_time_level >= 2 + retry_times else 0
    return ListenerResult(ConsumeStatus.RECONSUME_LATER, delay_level_when_next_consume=level)


def is_quiescent(system: System) -> bool:
    """[SY-03] Nothing in flight: no listener running, no resubmission or one-way commit pending, no delayed
    message not yet due, every queue owned (a crashed instance's queues taken over) and pulled to its end
    with nothing cached, and in CLUSTERING every
    queue's in-memory offset persisted on the broker."""
    if system.requests or system.pending_resubmits or len(system.oneway):
        return False
    if system.pop_config is not None and not is_pop_quiescent(system):
        return False
    if has_due_levels(system.broker, system.config):
        return False
    if system.pop_config is not None and not system.members:  # POP consumers only
        return True
    owned = [mq for consumer in system.consumers.values() for mq in consumer.process_queues]
    expected = get_subscribed_queues(system)
    if set(owned) != set(expected) or (system.config.is_clustering and len(owned) != len(expected)):
        return False
    store = system.broker.store
    for consumer in system.consumers.values():
        for mq, pq in consumer.process_queues.items():
            high = store.get_max_offset_in_queue(mq.topic, mq.queue_id)
            if pq.msg_count or consumer.next_offsets[mq] != high:
                return False
            offset = get_offset(consumer.offset_store, mq)
            if offset != high and high > 0:
                return False
            if system.config.is_clustering and query_offset(system.broker, GROUP, mq.topic, mq.queue_id) != offset:
                return False
    return bool(system.consumers)


def get_first_request(requests, hint: int) -> ConsumeRequest:
    """The running request with the smallest id, `hint` being the smallest id the last call returned.

    Request ids only grow (System.next_request_id), so the smallest id never decreases: while the hint or the id
    after it is still running it is the smallest, and only otherwise are all of them compared.
    """
    request = requests.get(hint)
    if request is None:
        request = requests.get(hint + 1)
    return requests[min(requests)] if request is None else request


def drain(system: System, listener: Listener = succeed, max_events: int = 10_000_000, *,
          observe: Callable[[list], object] | None = None,
          pop_listener: PopListener = succeed_pop) -> tuple[System, list, int]:
    """[SY-03] Complete running listeners with `listener` (a POP consumer's with `pop_listener`, PG-01), deliver
    held one-way commits, fire timers in time order, until quiescent — [SY-12] or until more than
    MAX_TRANSITIONS_PER_INSTANT timers fired at one instant, which ends the drain with a Livelock observation.
    Returns (system, observations, events processed: each timer counts).

    `observe`, if given, receives each event's observations as they happen, and the returned list stays empty:
    a long run's list would hold every observation to the end, and CPython's full collections walk it all.
    """
    observations, events, woken_store, first, budget = [], 0, None, 0, InstantBudget()
    keep = observations.extend if observe is None else observe
    while system.requests or not is_quiescent(system):  # a running request (the common case) rules quiescence out
        events += 1
        if events > max_events:
            raise IllegalTransition("not quiescent", "drain", f"still busy after {max_events} events")
        if system.requests:
            request = get_first_request(system.requests, first)
            first = request.request_id
            system, seen = step(system, listener(request))
        elif system.pop_requests:
            system, seen = step(system, get_pop_completion(system, pop_listener))
        elif len(system.oneway):
            system, seen = step(system, DeliverOneway(0))
        else:
            schedule_time = get_next_schedule_time(system.broker, system.config)
            if compute_next_time(system, schedule_time) is None:
                raise IllegalTransition("idle but not quiescent", "drain", "no timer left (no live consumer?)")
            system, seen, kind = fire_next(system, schedule_time)
            budget.count(system, kind)
            system = wake_pulls(system, woken_store)
            if budget.is_spent():  # only a fired timer counts towards the budget: only this branch spends it
                keep(seen)
                keep([budget.get_livelock()])
                break
        # Every branch ends with a wake of held pulls (step wakes them too).
        woken_store = system.broker.store
        keep(seen)
    return evolve(system), observations, events
