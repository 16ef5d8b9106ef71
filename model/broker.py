"""Immutable broker state: permissions, topic configs, subscription groups, the store and consumer offsets."""

from __future__ import annotations

import immutables
from attrs import field, frozen

from model.config import Config
from model.records import bounded_repr, evolve, record
from model.schedule import ScheduleState
from model.store import Store

PERM_WRITE = 2
PERM_READ = 4


def is_writeable(perm: int) -> bool:
    return bool(perm & PERM_WRITE)


@frozen
class TopicConfig:
    topic_name: str
    read_queue_nums: int
    write_queue_nums: int
    perm: int = PERM_READ | PERM_WRITE


@frozen
class SubscriptionGroupConfig:
    """The broker's view of a consumer group (SubscriptionGroupConfig): defaults 1 retry queue, 16 retries."""

    group_name: str
    retry_queue_nums: int = 1
    retry_max_times: int = 16


@record  # copied several times per event: model.records.evolve copies its __dict__
class Broker:
    """One broker (master). `consumer_offsets` maps (group, topic, queue id) to the committed offset."""

    __repr__ = bounded_repr  # [SY-12] a failure report never prints the whole state
    perm: int = PERM_READ | PERM_WRITE
    topics: immutables.Map = field(factory=immutables.Map)
    groups: immutables.Map = field(factory=immutables.Map)
    store: Store = field(factory=Store)
    consumer_offsets: immutables.Map = field(factory=immutables.Map)
    # (group, MessageQueue) -> QueueLock: the broker's RebalanceLockManager table.
    queue_locks: immutables.Map = field(factory=immutables.Map)
    # The delay-level scheduler (ScheduleMessageService): started with the broker at time 0 (DT-01).
    schedule: ScheduleState = field(factory=ScheduleState)


BROKER_LOCK_MAX_LIVE_TIME = 60_000


@frozen
class QueueLock:
    """A broker-side queue lock held by one client, renewed at `last_update_timestamp` (lease 60 s)."""

    client_id: str
    last_update_timestamp: int


def is_lock_expired(lock: QueueLock, now: int) -> bool:
    return now - lock.last_update_timestamp > BROKER_LOCK_MAX_LIVE_TIME


def is_lock_all_expired(broker: Broker, group: str, now: int) -> bool:
    """RebalanceLockManager.isLockAllExpired: no queue lock of the group is still within its 60 s lease."""
    return all(is_lock_expired(lock, now) for (g, _mq), lock in broker.queue_locks.items() if g == group)


def create_broker(config: Config, group: str, topics: dict[str, int]) -> Broker:
    """A writeable broker with the group's subscription config (from `config`) and the given topics."""
    group_config = SubscriptionGroupConfig(group, config.retry_queue_nums, config.retry_max_times)
    topic_configs = {name: TopicConfig(name, nums, nums) for name, nums in topics.items()}
    return Broker(topics=immutables.Map(topic_configs), groups=immutables.Map({group: group_config}))


def get_or_create_topic(broker: Broker, topic: str, queue_nums: int, perm: int) -> tuple[Broker, TopicConfig]:
    """[SB-05] createTopicInSendMessageBackMethod: an existing topic config is returned unchanged, else created."""
    existing = broker.topics.get(topic)
    if existing is not None:
        return broker, existing
    created = TopicConfig(topic, queue_nums, queue_nums, perm)
    return evolve(broker, topics=broker.topics.set(topic, created)), created


def commit_offset(broker: Broker, group: str, topic: str, queue_id: int, offset: int) -> Broker:
    """[OS-05] The broker stores a committed offset unconditionally: a smaller value replaces a larger one."""
    return evolve(broker, consumer_offsets=broker.consumer_offsets.set((group, topic, queue_id), offset))


def query_offset(broker: Broker, group: str, topic: str, queue_id: int) -> int:
    """The committed offset, or -1 when the group never committed one for that queue."""
    return broker.consumer_offsets.get((group, topic, queue_id), -1)


def on_query_consumer_offset(broker: Broker, group: str, topic: str, queue_id: int, min_offset: int = 0) -> int | None:
    """[RB-04] QUERY_CONSUMER_OFFSET: the committed offset; with none, 0 while the queue's first message is still
    stored (the model's store keeps every message in memory, so checkInDiskByConsumeOffset is false), else None:
    QUERY_NOT_FOUND."""
    stored = query_offset(broker, group, topic, queue_id)
    if stored >= 0:
        return stored
    return 0 if min_offset <= 0 else None
