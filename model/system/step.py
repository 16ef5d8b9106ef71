"""The system step function `(system, event) -> (system, observations)` (spec/11-guarantees.md): each event from
outside goes to its handler, `Advance` to the scheduler (model/system/scheduler.py); model/system/drain.py runs a
system to quiescence."""

from __future__ import annotations

from collections.abc import Callable

from model.broker.pop.config import PopConfig
from model.broker.pop.state import PopGroupConfig
from model.broker.state import PERM_READ, PERM_WRITE, create_broker, get_or_create_topic, is_writeable
from model.broker.store import put_record
from model.client.consume_mode import get_consume_service
from model.client.pop_consumer import on_complete_pop, start_pop_consumer, stop_pop_consumer
from model.client.rebalance import crash, set_members
from model.client.remote_offsets import commit_broker_offset
from model.system.events import (
    AddPopConsumer,
    Advance,
    CompleteConsume,
    CompletePop,
    Crash,
    DeliverOneway,
    ExpireQueueHead,
    LockRequestsFail,
    Produce,
    RefuseRequests,
    RemovePopConsumer,
    RestartBroker,
    SetBrokerPermission,
    SetMembers,
)
from model.system.observations import Produced
from model.system.pop_route import enable_pop, restart_broker
from model.system.route import wake_pulls
from model.system.scheduler import advance
from model.system.state import System
from model.values.config import Config
from model.values.errors import IllegalTransition
from model.values.message import create_message, get_retry_topic, java_string_hash
from model.values.names import GROUP, TOPIC
from model.values.records import discard, evolve, new_tuple


def create_system(config: Config, members: tuple[str, ...] = ("c1",), *, topic_queue_nums: int = 2,
                  subscription: frozenset | None = None, hold_oneway: bool = False,
                  pop_groups: dict[str, PopGroupConfig] | None = None, pop_config: PopConfig | None = None) -> System:
    """[SY-01] A broker with the topic and the group's %RETRY% topic (created at the consumer's first heartbeat,
    with retryQueueNums queues), and the group's instances started and balanced at time 0. With `pop_groups` the
    broker has its POP side too (a 5.x profile): those groups, for POP consumers to join (AddPopConsumer)."""
    broker = create_broker(config, GROUP, {TOPIC: topic_queue_nums})
    if config.is_clustering and config.retry_queue_nums > 0:
        broker, _ = get_or_create_topic(broker, get_retry_topic(GROUP), config.retry_queue_nums,
                                        PERM_READ | PERM_WRITE)
    codes = frozenset(java_string_hash(tag) for tag in subscription) if subscription is not None else frozenset()
    system = System(config=config, broker=broker, topic_queue_nums=topic_queue_nums, subscription=subscription,
                    subscription_codes=codes, hold_oneway=hold_oneway)
    if pop_groups is not None:
        system = enable_pop(system, pop_groups, pop_config)
    system, _ = set_members(system, members)
    return system


def on_produce(system: System, event: Produce) -> tuple[System, list]:
    """A producer's send is stored (SY-01), unless the broker is read-only (SY-13): it registers its topics with its
    own permission, and a producer publishes to writeable queues only, so the send fails and nothing is stored."""
    if not is_writeable(system.broker.perm):
        return system, []
    message = create_message(TOPIC, event.uniq_key, body=event.uniq_key.encode(), tags=event.tags,
                             queue_id=event.queue_id, delay_level=event.delay_level, born_timestamp=system.now)
    store, record, _properties = put_record(system.broker.store, message, system.now, system.config.delay_levels)
    produced = new_tuple(Produced, (record, system.now, ("SY-01",)))
    return evolve(system, broker=evolve(system.broker, store=store)), [produced]


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
    return commit_broker_offset(system, commit.queue, commit.offset, "persist", ("SY-02",), commit.lifetime,
                                commit.client_id)


def on_expire_queue_head(system: System, event: ExpireQueueHead) -> tuple[System, list]:
    """The store deleted the queue's head: its lowest stored offset rises to `event.min_offset` (never falls)."""
    broker = system.broker
    low = max(broker.min_offsets.get(event.queue, 0), event.min_offset)
    return evolve(system, broker=evolve(broker, min_offsets=broker.min_offsets.set(event.queue, low))), []


def on_lock_requests_fail(system: System, event: LockRequestsFail) -> tuple[System, list]:
    """[LK-07] The instance's lock requests start or stop failing."""
    faults = system.lock_faults | {event.client_id} if event.failing else system.lock_faults - {event.client_id}
    return evolve(system, lock_faults=frozenset(faults)), []


def on_set_broker_permission(system: System, event: SetBrokerPermission) -> tuple[System, list]:
    """[SY-13] The broker becomes read-only or writeable again; what is stored and scheduled stays."""
    return evolve(system, broker=evolve(system.broker, perm=event.perm)), []


def on_refuse_requests(system: System, event: RefuseRequests) -> tuple[System, list]:
    """[SY-13] The broker starts (or stops) answering one kind of request with an error code."""
    if event.code is None:
        refusals = discard(system.refusals, event.kind)
    else:
        refusals = system.refusals.set(event.kind, event.code)
    return evolve(system, refusals=refusals), []


def on_add_pop_consumer(system: System, event: AddPopConsumer) -> tuple[System, list]:
    """A POP consumer of one of the cluster's POP groups starts (an instance of that id still running is
    stopped first: a restart)."""
    group = event.consumer.group
    if system.pop_config is None or group not in system.pop.groups:
        raise IllegalTransition("no POP group " + group, "AddPopConsumer", "create_system(pop_groups=...) names them")
    system = stop_pop_consumer(system, event.consumer.client_id)
    return start_pop_consumer(system, event.consumer), []


EVENT_HANDLERS: dict[type, Callable] = {
    Produce: on_produce,
    CompleteConsume: on_complete,
    DeliverOneway: on_deliver_oneway,
    SetMembers: lambda system, event: set_members(system, event.client_ids),
    Crash: lambda system, event: crash(system, event.client_id),
    ExpireQueueHead: on_expire_queue_head,
    LockRequestsFail: on_lock_requests_fail,
    SetBrokerPermission: on_set_broker_permission,
    RefuseRequests: on_refuse_requests,
    AddPopConsumer: on_add_pop_consumer,
    RemovePopConsumer: lambda system, event: (stop_pop_consumer(system, event.client_id), []),
    CompletePop: lambda system, event: on_complete_pop(system, event.request_id, event.result),
    RestartBroker: lambda system, event: restart_broker(system, event.graceful),
}


def step(system: System, event) -> tuple[System, list]:
    """[SY-01] The one transition of the whole system: an event in, the next state and what a user sees out."""
    if isinstance(event, Advance):
        return advance(system, event.until)
    store = system.broker.store
    system, observations = EVENT_HANDLERS[type(event)](system, event)
    # Every state a step returns has woken what it could; an event that put nothing and left no pull held back by
    # the cache checks has nothing new to wake for (wake_pulls' own first checks, without its call).
    if system.broker.store is store and not system.flow_parked:
        return system, observations
    return wake_pulls(system, store), observations
