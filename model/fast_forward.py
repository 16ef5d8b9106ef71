"""An exact fast-forward over the periodic timers of an idle system (an optimisation of spec/11-guarantees.md's step).

A system with nothing to consume still fires timers: every owned queue's long-polling pull cycle (the broker
answers NO_NEW_MSG after 15 s, correctTagsOffset, an immediate re-pull that is held again), persistAll every 5 s,
rebalance every 20 s, cleanExpiredMsg every consumeTimeout minutes. Through the persistent System each costs
a few copies; a clock jump of 16 minutes fires hundreds of them.

`fast_forward` fires that run of timers on local mutable copies (a `heapq` list, dicts, map mutations) and builds
the System once at the end. It takes the timers in the order `model.system.process_next` would — (time, sequence),
the same new sequence numbers, pull tokens and clock values — and yields the same observations and the same
System; only the timer heap's shape may differ (its contents are equal). A timer it does not know how to fire
exactly ends the window and is left to the normal path. properties/test_fast_forward.py runs both paths side by
side over random histories.
"""

from __future__ import annotations

import heapq

from model.broker import commit_offset, query_offset
from model.cluster import (
    GROUP,
    OffsetCommitted,
    OffsetUpdated,
    OnewayCommit,
    PersistDue,
    PullDue,
    PullObserved,
    RebalanceDue,
    ServiceTimer,
    System,
)
from model.concurrently import CLEAN_EXPIRED, CONCURRENTLY_SERVICE
from model.consume_common import get_live_consumer
from model.consume_service import get_consume_service
from model.offset_store import get_offset, persist_all, update_offset
from model.process_queue import get_expired_head_messages, is_pull_expired
from model.pull import BROKER_SUSPEND_MAX_TIME_MILLIS, compute_flow_control
from model.rebalance import REBALANCE_INTERVAL_MILLIS, compute_allocation
from model.records import evolve
from model.timers import get_heap_items, heap_from_sorted, heap_peek

IDLE_KINDS = (PullDue, PersistDue, RebalanceDue, ServiceTimer)


def get_key(entry: tuple) -> tuple:
    return entry[0]


class ClientState:
    """One live instance inside a window: its pull tokens, offset store and lastPullTimestamps as they change."""

    __slots__ = ("consumer", "tokens", "store", "stamps", "queues", "persisted", "balanced")

    def __init__(self, consumer):
        self.consumer = consumer
        self.tokens = dict(consumer.pull_tokens.items())
        self.store = consumer.offset_store
        self.stamps: dict = {}
        self.queues = frozenset(consumer.process_queues)
        # persistAll's last (input store, output store, updates); whether the allocation is the table (constant
        # in a window: members and topics do not change).
        self.persisted: tuple | None = None
        self.balanced: bool | None = None


class Window:
    """The working copy of one fast-forward: local and mutable, it never leaves `fast_forward`."""

    def __init__(self, system: System):
        self.system = system
        self.heap = get_heap_items(system.timers)
        heapq.heapify(self.heap)
        self.now, self.seq, self.fired = system.now, system.timer_seq, 0
        self.clients: dict[str, ClientState] = {}
        # The held-pull table's changes (None: removed), the broker's changed offsets, new one-way commits.
        self.parked, self.committed, self.oneway, self.observations = {}, {}, [], []
        # Set when something is_quiescent reads changed (an offset, a broker offset, a one-way commit).
        self.changed = False

    def schedule(self, at: int, item: object) -> None:
        self.seq += 1
        heapq.heappush(self.heap, ((at, self.seq), item))

    def get_client(self, client_id: str, incarnation: int) -> ClientState | None:
        """The instance's state if that incarnation is live (as model.consume_common.get_live_consumer)."""
        client = self.clients.get(client_id)
        if client is None:
            consumer = get_live_consumer(self.system, client_id, incarnation)
            if consumer is None:
                return None
            client = self.clients[client_id] = ClientState(consumer)
        return client if client.consumer.incarnation == incarnation else None


def is_idle(system: System) -> bool:
    """Nothing but periodic timers can act before the next event: concurrently consumption; every
    ProcessQueue live and either held back by flow control (which stays so: only an event shrinks a cache) or
    pulled to its queue's end and let through by flow control; no held pull with a message to wake for. Running
    listeners may hold cached messages: only an event completes them. A pending resubmission ends the window."""
    if get_consume_service(system.config) is not CONCURRENTLY_SERVICE:
        return False
    store = system.broker.store
    for client_id, consumer in system.consumers.items():
        for mq, pq in consumer.process_queues.items():
            if pq.dropped:
                return False
            if (client_id, mq) in system.flow_parked:
                continue
            high = store.get_max_offset_in_queue(mq.topic, mq.queue_id)
            if consumer.next_offsets.get(mq) != high or system.min_offsets.get(mq, 0) > high:
                return False
            if compute_flow_control(system, client_id, mq, pq)[0] is not None:
                return False
    if not all(is_still_flow_controlled(system, key, parked) for key, parked in system.flow_parked.items()):
        return False
    return all(store.get_max_offset_in_queue(mq.topic, mq.queue_id) <= offset
               for (_client_id, mq), offset in system.parked.items())


