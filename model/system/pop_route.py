"""The 5.x side of the cluster (spec/14-pop.md to spec/19-pop-guarantees.md): the POP consumers' requests routed to
the broker's POP answers or through the proxy, and the broker's own timed POP work on the system's timers — the
revive service and the persist of the consumer offsets — and its restart (PO-10).

The broker half keeps its POP state apart from the 4.x `Broker` (model/broker/pop/state.py's `PopBroker` holds
both); the system holds the two side by side (`System.broker`, `System.pop`) and joins them for each POP answer,
so a 4.x cluster without POP (`System.pop_config` None) pays nothing for them.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import NamedTuple

from model.broker.consumer_offsets import query_offset
from model.broker.pop.ack import on_ack, on_change_invisible_time
from model.broker.pop.config import PopConfig
from model.broker.pop.pop import on_pop
from model.broker.pop.restart import on_broker_restart, on_persist
from model.broker.pop.revive import get_next_revive_time, on_revive
from model.broker.pop.state import PopBroker, PopGroupConfig
from model.broker.state import SubscriptionGroupConfig
from model.client.consume_common import schedule
from model.proxy.consumer import on_change_invisible_duration, on_proxy_ack
from model.proxy.dlq import process_follow_up
from model.proxy.receive import on_receive
from model.system.state import System
from model.values.errors import ConfigError, IllegalTransition
from model.values.names import TOPIC
from model.values.pop_names import get_pop_retry_topic
from model.values.pop_wire import (
    AckRequest,
    ChangeRequest,
    PopRequest,
    ProxyAckRequest,
    ProxyChangeRequest,
    ReceiveRequest,
)
from model.values.records import evolve

# Bounded work per virtual instant: one revive run revives at most this many checkpoints, the rest 1 ms later
# (PopReviveService reads each revive queue in batches of 32 messages).
REVIVE_BATCH = 32


class ReviveDue(NamedTuple):
    """The revive service's next run (PopReviveService), at the first time a pending checkpoint is due (IV-01)."""

    at: int


class PopPersistDue(NamedTuple):
    """The broker's scheduled persist of the consumer offsets and the order info (PO-10), every
    flushConsumerOffsetInterval."""

    at: int


def enable_pop(system: System, groups: dict[str, PopGroupConfig], pop_config: PopConfig | None = None) -> System:
    """The broker's POP side: the POP groups (each with the broker's subscription group config from the
    system's configuration, as the 4.x group has, and its POP settings), and the scheduled persist from now on
    (PO-10). A profile without server-side retry (4.x) is a ConfigError."""
    if not system.config.profile.server_side_retry:
        raise ConfigError("profile", system.config.profile.name, "a profile with server-side retry (5.0.0 or later)")
    config, broker = system.config, system.broker
    subscriptions = {group: SubscriptionGroupConfig(group, config.retry_queue_nums, config.retry_max_times)
                     for group in groups}
    pop_config = pop_config or PopConfig()
    system = evolve(system, broker=evolve(broker, groups=broker.groups.update(subscriptions)), pop_config=pop_config,
                    pop=evolve(system.pop, groups=system.pop.groups.update(groups)))
    at = system.now + pop_config.flush_consumer_offset_interval
    return schedule(system, at, PopPersistDue(at))


def get_pop_broker(system: System) -> PopBroker:
    return PopBroker(system.broker, system.pop, system.config, system.pop_config)


def set_pop_broker(system: System, state: PopBroker) -> System:
    return evolve(system, broker=state.broker, pop=state.pop)


def answer_receive(state: PopBroker, request: ReceiveRequest, now: int, random_int: int):
    """ReceiveMessage (PD-01), and the follow-ups the proxy sends at once after answering (PD-02, PD-03): the acks
    of what the subscription misses, and the forwards to the DLQ with their acks. None is lost here."""
    state, answer = on_receive(state, request, now, random_int % 100)
    for follow_up in answer.follow_ups:
        state, more = process_follow_up(state, follow_up, now, random_int)
        for ack in more:
            state, _ = process_follow_up(state, ack, now, random_int)
    return state, answer


