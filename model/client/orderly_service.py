"""The orderly consume service inside the system (spec/12-orderly.md): ConsumeMessageOrderlyService on the seam of
model/client/consume_service.py, built on the pure steps of model/client/orderly.py, model/client/queue_locks.py and
model/client/orderly_rebalance.py.

Per queue an instance runs at most one ConsumeRequest loop at a time (Java serialises them on a per-queue lock
object, and `consuming` lets a pull dispatch a new one only after the loop ended). The loop's state — which PQ
generation it serves, when it began (the 60 s slice), the listener invocation in flight — is
`ConsumerInstance.service_state[mq]`. The lock object is the queue's, not the ProcessQueue's: a ConsumeRequest of a
new ProcessQueue generation waits while an older one's listener still runs (its ProcessQueue left the table, OR-11).
Timers: lockAll every 20 s, tryLockLaterAndReconsume, submitConsumeRequestLater and the delayed unlock of a removed
queue, all `ServiceTimer`s of the instance's incarnation.
"""

from __future__ import annotations

from attrs import frozen

from model.client.cluster import Cluster
from model.client.consume_common import (
    get_live_consumer,
    observe_stored,
    put_consumer,
    record_offset,
    schedule,
    start_listener,
)
from model.client.consume_service import ConsumeService
from model.client.listener import ConsumeStatus
from model.client.observations import Note, SendBackOutcome
from model.client.orderly import (
    RESUBMIT_AFTER_LOCK_FAILED,
    RESUBMIT_AFTER_LOCK_OK,
    OrderlyResult,
    OrderlyStatus,
    Step,
    get_status,
    process_check_reconsume_times,
    process_consume_result,
    process_gate,
    process_take,
)
from model.client.orderly_rebalance import process_remove_queue, request_unlock
from model.client.queue_locks import (
    LOCK_ALL_INITIAL_DELAY,
    REBALANCE_LOCK_INTERVAL,
    compute_first_pull_offset,
    is_lock_all_scheduled,
    is_lock_needed_to_add_queue,
    process_lock_all,
    process_lock_one,
)
from model.client.remote_offsets import compute_pull_from_where, send_oneway
from model.client.timer_items import ServiceTimer
from model.values.message import MessageQueue
from model.values.names import GROUP
from model.values.records import discard, evolve

LOCK_ALL, TRY_LOCK, RESUBMIT, UNLOCK = "lock_all", "try_lock", "resubmit", "unlock"
# service_state key (PREVIOUSLY_LOCKED, mq) -> the ProcessQueue generation whose first locked pull happened.
PREVIOUSLY_LOCKED = "previously_locked"
# service_state key (WAITING, mq) -> the generation whose ConsumeRequest waits for the queue's lock object.
WAITING = "waiting"


@frozen
class OrderlyRun:
    """A ConsumeRequest loop of one ProcessQueue generation: its beginTime and the listener invocation in flight."""

    generation: int
    began_at: int
    request_id: int | None = None


@frozen
class OrderlyProcessed:
    """processConsumeResult of one orderly invocation; `discarded`: its ProcessQueue was gone (OR-11)."""

    request_id: int
    status: OrderlyStatus
    auto_commit: bool
    commit_offset: int
    sent: tuple
    discarded: bool
    time: int
    rules: tuple[str, ...] = ()


def start(cluster: Cluster, client_id: str) -> Cluster:
    """[LK-03] CLUSTERING: lockMQPeriodically, 1 s after start and then every 20 s; BROADCASTING: nothing."""
    if not is_lock_all_scheduled(cluster.config):
        return cluster
    return schedule_later(cluster, client_id, LOCK_ALL, LOCK_ALL_INITIAL_DELAY, None)


def allows_pull(cluster: Cluster, client_id: str, mq: MessageQueue, pq) -> tuple[int | None, tuple[str, ...]]:
    """[LK-06] An orderly pull waits pullTimeDelayMillsWhenException (1 s by default, CFG-01) while its
    ProcessQueue is not locked — in BROADCASTING too, where only the rebalance marks a new ProcessQueue locked
    (#2621)."""
    if not pq.locked:
        return cluster.config.pull_time_delay_mills_when_exception, ("LK-06",)
    return None, ()


