"""The broker's POP state beside the 4.x `Broker`: pending checkpoints, FIFO order info, the group settings only
POP reads, and what the broker last persisted (spec/14-pop.md)."""

from __future__ import annotations

from typing import NamedTuple

import immutables
from attrs import field, frozen

from model.broker.pop.config import PopConfig
from model.broker.pop.retry_policy import GroupRetryPolicy
from model.broker.state import Broker, create_broker
from model.values.config import Config
from model.values.errors import ConfigError
from model.values.records import bounded_repr, evolve, record
from model.values.timer_heap import heap_peek, heap_pop, heap_push


class Checkpoint(NamedTuple):
    """[PO-04] PopCheckPoint: one pop of one queue (or one changeInvisibleTime), its popped offsets and the bit
    set of those acked. The revive service merges acks into it by `key` (its mergeKey) and revives it at
    `revive_time` (IV-01)."""

    topic: str
    group: str
    queue_id: int
    start_offset: int
    pop_time: int
    invisible_time: int
    offsets: tuple[int, ...]
    revive_queue_id: int
    acked: int = 0

    @property
    def key(self) -> tuple:
        return self.topic, self.group, self.queue_id, self.start_offset, self.pop_time

    @property
    def revive_time(self) -> int:
        return self.pop_time + self.invisible_time

    @property
    def is_done(self) -> bool:
        return self.acked == (1 << len(self.offsets)) - 1

    def get_unacked_offsets(self) -> tuple[int, ...]:
        return tuple(offset for index, offset in enumerate(self.offsets) if not self.acked >> index & 1)


class OrderInfo(NamedTuple):
    """[FF-01] ConsumerOrderInfoManager.OrderInfo of one queue of a group: the last orderly pop (attempt id, pop
    time, invisible time, offsets), which of them were acked, per-offset next visible times and attempt counts."""

    attempt_id: str | None
    pop_time: int
    invisible_time: int
    offsets: tuple[int, ...]
    committed: int = 0
    next_visible: immutables.Map = immutables.Map()
    consumed: immutables.Map = immutables.Map()


@frozen
class PopGroupConfig:
    """The parts of SubscriptionGroupConfig that only POP and the proxy read (retryMaxTimes stays in the broker's
    SubscriptionGroupConfig): consumeEnable, consumeMessageOrderly and the group retry policy."""

    consume_enable: bool = True
    consume_message_orderly: bool = False
    retry_policy: GroupRetryPolicy = field(factory=GroupRetryPolicy)


@record
class PopState:
    """Checkpoints stored and not yet revived (by key), those revived since the last persist (a crash revives
    them again, PO-10), the FIFO order info by (topic, group, queue id), and the last persisted consumer offsets
    and order info. Every map holds only what is in flight or unpersisted: its size does not grow with history.

    `due` is a heap (model/values/timer_heap.py) of (revive time, key): the order the revive service takes the
    checkpoints (IV-01). `put_checkpoint` pushes a checkpoint's entry; an entry whose checkpoint is gone or has
    another revive time since is stale, and is popped once it reaches the top (so the top is always pending): the
    heap holds at most the entries of the last invisible time's checkpoints."""

    __repr__ = bounded_repr
    checkpoints: immutables.Map = field(factory=immutables.Map)
    due: tuple | None = None
    revived: immutables.Map = field(factory=immutables.Map)
    order_infos: immutables.Map = field(factory=immutables.Map)
    groups: immutables.Map = field(factory=immutables.Map)
    persisted_offsets: immutables.Map = field(factory=immutables.Map)
    persisted_order_infos: immutables.Map = field(factory=immutables.Map)
    ck_number: int = 0


@record
class PopBroker:
    """A 5.x broker: the 4.x `Broker` (store, topics, groups, consumer offsets) and its POP state, with both
    configurations."""

    __repr__ = bounded_repr
    broker: Broker
    pop: PopState
    config: Config
    pop_config: PopConfig


def create_pop_broker(config: Config, group: str, topics: dict[str, int], pop_config: PopConfig | None = None,
                      group_config: PopGroupConfig | None = None) -> PopBroker:
    """A writeable 5.x broker with one group (its retry settings from `config`) and the given topics; a profile
    without server-side retry (4.x) is a ConfigError."""
    if not config.profile.server_side_retry:
        raise ConfigError("profile", config.profile.name, "a profile with server-side retry (5.0.0 or later)")
    pop = PopState(groups=immutables.Map({group: group_config or PopGroupConfig()}))
    return PopBroker(create_broker(config, group, topics), pop, config, pop_config or PopConfig())


def get_pop_group(state: PopBroker, group: str) -> PopGroupConfig:
    return state.pop.groups.get(group) or PopGroupConfig()


def set_broker(state: PopBroker, broker: Broker) -> PopBroker:
    return evolve(state, broker=broker)


def set_pop(state: PopBroker, **changes) -> PopBroker:
    return evolve(state, pop=evolve(state.pop, **changes))


def put_checkpoint(state: PopBroker, slot: tuple, ck: Checkpoint) -> PopBroker:
    """The pending checkpoint at `slot` becomes `ck`, in the revive order at its revive time."""
    pop = state.pop
    old = pop.checkpoints.get(slot)
    checkpoints = pop.checkpoints.set(slot, ck)
    if old is not None and old.revive_time == ck.revive_time:  # an ack marked: the same place in the order
        return set_pop(state, checkpoints=checkpoints)
    due = heap_push(pop.due, (ck.revive_time, slot), None)
    return set_pop(state, checkpoints=checkpoints, due=pop_stale(due, checkpoints))


def drop_checkpoint(state: PopBroker, slot: tuple) -> PopBroker:
    """The checkpoint at `slot` is no longer pending (done, or revived)."""
    pop = state.pop
    if slot not in pop.checkpoints:
        return state
    checkpoints = pop.checkpoints.delete(slot)
    return set_pop(state, checkpoints=checkpoints, due=pop_stale(pop.due, checkpoints))


def pop_stale(due: tuple | None, checkpoints: immutables.Map) -> tuple | None:
    """The revive order without the stale entries on its top: the first entry left names a pending checkpoint at
    its revive time."""
    while due is not None:
        (revive_time, slot), _item = heap_peek(due)
        ck = checkpoints.get(slot)
        if ck is not None and ck.revive_time == revive_time:
            break
        due = heap_pop(due)[2]
    return due


def get_first_due(pop: PopState) -> tuple[int, tuple] | None:
    """(revive time, key) of the pending checkpoint the revive service takes first, None without one."""
    return None if pop.due is None else heap_peek(pop.due)[0]