def is_still_flow_controlled(system: System, key: tuple, parked: tuple) -> bool:
    """A pull held back by flow control that model.pull.wake_flow_controlled_pulls leaves as it is:
    its ProcessQueue is live and still too full (only an event changes that)."""
    (client_id, mq), (_since, incarnation, token) = key, parked
    consumer = get_live_consumer(system, client_id, incarnation)
    pq = None if consumer is None else consumer.process_queues.get(mq)
    if pq is None or pq.dropped or consumer.pull_tokens.get(mq) != token:
        return False
    return compute_flow_control(system, client_id, mq, pq)[0] is not None


def fast_forward(system: System, until: int | None, schedule_time: int | None, *, stop_on_change: bool = False,
                 limit: int | None = None) -> tuple[System, list, int]:
    """Fire the idle timers due at or before `until` (None: no bound), before the broker's delay timer
    (next due at `schedule_time`, from model.schedule.get_next_schedule_time),
    at most `limit` of them, stopping after one that changed an offset or the one-way queue if `stop_on_change`
    (drain checks quiescence between timers); returns (system, observations, timers fired) — 0 fired when the
    system is not idle or its next timer is not an idle one, and then the system is the one given."""
    peeked = heap_peek(system.timers)
    if peeked is None or not isinstance(peeked[1], IDLE_KINDS) or (until is not None and peeked[0][0] > until):
        return system, [], 0
    if (schedule_time is not None and schedule_time <= peeked[0][0]) or not is_idle(system):
        return system, [], 0
    window = Window(system)
    run_window(window, until, schedule_time, stop_on_change, limit)
    if not window.fired:
        return system, [], 0
    return close_window(window), window.observations, window.fired


def run_window(window: Window, until: int | None, bound: int | None, stop_on_change: bool,
               limit: int | None) -> None:
    """Pop and fire timers in (time, sequence) order while they are due and idle."""
    heap = window.heap
    while heap and (limit is None or window.fired < limit):
        (at, seq), item = heap[0]
        if (until is not None and at > until) or (bound is not None and at >= bound):
            return
        handler = IDLE_HANDLERS.get(type(item))
        if handler is None:
            return
        previous = window.now
        window.now = max(previous, at)
        heapq.heappop(heap)
        if not handler(window, item):
            # Declined before changing anything: the timer goes back for the normal path.
            window.now = previous
            heapq.heappush(heap, ((at, seq), item))
            return
        window.fired += 1
        if stop_on_change and window.changed:
            return


def commit(window: Window, consumer, mq, offset: int, source: str, rules: tuple[str, ...]) -> list:
    """As model.pull.commit_broker_offset, on the window's copy of the broker's offsets."""
    committed = window.committed
    previous = committed[mq] if mq in committed else query_offset(window.system.broker, GROUP, mq.topic, mq.queue_id)
    if previous == offset:
        return []
    committed[mq] = offset
    window.changed = True
    lifetime = (consumer.incarnation, consumer.generations.get(mq, 0))
    return [OffsetCommitted(mq, offset, previous, source, window.now, rules, lifetime)]


def process_idle_pull(window: Window, due: PullDue) -> bool:
    """As model.pull.process_pull on a live queue pulled to its end: the
    piggybacked commit, NO_NEW_MSG, then held for 15 s or (when the held pull answers) correctTagsOffset if
    nothing is cached, and an immediate re-pull. Stale pulls do nothing."""
    client = window.get_client(due.client_id, due.incarnation)
    mq = due.queue
    if client is None or client.tokens.get(mq) != due.token:
        return True
    consumer = client.consumer
    pq = consumer.process_queues.get(mq)
    if pq is None or pq.dropped:
        return True
    now = client.stamps[mq] = window.now
    piggybacked = []
    offset = get_offset(client.store, mq)
    if offset is not None and offset > 0 and window.system.config.is_clustering:
        piggybacked = commit(window, consumer, mq, offset, "pull", ("PL-07",))
    next_offset = consumer.next_offsets[mq]
    if not due.suspended:
        # The normal path drops the piggyback's observation here too: a held pull returns none.
        window.parked[due.client_id, mq] = next_offset
        schedule_idle_pull(window, client, mq, now + BROKER_SUSPEND_MAX_TIME_MILLIS, True)
        return True
    window.parked[due.client_id, mq] = None
    observations = window.observations
    observations += piggybacked
    observations.append(PullObserved(due.client_id, mq, "NO_NEW_MSG", next_offset, next_offset, 0, now, ("PL-04",)))
    if pq.msg_count == 0:
        observations.append(record_idle_offset(window, client, mq, next_offset))
    schedule_idle_pull(window, client, mq, now, False)
    return True