def get_run(consumer, mq: MessageQueue) -> OrderlyRun | None:
    """The loop of the queue's current ProcessQueue generation, if one runs."""
    run = consumer.service_state.get(mq)
    return run if run is not None and run.generation == consumer.generations.get(mq) else None


def put_run(cluster: Cluster, client_id: str, mq: MessageQueue, run: OrderlyRun | None) -> Cluster:
    consumer = cluster.consumers[client_id]
    state = discard(consumer.service_state, mq) if run is None else consumer.service_state.set(mq, run)
    return put_consumer(cluster, evolve(consumer, service_state=state))


def is_listener_running(consumer, mq: MessageQueue) -> bool:
    run = get_run(consumer, mq)
    return run is not None and run.request_id is not None


def submit(cluster: Cluster, client_id: str, mq: MessageQueue, _msgs, dispatch_to_consume: bool):
    """[OR-01] submitConsumeRequest ignores the messages: a ConsumeRequest starts only when dispatchToConsume."""
    consumer = cluster.consumers[client_id]
    if not dispatch_to_consume or get_run(consumer, mq) is not None:
        return cluster, []
    if consumer.service_state.get(mq) is not None:
        # [OR-11] an older ProcessQueue's listener still runs, holding the queue's lock object
        state = consumer.service_state.set((WAITING, mq), consumer.generations[mq])
        cluster = put_consumer(cluster, evolve(consumer, service_state=state))
        return cluster, [Note(f"{client_id} {mq}: waits for the listener of a removed ProcessQueue", cluster.now,
                              ("OR-11",))]
    return run_request(cluster, client_id, mq, consumer.generations[mq], cluster.now, True)


def schedule_later(cluster: Cluster, client_id: str, kind: str, delay: int, payload) -> Cluster:
    consumer = cluster.consumers[client_id]
    return schedule(cluster, cluster.now + delay, ServiceTimer(client_id, consumer.incarnation, kind, payload))


def run_request(cluster: Cluster, client_id: str, mq: MessageQueue, generation: int, began_at: int, first: bool):
    """[OR-01] One turn of ConsumeRequest.run: the gate, then takeMessages and the listener call [OR-03] — or the
    loop ends: dropped, re-lock later (LK-04), the 60 s slice (OR-02), or nothing left to take."""
    consumer = cluster.consumers[client_id]
    pq = consumer.process_queues.get(mq)
    if pq is None or consumer.generations.get(mq) != generation:
        return cluster, []
    gate = process_gate(pq, cluster.config, cluster.now, began_at, first)
    if gate.step is not Step.TAKE:
        cluster = put_run(cluster, client_id, mq, None)
        if gate.step is Step.TRY_LOCK_LATER:
            cluster = schedule_later(cluster, client_id, TRY_LOCK, gate.delay, (mq, generation))
        elif gate.step is Step.RESUBMIT_LATER:
            cluster = schedule_later(cluster, client_id, RESUBMIT, gate.delay, (mq, generation))
        return cluster, [Note(f"{client_id} {mq}: {gate.step.value}", cluster.now, gate.rules)]
    pq, msgs = process_take(pq, cluster.config, cluster.now)
    consumer = evolve(consumer, process_queues=consumer.process_queues.set(mq, pq))
    if not msgs:
        cluster = put_run(put_consumer(cluster, consumer), client_id, mq, None)
        return cluster, [Note(f"{client_id} {mq}: nothing to take", cluster.now, ("OR-03",))]
    cluster, invoked = start_listener(cluster, consumer, mq, msgs, gate.rules + ("OR-03",))
    return put_run(cluster, client_id, mq, OrderlyRun(generation, began_at, invoked.request_id)), [invoked]


