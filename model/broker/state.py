"""Immutable broker state: permissions, topic configs, subscription groups, the store and consumer offsets."""

from __future__ import annotations

import immutables
from attrs import field, frozen

from model.broker.schedule_state import ScheduleState
from model.broker.store import Store
from model.values.config import Config
from model.values.records import bounded_repr, evolve, record

PERM_WRITE = 2
PERM_READ = 4


def is_writeable(perm: int) -> bool:
    return bool(perm & PERM_WRITE)


def is_readable(perm: int) -> bool:
    return bool(perm & PERM_READ)


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


@record  # copied several times per event: model.values.records.evolve copies its __dict__
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
    # MessageQueue -> the lowest offset still stored (ExpireQueueHead: the store deleted the queue's head); 0 if absent.
    min_offsets: immutables.Map = field(factory=immutables.Map)


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
