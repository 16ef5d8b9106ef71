"""The network between the group's instances and the broker (spec/11-guarantees.md): what a client step exchanges
with the cluster (model/values/wire.py) reaches the cluster's broker at once, answered with the cluster's clock,
configuration and random draw, except a one-way offset commit while the network holds them (SY-02); and a pull
the broker holds is answered once its queue has a message at or past the offset asked for (PL-04). A POP consumer's
request goes to the broker's POP answers or through the proxy (model/system/pop_route.py)."""

from __future__ import annotations

from model.broker.server import ANSWERS, REFUSABLE, answer_refused
from model.client.pop_consumer import wake_parked_pops
from model.client.pull import wake_flow_controlled_pulls, wake_parked_pulls
from model.system.pop_route import route_pop
from model.system.state import System
from model.values.records import evolve, new_tuple
from model.values.wire import (
    RANDOM_BOUND,
    CommitResult,
    Context,
    LockBatchRequest,
    QueryConsumerOffset,
    SendBackRequest,
    SendMessage,
    UpdateConsumerOffset,
    answers_for,
)


def compute_random(system: System) -> int:
    """The broker's random queue choice, drawn from the state (deterministic; retry queues are symmetric): a value in
    [0, RANDOM_BOUND), as ThreadLocalRandom.nextInt(99999999) draws it."""
    return system.timer_seq % RANDOM_BOUND


# The requests whose answer depends on the broker's clock, configuration or random draw.
TIMED = frozenset({SendBackRequest, SendMessage, LockBatchRequest, QueryConsumerOffset})


@answers_for(System)
def route(system: System, request, _context: Context | None = None) -> tuple[System, object]:
    """A client's request, answered by the cluster's broker; a one-way commit is held instead while the network
    holds them (its answer says so: no previous offset), until DeliverOneway brings it or loses it; a request of a
    kind the broker refuses (RefuseRequests) gets that error answer [SY-13]."""
    if system.hold_oneway and type(request) is UpdateConsumerOffset and request.oneway:
        return evolve(system, oneway=system.oneway.append(request)), CommitResult(None)
    kind = type(request)
    answer_for = ANSWERS.get(kind)
    if answer_for is None:  # a POP consumer's request (5.x)
        return route_pop(system, request, compute_random(system))
    if system.refusals:
        code = system.refusals.get(REFUSABLE.get(kind))
        if code is not None:
            return system, answer_refused(request, code)
    context = new_tuple(Context, (system.config, system.now, compute_random(system))) if kind in TIMED else None
    broker, answer = answer_for(system.broker, request, context)
    return (system if broker is system.broker else evolve(system, broker=broker)), answer


def wake_pulls(system: System, woken_store=None) -> System:
    """The pulls a step's new state lets go on: those held back by the cache checks (PL-02, PL-03), then those the
    broker holds whose queue now has a message past the offset asked for, in (client, queue) order (PL-04).

    `woken_store` is the broker's store when the caller's loop last woke them: a pull is held only at the end of
    its queue, so while the store stays that very object no held pull can have a message to wake for.
    """
    if system.flow_parked:
        system = wake_flow_controlled_pulls(system)
    store = system.broker.store
    if store is woken_store:
        return system
    if system.pop_parked:  # a pop the broker holds is answered once a message is stored (5.x)
        system = wake_parked_pops(system)
    if not system.parked:
        return system
    # Sorted: a persistent map iterates in hash order, which differs between processes; timer ties must not.
    answered = []
    for (client_id, mq), offset in sorted(system.parked.items()):
        if store.get_max_offset_in_queue(mq.topic, mq.queue_id) > offset:
            answered.append((client_id, mq))
    return wake_parked_pulls(system, answered) if answered else system