def compute_orderly_result(result) -> OrderlyResult:
    """A concurrently-style result (as `drain`'s listeners give) read as the orderly one it stands for."""
    if isinstance(result, OrderlyResult):
        return result
    ok = result.status is ConsumeStatus.CONSUME_SUCCESS
    return OrderlyResult(OrderlyStatus.SUCCESS if ok else OrderlyStatus.SUSPEND)


def complete(cluster: Cluster, event) -> tuple[Cluster, list]:
    """[OR-05] [OR-06] processConsumeResult of a returned listener, the offset update (OR-10), then the loop goes
    on or is resubmitted later. A result whose ProcessQueue left the table is lost, local counters included (OR-11)."""
    request = cluster.requests.get(event.request_id)
    if request is None:
        return cluster, []
    cluster = evolve(cluster, requests=discard(cluster.requests, event.request_id))
    outcome, mq, client_id = compute_orderly_result(event.result), request.queue, request.client_id
    consumer = get_live_consumer(cluster, client_id, request.incarnation)
    if consumer is None:
        return cluster, [OrderlyProcessed(request.request_id, get_status(outcome.status), outcome.auto_commit, -1, (),
                                         True, cluster.now, ("OR-11",))]
    if consumer.generations.get(mq) != request.generation or mq not in consumer.process_queues:
        return complete_removed(cluster, request, outcome, event)
    run = get_run(consumer, mq)
    pq = consumer.process_queues[mq]
    # The cluster answers the give-up sends with its own clock and random draw.
    result = process_consume_result(cluster, pq, cluster.config, GROUP, request.messages, outcome.status,
                                    cluster.now, auto_commit=outcome.auto_commit,
                                    suspend_millis=outcome.suspend_current_queue_time_millis,
                                    send_ok=not event.fallback_fails,
                                    send_retried=event.send_retried)
    cluster = result.peer
    consumer = evolve(consumer, process_queues=consumer.process_queues.set(mq, result.pq))
    offset = result.commit_offset if not pq.dropped else -1
    cluster, updated = record_offset(cluster, consumer, mq, offset, False, ("OR-10",))
    observations = [OrderlyProcessed(request.request_id, get_status(outcome.status), outcome.auto_commit,
                                     result.commit_offset, result.sent, False, cluster.now, result.rules)]
    observations += observe_give_ups(result.sent, cluster.now)
    began_at = run.began_at if run is not None else cluster.now
    if result.continue_consume:
        cluster, more = run_request(cluster, client_id, mq, request.generation, began_at, False)
        return cluster, observations + updated + more
    cluster = put_run(cluster, client_id, mq, None)
    cluster = schedule_later(cluster, client_id, RESUBMIT, result.resubmit_after, (mq, request.generation))
    return cluster, observations + updated


def observe_give_ups(sent: tuple, now: int) -> list:
    """[OR-09] Each give-up send's stored copy, standing for the message (no CONSUMER_SEND_MSG_BACK: level 0)."""
    observations = []
    for stored in sent:
        observations.append(SendBackOutcome(stored, "orderly", stored, 0, now, ("OR-09",)))
        observations.extend(observe_stored(stored, now, ("OR-09",)))
    return observations


def complete_removed(cluster: Cluster, request, outcome: OrderlyResult, event) -> tuple[Cluster, list]:
    """[OR-11] The answer of a listener whose ProcessQueue left the table while it ran (an OFFSET_ILLEGAL repair, a
    5.x forced unlock): processConsumeResult still runs on that ProcessQueue — nothing is committed (it is dropped)
    and its local retry is lost with it, but a give-up at maxReconsumeTimes is sent. The loop then ends, releasing
    the queue's lock object to a ConsumeRequest of the queue's new ProcessQueue that waits for it."""
    status, mq, client_id = get_status(outcome.status), request.queue, request.client_id
    sent, rules = (), ("OR-11",)
    if status is OrderlyStatus.SUSPEND:
        back = process_check_reconsume_times(cluster, cluster.config, GROUP, request.messages, cluster.now,
                                             not event.fallback_fails, 0, event.send_retried)
        cluster, sent, rules = back.peer, back.sent, rules + back.rules
    observations = [OrderlyProcessed(request.request_id, status, outcome.auto_commit, -1, sent, True, cluster.now,
                                     rules)] + observe_give_ups(sent, cluster.now)
    consumer = cluster.consumers[client_id]
    waiting, generation = consumer.service_state.get((WAITING, mq)), consumer.generations.get(mq)
    # The run under the queue is this listener's: while it ran, no other loop of the queue could start.
    state = discard(discard(consumer.service_state, (WAITING, mq)), mq)
    cluster = put_consumer(cluster, evolve(consumer, service_state=state))
    if waiting != generation:  # none waits, or its ProcessQueue was replaced meanwhile
        return cluster, observations
    cluster, more = run_request(cluster, client_id, mq, generation, cluster.now, True)
    return cluster, observations + more