def record_idle_offset(window: Window, client: ClientState, mq, offset: int) -> OffsetUpdated:
    """correctTagsOffset with nothing cached: an increase-only update of the offset store."""
    store = client.store
    updated = client.store = update_offset(store, mq, offset, True)
    if updated is not store and get_offset(store, mq) != get_offset(updated, mq):
        window.changed = True
    consumer = client.consumer
    lifetime = (consumer.incarnation, consumer.generations.get(mq, 0))
    return OffsetUpdated(consumer.client_id, mq, updated.offsets[mq].value, window.now, ("PL-06",), lifetime)


def schedule_idle_pull(window: Window, client: ClientState, mq, at: int, suspended: bool) -> None:
    """As model.pull.schedule_pull: a new token makes any older pending pull of the queue stale."""
    token = client.tokens[mq] = client.tokens.get(mq, 0) + 1
    consumer = client.consumer
    window.schedule(at, PullDue(consumer.client_id, consumer.incarnation, mq, token, suspended))


def process_idle_persist(window: Window, due: PersistDue) -> bool:
    """As model.rebalance.process_persist: persistAll, each update sent one-way (committed at once,
    or held in the network), and the next persist one interval later."""
    client = window.get_client(due.client_id, due.incarnation)
    if client is None:
        return True
    persisted = client.persisted
    if persisted is None or persisted[0] is not client.store:
        # persistAll of an unchanged store gives the same answer: compute it when the store changed.
        persisted = client.persisted = (client.store, *persist_all(client.store, client.queues))
    client.store, updates = persisted[1], persisted[2]
    for mq, offset in updates:
        if window.system.hold_oneway:
            lifetime = (client.consumer.incarnation, client.consumer.generations.get(mq, 0))
            window.oneway.append(OnewayCommit(due.client_id, mq, offset, window.now, lifetime))
            window.changed = True
        else:
            window.observations += commit(window, client.consumer, mq, offset, "persist", ("RB-05",))
    window.schedule(window.now + window.system.config.persist_consumer_offset_interval, due)
    return True


def process_idle_rebalance(window: Window, due: RebalanceDue) -> bool:
    """As model.rebalance.process_rebalance_due when it changes nothing: the allocation is the
    ProcessQueue table and no queue's pull is stale. Otherwise the timer is declined."""
    client = window.get_client(due.client_id, due.incarnation)
    if client is None:
        return True
    if client.balanced is None:
        client.balanced = compute_allocation(window.system, due.client_id) == client.queues
    if not client.balanced:
        return False
    for mq, pq in client.consumer.process_queues.items():
        if (due.client_id, mq) in window.system.flow_parked:
            continue  # LK-08: Java's 50 ms retries keep stamping it (model.rebalance.is_pull_stale)
        stamped = evolve(pq, last_pull_timestamp=client.stamps[mq]) if mq in client.stamps else pq
        if is_pull_expired(stamped, window.now):
            return False
    window.schedule(window.now + REBALANCE_INTERVAL_MILLIS, due)
    return True


def process_idle_service_timer(window: Window, timer: ServiceTimer) -> bool:
    """As model.concurrently.on_timer when cleanExpiredMsg finds no expired message: the next run
    one period later. A run that would send messages back is declined."""
    client = window.get_client(timer.client_id, timer.incarnation)
    if client is None or timer.kind != CLEAN_EXPIRED:
        return True
    timeout = window.system.config.consume_timeout
    for pq in client.consumer.process_queues.values():
        if not pq.dropped and get_expired_head_messages(pq, window.now, timeout):
            return False
    window.schedule(window.now + timeout * 60_000, ServiceTimer(timer.client_id, timer.incarnation, CLEAN_EXPIRED))
    return True


IDLE_HANDLERS = {
    PullDue: process_idle_pull,
    PersistDue: process_idle_persist,
    RebalanceDue: process_idle_rebalance,
    ServiceTimer: process_idle_service_timer,
}


def close_window(window: Window) -> System:
    """The persistent System after the window, built once."""
    system = window.system
    consumers = system.consumers
    for client_id, client in window.clients.items():
        consumers = consumers.set(client_id, close_consumer(client))
    broker = system.broker
    for mq, offset in window.committed.items():
        broker = commit_offset(broker, GROUP, mq.topic, mq.queue_id, offset)
    oneway = system.oneway
    for held in window.oneway:
        oneway = oneway.append(held)
    parked = system.parked.mutate()
    for key, offset in window.parked.items():
        if offset is not None:
            parked[key] = offset
        elif key in parked:
            del parked[key]
    return evolve(system, consumers=consumers, broker=broker, oneway=oneway, parked=parked.finish(),
                  timers=heap_from_sorted(sorted(window.heap, key=get_key)), timer_seq=window.seq, now=window.now)


def close_consumer(client: ClientState):
    """The instance with the window's pull tokens, offset store and lastPullTimestamps."""
    consumer = client.consumer
    queues = consumer.process_queues.mutate()
    for mq, stamp in client.stamps.items():
        queues[mq] = evolve(queues[mq], last_pull_timestamp=stamp)
    return evolve(consumer, offset_store=client.store, pull_tokens=consumer.pull_tokens.update(client.tokens),
                  process_queues=queues.finish())
