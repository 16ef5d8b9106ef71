"""With pop_adapter.py, the only module of the server that imports model/: wire requests in, the model's broker
decisions out.

It holds the one reference to the model's broker state. Model time is milliseconds since the server started.
"""

from __future__ import annotations

import random

import attrs
import immutables

from conformance.codec.message import StoredMessage, create_message_id
from conformance.runner.settings import BrokerSettings
from model.broker.consumer_offsets import commit_offset, on_query_consumer_offset
from model.broker.delay_timer import get_level_offset, get_next_schedule_time, on_broker_restart, on_schedule_timer
from model.broker.locks import on_lock_batch, on_unlock_batch
from model.broker.pull_handler import get_broker_pull, get_pull_refusal
from model.broker.retry_send import on_broker_send_retry_message, on_send_message
from model.broker.send_back import RANDOM_BOUND, SendBackRequest, on_consumer_send_msg_back
from model.broker.state import PERM_READ, PERM_WRITE, Broker, SubscriptionGroupConfig, TopicConfig
from model.values.config import Config
from model.values.message import (
    PROPERTY_ORIGIN_MESSAGE_ID,
    SCHEDULE_TOPIC,
    Message,
    MessageQueue,
    compute_message_id,
    get_retry_topic,
    is_retry_topic,
    java_string_hash,
)

PROPERTY_TAGS = "TAGS"
PROPERTY_FIRST_POP_TIME = "1ST_POP_TIME"
# BrokerController 4.9.8 persists the consumer offsets (consumerOffset.json) 10 s after its start, then every
# flushConsumerOffsetInterval (5 s by default): scheduleAtFixedRate(consumerOffsetManager::persist, 10000, 5000).
OFFSET_FLUSH_FIRST_MS, OFFSET_FLUSH_INTERVAL_MS = 10_000, 5_000
SCHEDULE_TOPIC_QUEUE_NUM = 18
MODEL_ID_HOST = compute_message_id(0)[:16]


def get_last_offset_flush(started_at: int, until: int) -> int | None:
    """When a broker started at `started_at` last persisted its consumer offsets, at or before `until`."""
    first = started_at + OFFSET_FLUSH_FIRST_MS
    return None if until < first else until - (until - first) % OFFSET_FLUSH_INTERVAL_MS


def get_subscribed_tags(expression: str) -> frozenset | None:
    """The tags of a TAG subscription expression ("TagA || TagB"), None for all ("*" or empty)."""
    tags = frozenset(part.strip() for part in (expression or "").split("||") if part.strip())
    return None if not tags or "*" in tags else tags