POP_ANSWERS: dict[type, Callable] = {
    PopRequest: lambda state, request, now, random_int: on_pop(state, request, now, random_int % 100),
    AckRequest: lambda state, request, now, _random: on_ack(state, request, now),
    ChangeRequest: lambda state, request, now, _random: on_change_invisible_time(state, request, now),
    ReceiveRequest: answer_receive,
    ProxyAckRequest: lambda state, request, now, _random: on_proxy_ack(state, request.group, request.topic,
                                                                      request.handle, now),
    ProxyChangeRequest: lambda state, request, now, _random: on_change_invisible_duration(
        state, request.group, request.topic, request.handle, request.invisible_time, now),
}


def route_pop(system: System, request, random_int: int) -> tuple[System, object]:
    """A POP consumer's request, answered by the broker (a remoting client's) or the proxy (a gRPC client's) at the
    cluster's clock; a checkpoint it wrote puts the revive service's next run on the timers."""
    answer_for = POP_ANSWERS.get(type(request))
    if answer_for is None or system.pop_config is None:
        raise IllegalTransition("no POP" if answer_for else type(request).__name__, "route",
                                "nothing answers this request in this cluster")
    state, answer = answer_for(get_pop_broker(system), request, system.now, random_int)
    return schedule_revive(set_pop_broker(system, state)), answer


def schedule_revive(system: System) -> System:
    """[IV-01] The revive service's next run at the first time a pending checkpoint falls due, unless a run is
    already due by then (a later run left on the timers finds `revive_at` moved and does nothing)."""
    at = get_next_revive_time(get_pop_broker(system)) if system.pop.checkpoints else None
    if at is None or system.revive_at is not None and system.revive_at <= at:
        return system
    at = max(at, system.now + 1)  # a run at most per instant: what one run left waits 1 ms
    return schedule(system, at, ReviveDue(at), revive_at=at)


def process_revive_due(system: System, item: ReviveDue) -> tuple[System, list]:
    """[IV-01] One run of the revive service: at most REVIVE_BATCH due checkpoints revived (IV-02), the next run
    put on the timers."""
    if item.at != system.revive_at:
        return system, []
    state, answer = on_revive(get_pop_broker(system), system.now, REVIVE_BATCH)
    system = evolve(set_pop_broker(system, state), revive_at=None)
    return schedule_revive(system), [answer] if answer.stored or answer.dropped else []


def process_pop_persist(system: System, item: PopPersistDue) -> tuple[System, list]:
    """[PO-10] The scheduled persist, and the next one flushConsumerOffsetInterval later."""
    system = set_pop_broker(system, on_persist(get_pop_broker(system)))
    at = item.at + system.pop_config.flush_consumer_offset_interval
    return schedule(system, at, PopPersistDue(at)), []


def restart_broker(system: System, graceful: bool) -> tuple[System, list]:
    """[PO-10] The broker restarts: a graceful restart persists first; a crash brings every group's consumer
    offsets (the 4.x group's among them) and the order info back to the last persist, and the checkpoints revived
    since are revived again. Held pulls and pops are answered as before: a client's timed-out request repeats."""
    if system.pop_config is None:
        raise IllegalTransition("a cluster without POP", "RestartBroker", "the broker persists nothing to restart from")
    system = set_pop_broker(system, on_broker_restart(get_pop_broker(system), graceful=graceful))
    return schedule_revive(system), []


def get_pop_topics(system: System, group: str) -> list[str]:
    """The topics a POP group reads: the topic and whichever of its retry topics (v1, v2) exist."""
    retry = [get_pop_retry_topic(TOPIC, group, v2) for v2 in (False, True)]
    return [TOPIC] + [topic for topic in retry if topic in system.broker.topics]


def is_pop_quiescent(system: System) -> bool:
    """[PG-01] The POP side at rest: no listener of a POP consumer running, no checkpoint waiting to be revived,
    and every POP group's offset at the end of each queue it reads (a FIFO queue's too: its offset moves by
    acks, FF-02)."""
    if system.pop_requests or system.pop.checkpoints:
        return False
    store = system.broker.store
    for group in system.pop.groups:
        for topic in get_pop_topics(system, group):
            for queue_id in range(system.broker.topics[topic].read_queue_nums):
                high = store.get_max_offset_in_queue(topic, queue_id)
                if high > 0 and query_offset(system.broker, group, topic, queue_id) != high:
                    return False
    return True
