"""The store's write side: commit log, consume queues and the delay-level rewrite (spec/03-store.md)."""

from __future__ import annotations

import enum

from attrs import evolve, field, frozen
from pyrsistent import PMap, PVector, pmap, pvector

from model.delay_levels import compute_deliver_timestamp, delay_level_to_queue_id
from model.message import (
    PROPERTY_DELAY_TIME_LEVEL,
    PROPERTY_REAL_QUEUE_ID,
    PROPERTY_REAL_TOPIC,
    SCHEDULE_TOPIC,
    Message,
    compute_message_id,
    java_string_hash,
)

EMPTY_QUEUE: PVector = pvector()


class PutMessageStatus(enum.Enum):
    PUT_OK = "PUT_OK"


@frozen
class ConsumeQueueUnit:
    """One consume-queue entry: where the message is in the commit log and its tags code.

    `stored_at` is the virtual time of the put; it differs from the message's store timestamp only for a broker
    whose wall clock was ahead at the put (ST-03, a clock later set back).
    """

    commit_log_offset: int
    size: int
    tags_code: int
    stored_at: int


@frozen
class Store:
    """Commit log keyed by physical offset, and consume queues keyed by (topic, queue id)."""

    commit_log: PMap = field(factory=pmap)
    next_physical_offset: int = 0
    consume_queues: PMap = field(factory=pmap)

    def get_consume_queue(self, topic: str, queue_id: int) -> PVector:
        return self.consume_queues.get((topic, queue_id), EMPTY_QUEUE)

    def get_max_offset_in_queue(self, topic: str, queue_id: int) -> int:
        return len(self.get_consume_queue(topic, queue_id))

    def look_message_by_offset(self, commit_log_offset: int) -> Message | None:
        """lookMessageByOffset: the stored message at a physical offset, or None."""
        return self.commit_log.get(commit_log_offset)

    def get_message(self, topic: str, queue_id: int, queue_offset: int) -> Message | None:
        queue = self.get_consume_queue(topic, queue_id)
        if 0 <= queue_offset < len(queue):
            return self.commit_log[queue[queue_offset].commit_log_offset]
        return None


def compute_stored_size(message: Message) -> int:
    """A stand-in for the encoded size: what advances the physical offset (body + properties + header)."""
    return 100 + len(message.body) + sum(len(k) + len(v) + 2 for k, v in message.properties.items())


def compute_clamped_delay_level(level: int, delays: tuple[int, ...]) -> int:
    """[ST-04] A delay level above the maximum is stored as the maximum."""
    return min(level, len(delays))


def transform_delay_level_message(message: Message, delays: tuple[int, ...]) -> Message:
    """[ST-01] A message with delay level > 0 is parked in SCHEDULE_TOPIC_XXXX queue level - 1, the level clamped
    to the maximum, with its real topic and queue kept in REAL_TOPIC and REAL_QID."""
    level = compute_clamped_delay_level(message.delay_time_level, delays)
    properties = message.properties.update(
        {PROPERTY_DELAY_TIME_LEVEL: str(level), PROPERTY_REAL_TOPIC: message.topic,
         PROPERTY_REAL_QUEUE_ID: str(message.queue_id)}
    )
    return evolve(message, topic=SCHEDULE_TOPIC, queue_id=delay_level_to_queue_id(level), properties=properties)


def compute_tags_code(message: Message, delays: tuple[int, ...]) -> int:
    """[ST-03] A scheduled message's tags code is its deliver timestamp; any other message's is its tags hash."""
    level = compute_clamped_delay_level(message.delay_time_level, delays)
    if message.topic == SCHEDULE_TOPIC and level > 0:
        return compute_deliver_timestamp(delays, level, message.store_timestamp)
    return java_string_hash(message.tags)


def put_message(store: Store, message: Message, now: int, delays: tuple[int, ...], *,
                stored_properties: PMap | None = None, clock_lead: int = 0) -> tuple[Store, Message]:
    """[ST-06] Append a message to the commit log and its consume queue, rewriting a delayed one first (ST-01).

    `stored_properties` is Java's propertiesString: what the commit log keeps when the caller computed it before
    changing the property map (ST-05); the delay check always reads `message.properties`. `clock_lead` models a
    broker wall clock that is ahead of the virtual clock by that many ms (it is set back later, DT-07).
    Returns the new store and the message as stored (offsets, msg id and store time assigned).
    """
    if message.delay_time_level > 0:
        message = transform_delay_level_message(message, delays)
    elif stored_properties is not None:
        message = evolve(message, properties=stored_properties)
    physical = store.next_physical_offset
    key = (message.topic, message.queue_id)
    queue = store.consume_queues.get(key, EMPTY_QUEUE)
    stored = evolve(message, queue_offset=len(queue), commit_log_offset=physical,
                    msg_id=compute_message_id(physical), store_timestamp=now + clock_lead)
    size = compute_stored_size(stored)
    unit = ConsumeQueueUnit(physical, size, compute_tags_code(stored, delays), now)
    store = Store(
        commit_log=store.commit_log.set(physical, stored),
        next_physical_offset=physical + size,
        consume_queues=store.consume_queues.set(key, queue.append(unit)),
    )
    return store, stored