def is_lock_request_failing(cluster: Cluster, client_id: str) -> bool:
    """[LK-07] A failing lock request never reaches the broker; the caller catches the exception and changes
    nothing (lockAll) or takes it as a refusal (lock(mq))."""
    return client_id in cluster.lock_faults


def on_lock_all(cluster: Cluster, timer: ServiceTimer) -> tuple[Cluster, list]:
    """[LK-03] lockAll: one lockBatch over the ProcessQueue table (dropped queues kept there included), then again
    20 s later."""
    if is_lock_request_failing(cluster, timer.client_id):
        cluster = schedule_later(cluster, timer.client_id, LOCK_ALL, REBALANCE_LOCK_INTERVAL, None)
        return cluster, [Note(f"{timer.client_id} lockAll failed", cluster.now, ("LK-07",))]
    consumer = cluster.consumers[timer.client_id]
    cluster, table = process_lock_all(cluster, GROUP, timer.client_id, consumer.process_queues, cluster.now)
    cluster = put_consumer(cluster, evolve(consumer, process_queues=table))
    cluster = schedule_later(cluster, timer.client_id, LOCK_ALL, REBALANCE_LOCK_INTERVAL, None)
    return cluster, [Note(f"{timer.client_id} lockAll", cluster.now, ("LK-03",))]


def on_try_lock(cluster: Cluster, timer: ServiceTimer) -> tuple[Cluster, list]:
    """[LK-01] tryLockLaterAndReconsume: lock(mq) — whether or not the queue is still this instance's — then
    resubmit 10 ms later on success, 3000 ms on failure."""
    mq, generation = timer.payload
    cluster, granted = request_lock(cluster, timer.client_id, mq)
    delay = RESUBMIT_AFTER_LOCK_OK if granted else RESUBMIT_AFTER_LOCK_FAILED
    cluster = schedule_later(cluster, timer.client_id, RESUBMIT, delay, (mq, generation))
    return cluster, [Note(f"{timer.client_id} {mq}: lock {'granted' if granted else 'refused'}", cluster.now,
                         ("LK-01",))]


def on_resubmit(cluster: Cluster, timer: ServiceTimer) -> tuple[Cluster, list]:
    """[OR-02] submitConsumeRequestLater: a new ConsumeRequest (a new 60 s slice) for the same ProcessQueue."""
    mq, generation = timer.payload
    consumer = cluster.consumers[timer.client_id]
    if consumer.generations.get(mq) != generation or get_run(consumer, mq) is not None:
        return cluster, []
    return run_request(cluster, timer.client_id, mq, generation, cluster.now, True)


def on_delayed_unlock(cluster: Cluster, timer: ServiceTimer) -> tuple[Cluster, list]:
    """[OR-12] 4.9: the unlock of a removed queue that still cached messages, 20 s after its removal."""
    cluster = request_unlock(cluster, GROUP, timer.client_id, timer.payload)
    return cluster, [Note(f"{timer.client_id} unlocked {timer.payload}", cluster.now, ("OR-12",))]


TIMERS = {LOCK_ALL: on_lock_all, TRY_LOCK: on_try_lock, RESUBMIT: on_resubmit, UNLOCK: on_delayed_unlock}


