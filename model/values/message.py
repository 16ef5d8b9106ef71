"""Messages as the broker stores them and consumers see them (MessageExt), with RocketMQ's property names."""

from __future__ import annotations

from collections.abc import Mapping
from typing import NamedTuple

import immutables

from model.values.records import discard, evolve, new_tuple

# Property keys, exactly as MessageConst spells them.
PROPERTY_DELAY_TIME_LEVEL = "DELAY"
PROPERTY_RETRY_TOPIC = "RETRY_TOPIC"
PROPERTY_ORIGIN_MESSAGE_ID = "ORIGIN_MESSAGE_ID"
PROPERTY_REAL_TOPIC = "REAL_TOPIC"
PROPERTY_REAL_QUEUE_ID = "REAL_QID"
PROPERTY_RECONSUME_TIME = "RECONSUME_TIME"
PROPERTY_MAX_RECONSUME_TIMES = "MAX_RECONSUME_TIMES"
PROPERTY_UNIQ_CLIENT_MESSAGE_ID_KEYIDX = "UNIQ_KEY"
PROPERTY_CONSUME_START_TIMESTAMP = "CONSUME_START_TIME"
PROPERTY_TAGS = "TAGS"
PROPERTY_WAIT_STORE_MSG_OK = "WAIT"

RETRY_GROUP_TOPIC_PREFIX = "%RETRY%"
DLQ_GROUP_TOPIC_PREFIX = "%DLQ%"
SCHEDULE_TOPIC = "SCHEDULE_TOPIC_XXXX"


def get_retry_topic(group: str) -> str:
    return RETRY_GROUP_TOPIC_PREFIX + group


def get_dlq_topic(group: str) -> str:
    return DLQ_GROUP_TOPIC_PREFIX + group


def is_retry_topic(topic: str) -> bool:
    return topic.startswith(RETRY_GROUP_TOPIC_PREFIX)


def is_dlq_topic(topic: str) -> bool:
    return topic.startswith(DLQ_GROUP_TOPIC_PREFIX)


def remove_property(properties: Mapping, key: str) -> Mapping:
    """The properties without `key` (unchanged when absent)."""
    return discard(properties, key)


class MessageQueue(NamedTuple):
    """A queue of a topic on the (one modelled) broker, ordered by (topic, queue id).

    A named tuple, not an attrs record: it is a map key many times per consumed message (benchmarks/NOTES.md).
    """

    topic: str
    queue_id: int


class Message(NamedTuple):
    """A message: what a producer sends (offsets -1) or what the store holds and a pull returns (MessageExt).

    A named tuple, read by name and copied by `evolve` (benchmarks/NOTES.md says why not an attrs record).
    `properties` is a persistent map (immutables.Map), so copying a message never copies its properties.
    """

    topic: str
    body: bytes = b""
    tags: str | None = None
    properties: Mapping = immutables.Map()
    queue_id: int = 0
    queue_offset: int = -1
    commit_log_offset: int = -1
    msg_id: str = ""
    reconsume_times: int = 0
    flag: int = 0
    born_timestamp: int = 0
    store_timestamp: int = 0

    def get_property(self, key: str, default: str | None = None) -> str | None:
        return self.properties.get(key, default)

    def put_property(self, key: str, value: object) -> Message:
        return evolve(self, properties=self.properties.set(key, str(value)))

    def clear_property(self, key: str) -> Message:
        return evolve(self, properties=remove_property(self.properties, key))

    @property
    def delay_time_level(self) -> int:
        """getDelayTimeLevel(): the DELAY property as an int, 0 when absent."""
        value = self.properties.get(PROPERTY_DELAY_TIME_LEVEL)
        return int(value) if value else 0

    def with_delay_time_level(self, level: int) -> Message:
        return self.put_property(PROPERTY_DELAY_TIME_LEVEL, level)

    @property
    def message_queue(self) -> MessageQueue:
        return MessageQueue(self.topic, self.queue_id)

    @property
    def uniq_key(self) -> str | None:
        """The producer-assigned id; every retry and DLQ copy carries it because properties are copied."""
        return self.properties.get(PROPERTY_UNIQ_CLIENT_MESSAGE_ID_KEYIDX)

    @property
    def origin_message_id(self) -> str | None:
        return self.properties.get(PROPERTY_ORIGIN_MESSAGE_ID)


def create_message(topic: str, uniq_key: str, *, body: bytes = b"", tags: str | None = None, queue_id: int = 0,
                   delay_level: int = 0, born_timestamp: int = 0) -> Message:
    """A producer's new message with its unique key (and optional delay level)."""
    properties = {PROPERTY_UNIQ_CLIENT_MESSAGE_ID_KEYIDX: uniq_key}
    if tags is not None:
        properties[PROPERTY_TAGS] = tags
    if delay_level:
        properties[PROPERTY_DELAY_TIME_LEVEL] = str(delay_level)
    return new_tuple(Message,
                      (topic, body, tags, immutables.Map(properties), queue_id, -1, -1, "", 0, 0, born_timestamp, 0))


def compute_message_id(commit_log_offset: int) -> str:
    """The broker's offset message id (store host + commit-log offset); the host is one fixed modelled broker."""
    return "7F00000100002A9F%016X" % commit_log_offset  # noqa: UP031 (a quarter faster than the f-string)


def get_client_msg_id(message: Message) -> str:
    """MessageClientExt.getMsgId(): what a client calls a message's id is its UNIQ_KEY, else the offset msg id."""
    return message.uniq_key or message.msg_id


def compute_origin_message_id(message: Message, fallback_id: str) -> str:
    """A retry keeps the first failure's ORIGIN_MESSAGE_ID; a blank or missing one becomes `fallback_id`: the
    broker's send-back copy and the client's fallback both set it so [SB-13]."""
    existing = message.origin_message_id
    return existing if existing and existing.strip() else fallback_id


def java_string_hash(text: str | None) -> int:
    """String.hashCode(): the tags code a consume-queue unit stores for a normal message (0 for no tags)."""
    if not text:
        return 0
    value = 0
    units = text.encode("utf-16-be")
    for index in range(0, len(units), 2):
        value = (31 * value + (units[index] << 8 | units[index + 1])) & 0xFFFFFFFF
    return value - (1 << 32) if value >= 1 << 31 else value