@attrs.define
class BrokerAdapter:
    settings: BrokerSettings
    config: Config
    broker: Broker
    # The broker's listening address: clients send CONSUMER_SEND_MSG_BACK to a message's store host (the C++
    # client 1.2.3 does, MQClientAPIImpl.cpp), so it must be ours. The model's offset msg ids name one fixed host
    # (model.values.message.compute_message_id); to_model_id/to_wire_id translate the 16-hex-digit host prefix.
    store_host: tuple[str, int] = ("127.0.0.1", 10911)
    rng: random.Random = attrs.field(factory=lambda: random.Random(0))
    # Wall-clock ms at model time 0: a real broker stamps storeTimestamp with System.currentTimeMillis (CommitLog
    # 4.9.8) and clients send wall-clock timestamps (SEARCH_OFFSET_BY_TIMESTAMP); the model counts from 0.
    epoch_ms: int = 0
    # What each successful CONSUMER_SEND_MSG_BACK stored: (model time, the commit-log offset it named, the copy).
    sent_back: list = attrs.field(factory=list)
    # What each successful send to a %RETRY% topic stored (a Java client's fallback after a failed send-back,
    # DefaultMQPushConsumerImpl.sendMessageBack): (model time, the copy).
    retry_sent: list = attrs.field(factory=list)
    # When the broker (re)started and its consumer offsets as last persisted (consumerOffset.json), with when they
    # last changed: what a crash keeps of them (`crash`).
    started_at: int = 0
    flushed_offsets: immutables.Map = attrs.field(factory=immutables.Map)
    offsets_changed_at: int = 0

    def ensure_topic(self, topic: str) -> TopicConfig:
        existing = self.broker.topics.get(topic)
        if existing is None:
            nums = self.settings.retry_queue_nums if topic.startswith("%RETRY%") else self.settings.topic_queue_nums
            existing = TopicConfig(topic, nums, nums)
            self.broker = attrs.evolve(self.broker, topics=self.broker.topics.set(topic, existing))
        return existing

    def ensure_group(self, group: str) -> None:
        if group not in self.broker.groups:
            config = SubscriptionGroupConfig(group, self.settings.retry_queue_nums, self.settings.retry_max_times)
            self.broker = attrs.evolve(self.broker, groups=self.broker.groups.set(group, config))
            self.ensure_topic(get_retry_topic(group))

    def create_topic(self, topic: str, read_queue_nums: int, write_queue_nums: int, perm: int) -> None:
        """UPDATE_AND_CREATE_TOPIC: the topic's config replaced as the request gives it."""
        config = TopicConfig(topic, read_queue_nums, write_queue_nums, perm)
        self.broker = attrs.evolve(self.broker, topics=self.broker.topics.set(topic, config))

    def create_group(self, group: str, retry_queue_nums: int, retry_max_times: int) -> None:
        """UPDATE_AND_CREATE_SUBSCRIPTIONGROUP: the group's config replaced; unlike a heartbeat, no %RETRY% topic."""
        config = SubscriptionGroupConfig(group, retry_queue_nums, retry_max_times)
        self.broker = attrs.evolve(self.broker, groups=self.broker.groups.set(group, config))

    def send(self, topic: str, queue_id: int, body: bytes, properties: dict[str, str], flag: int,
             born_timestamp: int, header: tuple[int | None, int | None], now: int):
        """SEND_MESSAGE(_V2): a %RETRY% send is the model's RS handler; any other is stored by the model's store.

        `header` is the request's (reconsumeTimes, maxReconsumeTimes). Returns (code, remark, stored or None, rules).
        """
        message = Message(topic, body, properties.get(PROPERTY_TAGS), immutables.Map(properties), queue_id, -1, -1,
                          "", header[0] or 0, flag, born_timestamp)
        if topic not in self.broker.topics:
            # msgCheck (AbstractSendMessageProcessor 4.9.8 L182-L215) creates any missing topic, a %RETRY% one
            # included, from TBW102 with the producer's defaultTopicQueueNums (4) before the retry rules run; a
            # consumer's heartbeat would have created a %RETRY% topic with retryQueueNums queues (ensure_group).
            self.create_topic(topic, self.settings.topic_queue_nums, self.settings.topic_queue_nums, 6)
        if is_retry_topic(topic):  # the broker's half alone: a wire request has no producer route (RS-07)
            self.broker, result = on_broker_send_retry_message(self.broker, self.config, message, *header, now)
        else:
            self.broker, result = on_send_message(self.broker, self.config, message, header, now, 0)
        if is_retry_topic(topic) and result.stored is not None:
            self.retry_sent.append((now, result.stored))
        stored = None if result.stored is None else self.to_wire(result.stored)
        return result.code.value, result.remark, stored, result.rules

    def send_back(self, group: str, offset: int, delay_level: int, origin_topic: str, origin_msg_id: str,
                  max_reconsume_times: int | None, now: int):
        """CONSUMER_SEND_MSG_BACK: the model's handler decides (SB-01..SB-14); returns (code, remark, rules)."""
        request = SendBackRequest(group, origin_topic, offset, delay_level, self.to_model_id(origin_msg_id),
                                  max_reconsume_times)
        self.broker, result = on_consumer_send_msg_back(self.broker, self.config, request, now,
                                                        self.rng.randrange(RANDOM_BOUND))
        if result.stored is not None:
            self.sent_back.append((now, offset, result.stored))
        return result.code.value, result.remark, result.rules

    def pull(self, topic: str, queue_id: int, offset: int, max_nums: int, expression: str = "*"):
        """PULL_MESSAGE's store lookup (the model's get_broker_pull, its tag-hash filter included [PL-04]):
        (status, messages, next, min, max). `expression` is the request's subscription, e.g. "TagA || TagB"."""
        refusal = get_pull_refusal(self.broker, MessageQueue(topic, queue_id))
        if refusal is not None:
            return refusal, [], offset, 0, 0
        tags = get_subscribed_tags(expression)
        # A retry topic is never filtered (its messages carry the original tags); None lets every unit through.
        codes = None if tags is None or is_retry_topic(topic) else frozenset(java_string_hash(tag) for tag in tags)
        status, found, next_offset = get_broker_pull(self.broker, MessageQueue(topic, queue_id), offset, 0, codes,
                                                     max(1, min(max_nums, 1024)))
        return status, [self.to_wire(m) for m in found], next_offset, 0, self.max_offset(topic, queue_id)

    def max_offset(self, topic: str, queue_id: int) -> int:
        return self.broker.store.get_max_offset_in_queue(topic, queue_id)

    def min_offset(self, topic: str, queue_id: int) -> int:
        return self.broker.store.get_min_offset_in_queue(topic, queue_id)

    def search_offset(self, topic: str, queue_id: int, timestamp: int) -> int:
        return self.broker.store.get_offset_in_queue_by_time(topic, queue_id, timestamp - self.epoch_ms)

    def query_offset(self, group: str, topic: str, queue_id: int) -> int | None:
        """QUERY_CONSUMER_OFFSET: the model's answer (None: QUERY_NOT_FOUND)."""
        low = self.min_offset(topic, queue_id)
        return on_query_consumer_offset(self.broker, group, topic, queue_id, low,
                                        self.config.profile.query_offset_zero_needs_stored_head)

    def commit_offset(self, group: str, topic: str, queue_id: int, offset: int, now: int = 0) -> None:
        """A committed offset (UPDATE_CONSUMER_OFFSET, a pull's commitOffset) at model time `now`."""
        self.sync_flushed_offsets(now - 1)
        self.broker = commit_offset(self.broker, group, topic, queue_id, offset)
        self.offsets_changed_at = max(self.offsets_changed_at, now)

    def sync_flushed_offsets(self, until: int) -> None:
        """Bring `flushed_offsets` up to the broker's last offset flush at or before `until`: a flush since the
        offsets last changed wrote them as they are (a flush in the ms of a change sees it)."""
        last = get_last_offset_flush(self.started_at, until)
        if last is not None and last >= self.offsets_changed_at:
            self.flushed_offsets = self.broker.consumer_offsets

    def crash(self, now: int) -> None:
        """The broker killed at `now` (kill -9): the consumer offsets fall back to the last flushed ones and the
        queue locks (RebalanceLockManager, memory only) are gone; the store, topics and groups (persisted on each
        change) stay. The delay offsets not yet flushed are lost at the restart (`restart`)."""
        self.sync_flushed_offsets(now)
        self.broker = attrs.evolve(self.broker, consumer_offsets=self.flushed_offsets, queue_locks=immutables.Map())

    def restart(self, now: int) -> None:
        """The killed broker started again at `now` on its store: the delay timer resumes from its flushed offsets
        (on_broker_restart, DT-09: the copies delivered since the last flush are delivered again), the consumer
        offsets are those loaded from consumerOffset.json, the offset flush restarts its schedule."""
        self.broker = on_broker_restart(self.broker, self.config, now, graceful=False)
        self.started_at, self.offsets_changed_at = now, now
        self.flushed_offsets = self.broker.consumer_offsets

    def lock(self, group: str, queues, client_id: str, now: int) -> list[tuple[str, int]]:
        result = on_lock_batch(self.broker, group, [MessageQueue(t, q) for t, q in queues], client_id, now)
        self.broker = result.broker
        return sorted((mq.topic, mq.queue_id) for mq in result.granted)

    def unlock(self, group: str, queues, client_id: str) -> None:
        self.broker = on_unlock_batch(self.broker, group, [MessageQueue(t, q) for t, q in queues], client_id)

    def set_perm(self, perm: int) -> None:
        self.broker = attrs.evolve(self.broker, perm=perm)

    def next_timer_due(self) -> int | None:
        return get_next_schedule_time(self.broker, self.config)

    def delay_offsets(self) -> dict[int, int]:
        """The delay timer's offsetTable (GET_ALL_DELAY_OFFSET): per level of the table, the next
        SCHEDULE_TOPIC_XXXX queue offset its deliver task moves to the real topic."""
        return {level: get_level_offset(self.broker.schedule, level)
                for level in range(1, self.config.max_delay_level + 1)}

    def fire_timer(self, now: int) -> int:
        """Let the model's delay timer fire at `now`; returns how many delayed messages it delivered."""
        self.broker, deliveries = on_schedule_timer(self.broker, self.config, now)
        return len(deliveries)

    def wire_id_host(self) -> str:
        return create_message_id(self.store_host, 0)[:16]

    def to_model_id(self, msg_id: str) -> str:
        host = self.wire_id_host()
        return MODEL_ID_HOST + msg_id[16:] if msg_id.startswith(host) and len(msg_id) == 32 else msg_id

    def to_wire_id(self, msg_id: str) -> str:
        return self.wire_id_host() + msg_id[16:] if msg_id.startswith(MODEL_ID_HOST) else msg_id

    def to_wire(self, message: Message) -> StoredMessage:
        properties = dict(message.properties)
        if PROPERTY_ORIGIN_MESSAGE_ID in properties:
            properties[PROPERTY_ORIGIN_MESSAGE_ID] = self.to_wire_id(properties[PROPERTY_ORIGIN_MESSAGE_ID])
        if PROPERTY_FIRST_POP_TIME in properties:  # a 5.x pop time (IV-05), in the broker's wall-clock ms
            properties[PROPERTY_FIRST_POP_TIME] = str(int(properties[PROPERTY_FIRST_POP_TIME]) + self.epoch_ms)
        return StoredMessage(topic=message.topic, body=message.body, queue_id=message.queue_id,
                             queue_offset=message.queue_offset, commit_log_offset=message.commit_log_offset,
                             properties=properties, flag=message.flag, born_timestamp=message.born_timestamp,
                             store_timestamp=message.store_timestamp + self.epoch_ms,
                             store_host=self.store_host, born_host=("127.0.0.1", 0),
                             reconsume_times=message.reconsume_times)


def create_broker_adapter(settings: BrokerSettings) -> BrokerAdapter:
    config = Config(profile=settings.profile, message_delay_level=settings.message_delay_level,
                    retry_max_times=settings.retry_max_times, retry_queue_nums=settings.retry_queue_nums)
    adapter = BrokerAdapter(settings, config, Broker(perm=settings.broker_perm))
    # The system topic TopicConfigManager 4.9.8 creates at start (L125-L131): the delay timer's 18 queues, readable
    # as on the real broker.
    adapter.create_topic(SCHEDULE_TOPIC, SCHEDULE_TOPIC_QUEUE_NUM, SCHEDULE_TOPIC_QUEUE_NUM, PERM_READ | PERM_WRITE)
    for group in settings.groups:
        adapter.ensure_group(group)
    return adapter