def on_timer(cluster: Cluster, timer: ServiceTimer) -> tuple[Cluster, list]:
    if get_live_consumer(cluster, timer.client_id, timer.incarnation) is None or timer.kind not in TIMERS:
        return cluster, []
    return TIMERS[timer.kind](cluster, timer)


def lock_queue(cluster: Cluster, client_id: str, mq: MessageQueue) -> tuple[Cluster, bool]:
    """[LK-01] A rebalance adds an orderly queue only if lock(mq) succeeds (LK-05 says when a lock is asked)."""
    if not is_lock_needed_to_add_queue(cluster.config):
        return cluster, True
    return request_lock(cluster, client_id, mq)


def request_lock(cluster: Cluster, client_id: str, mq: MessageQueue) -> tuple[Cluster, bool]:
    """[LK-01] RebalanceImpl.lock(mq); a failing request (LK-07) is a refusal."""
    if is_lock_request_failing(cluster, client_id):
        return cluster, False
    consumer = cluster.consumers[client_id]
    cluster, table, granted = process_lock_one(cluster, GROUP, client_id, consumer.process_queues, mq,
                                              cluster.now)
    return put_consumer(cluster, evolve(consumer, process_queues=table)), granted


def prepare_pull(cluster: Cluster, client_id: str, mq: MessageQueue) -> tuple[Cluster, list]:
    """[LK-06] The first pull of a locked queue (per PullRequest, i.e. per ProcessQueue generation) replaces its
    next offset by computePullFromWhere, read from the offset store now; later pulls keep their own."""
    consumer = cluster.consumers[client_id]
    key, generation = (PREVIOUSLY_LOCKED, mq), consumer.generations[mq]
    if consumer.service_state.get(key) == generation:
        return cluster, []
    previous = consumer.next_offsets[mq]
    offset, _ = compute_first_pull_offset(True, False, previous, compute_pull_from_where(cluster, consumer, mq))
    consumer = evolve(consumer, next_offsets=consumer.next_offsets.set(mq, offset),
                      service_state=consumer.service_state.set(key, generation))
    return put_consumer(cluster, consumer), [Note(f"{client_id} {mq}: pull from {offset} (was {previous})",
                                                 cluster.now, ("LK-06",))]


def remove_queue(cluster: Cluster, client_id: str, mq: MessageQueue) -> tuple[Cluster, list]:
    """[OR-12] removeUnnecessaryMessageQueue of an orderly consumer: the queue may stay in the table (dropped)
    while its listener runs; its broker lock is released now, 20 s later, or (kept) not yet."""
    consumer = cluster.consumers[client_id]
    running = is_listener_running(consumer, mq)
    removal = process_remove_queue(cluster, consumer.offset_store, cluster.config, GROUP, client_id, mq,
                                   consumer.process_queues[mq], cluster.now, running)
    if removal.removed:
        consumer = evolve(consumer, offset_store=removal.offset_store,
                          process_queues=discard(consumer.process_queues, mq),
                          next_offsets=discard(consumer.next_offsets, mq))
    else:
        consumer = evolve(consumer, offset_store=removal.offset_store,
                          process_queues=consumer.process_queues.set(mq, removal.pq))
    cluster = put_consumer(evolve(removal.peer, parked=discard(cluster.parked, (client_id, mq))), consumer)
    if removal.unlock_at is not None:
        cluster = schedule(cluster, removal.unlock_at, ServiceTimer(client_id, consumer.incarnation, UNLOCK, mq))
    cluster, observations = send_oneway(cluster, client_id, removal.persisted, ("OR-12",))
    what = "removed" if removal.removed else "kept (listener running)"
    return cluster, observations + [Note(f"{client_id} {what} {mq}", cluster.now, removal.rules)]


ORDERLY_SERVICE = ConsumeService(
    name="orderly", start=start, allows_pull=allows_pull, submit=submit, complete=complete, on_timer=on_timer,
    lock_queue=lock_queue, remove_queue=remove_queue, prepare_pull=prepare_pull,
)
