"""The store's write side: commit log, consume queues and the delay-level rewrite (spec/03-store.md)."""

from __future__ import annotations

import enum
from collections.abc import Iterator, Mapping
from itertools import chain

import immutables
from attrs import field, frozen
from pyrsistent import PVector, pvector

from model.append_log import EMPTY_LOG, AppendLog
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
from model.records import bounded_repr, evolve, record

# A consume queue is an AppendLog of units, indexed by queue offset.
EMPTY_QUEUE = EMPTY_LOG


class PutMessageStatus(enum.Enum):
    PUT_OK = "PUT_OK"


@frozen
class ConsumeQueueUnit:
    """One consume-queue entry: where the message is in the commit log and its tags code.

    `stored_at` is the virtual time of the put; it differs from the message's store timestamp only for a broker
    whose wall clock was ahead at the put (ST-03, a clock later set back). `log_index` is the message's position in
    the model's commit log (a model detail: RocketMQ reads the commit log at the physical offset).

    The queues hold each unit as a plain tuple of these five ints, in this order (a record only for readers of
    `Store.get_consume_queue`): CPython's collector stops tracking a tuple of ints, so a stored message costs one
    object less for every collection to walk, and a full collection of a large store walks them all.
    """

    commit_log_offset: int
    size: int
    tags_code: int
    stored_at: int
    log_index: int


# Positions in a raw unit tuple, for the model's own hot paths.
UNIT_COMMIT_LOG_OFFSET, UNIT_SIZE, UNIT_TAGS_CODE, UNIT_STORED_AT, UNIT_LOG_INDEX = range(5)


@frozen
class ConsumeQueue:
    """A consume queue as its readers see it: sized, and indexed by queue offset to a ConsumeQueueUnit."""

    units: AppendLog

    def __len__(self) -> int:
        return len(self.units)

    def __getitem__(self, queue_offset: int) -> ConsumeQueueUnit:
        return ConsumeQueueUnit(*self.units[queue_offset])


# Positions in a commit-log record: a message's fields in the order of Message, except the properties, which
# follow the other fields flat, name and value in turn, from RECORD_PROPERTIES to the end.
(RECORD_TOPIC, RECORD_BODY, RECORD_TAGS, RECORD_QUEUE_ID, RECORD_QUEUE_OFFSET, RECORD_COMMIT_LOG_OFFSET,
 RECORD_MSG_ID, RECORD_RECONSUME_TIMES, RECORD_FLAG, RECORD_BORN_TIMESTAMP, RECORD_STORE_TIMESTAMP,
 RECORD_PROPERTIES) = range(12)


def compute_flat_properties(properties: Mapping) -> tuple:
    """A property map as one flat tuple: name, value, name, value, ..."""
    return tuple(chain.from_iterable(properties.items()))


def get_record_property_pairs(record: tuple) -> Iterator[tuple[str, str]]:
    """The (name, value) pairs of the properties a record holds."""
    return zip(record[RECORD_PROPERTIES::2], record[RECORD_PROPERTIES + 1::2], strict=True)


def get_record_properties(record: tuple) -> dict:
    """The properties a record holds, as a dict."""
    return dict(get_record_property_pairs(record))


def compute_log_record(message: Message) -> tuple:
    """The commit log's copy of a stored message: one flat tuple of its fields, the properties last.

    Flat, so that CPython's cyclic collector stops tracking it the first time it looks at it: a tuple is untracked
    once everything in it is, and a nested tuple of properties (a young child, examined after its parent) kept
    each record tracked through several collections. A Message and its property map would be three tracked objects
    that every full collection walks, once per message ever stored.
    """
    return (message.topic, message.body, message.tags, message.queue_id, message.queue_offset,
            message.commit_log_offset, message.msg_id, message.reconsume_times, message.flag, message.born_timestamp,
            message.store_timestamp) + compute_flat_properties(message.properties)


def compute_logged_message(record: tuple) -> Message:
    """The message a commit-log record holds (the inverse of compute_log_record)."""
    properties = immutables.Map(get_record_property_pairs(record))
    return Message(record[0], record[1], record[2], properties, *record[RECORD_QUEUE_ID:RECORD_PROPERTIES])


def compute_draft_record(topic: str, body: bytes, tags: str | None, flat_properties: tuple, queue_id: int,
                         reconsume_times: int, flag: int, born_timestamp: int, store_timestamp: int) -> tuple:
    """A record about to be put: every field but the queue offset, physical offset and msg id, which the put
    assigns (append_record)."""
    return (topic, body, tags, queue_id, -1, -1, "", reconsume_times, flag, born_timestamp,
            store_timestamp) + flat_properties


@record
class Store:
    """Commit log in physical-offset order (of log records), and consume queues keyed by (topic, queue id)."""

    __repr__ = bounded_repr  # [SY-12] a failure report never prints the whole state
    commit_log: AppendLog = EMPTY_LOG
    next_physical_offset: int = 0
    consume_queues: immutables.Map = field(factory=immutables.Map)
    # The queues of SCHEDULE_TOPIC_XXXX again, by queue id: the scheduler reads all of them at every event (DT-04).
    schedule_queues: PVector = field(factory=pvector)

    def get_consume_queue(self, topic: str, queue_id: int) -> ConsumeQueue:
        return ConsumeQueue(self.get_queue_units(topic, queue_id))

    def get_queue_units(self, topic: str, queue_id: int) -> AppendLog:
        """The queue's raw units: (commit log offset, size, tags code, stored at) tuples by queue offset."""
        return self.consume_queues.get((topic, queue_id), EMPTY_QUEUE)

    def get_max_offset_in_queue(self, topic: str, queue_id: int) -> int:
        return len(self.get_queue_units(topic, queue_id))

    def get_min_offset_in_queue(self, topic: str, queue_id: int) -> int:
        """GET_MIN_OFFSET: 0, since the model's store never deletes a message."""
        return 0

    def get_offset_in_queue_by_time(self, topic: str, queue_id: int, timestamp: int) -> int:
        """SEARCH_OFFSET_BY_TIMESTAMP: the first offset stored at or after `timestamp`, else the max offset."""
        high = self.get_max_offset_in_queue(topic, queue_id)
        return next((offset for offset in range(high)
                     if self.get_message(topic, queue_id, offset).store_timestamp >= timestamp), high)

    def look_message_by_offset(self, commit_log_offset: int) -> Message | None:
        """lookMessageByOffset: the stored message at a physical offset, or None."""
        index = self.commit_log.bisect_left(commit_log_offset, RECORD_COMMIT_LOG_OFFSET)
        if index < len(self.commit_log) and self.commit_log[index][RECORD_COMMIT_LOG_OFFSET] == commit_log_offset:
            return compute_logged_message(self.commit_log[index])
        return None

    def get_message_at(self, log_index: int) -> Message:
        """The message at a position of the commit log (a consume-queue unit's UNIT_LOG_INDEX)."""
        return compute_logged_message(self.commit_log[log_index])

    def get_messages(self) -> Iterator[Message]:
        """Every stored message, in commit-log order."""
        return map(compute_logged_message, self.commit_log)

    def get_message(self, topic: str, queue_id: int, queue_offset: int) -> Message | None:
        queue = self.get_queue_units(topic, queue_id)
        if 0 <= queue_offset < len(queue):
            return self.get_message_at(queue[queue_offset][UNIT_LOG_INDEX])
        return None


def compute_stored_size(body: bytes, flat_properties: tuple) -> int:
    """A stand-in for the encoded size: what advances the physical offset (body + properties string + header),
    with the properties flat (name, value, ...): the string has one separator after each name and each value."""
    return 100 + len(body) + sum(map(len, flat_properties)) + len(flat_properties)


def compute_clamped_delay_level(level: int, delays: tuple[int, ...]) -> int:
    """[ST-04] A delay level above the maximum is stored as the maximum."""
    return min(level, len(delays))


def compute_delay_properties(message: Message, level: int) -> Mapping:
    """The properties of a parked message: the clamped level, the real topic and the real queue id (ST-01)."""
    return message.properties.update(
        {PROPERTY_DELAY_TIME_LEVEL: str(level), PROPERTY_REAL_TOPIC: message.topic,
         PROPERTY_REAL_QUEUE_ID: str(message.queue_id)}
    )


def transform_delay_level_message(message: Message, delays: tuple[int, ...]) -> Message:
    """[ST-01] A message with delay level > 0 is parked in SCHEDULE_TOPIC_XXXX queue level - 1, the level clamped
    to the maximum, with its real topic and queue kept in REAL_TOPIC and REAL_QID."""
    level = compute_clamped_delay_level(message.delay_time_level, delays)
    return evolve(message, topic=SCHEDULE_TOPIC, queue_id=delay_level_to_queue_id(level),
                  properties=compute_delay_properties(message, level))


def compute_tags_code(record: tuple, delays: tuple[int, ...]) -> int:
    """[ST-03] A scheduled message's tags code is its deliver timestamp; any other message's is its tags hash.

    A message stored in SCHEDULE_TOPIC_XXXX carries its (clamped) DELAY in the record's properties.
    """
    if record[RECORD_TOPIC] == SCHEDULE_TOPIC:
        delay = get_record_properties(record).get(PROPERTY_DELAY_TIME_LEVEL)
        level = compute_clamped_delay_level(int(delay or 0), delays)
        if level > 0:
            return compute_deliver_timestamp(delays, level, record[RECORD_STORE_TIMESTAMP])
    return java_string_hash(record[RECORD_TAGS])


def append_record(store: Store, draft: tuple, now: int, delays: tuple[int, ...],
                  tags_code: int | None = None) -> tuple[Store, tuple]:
    """[ST-06] Append a drafted record to the commit log and its unit to the consume queue of its topic and queue
    id, assigning the queue offset, the physical offset and the msg id; return the new store and the record.

    `tags_code` is the unit's tags code when the caller already knows it (ST-03), else it is computed here."""
    topic, queue_id = draft[RECORD_TOPIC], draft[RECORD_QUEUE_ID]
    key = (topic, queue_id)
    queue = store.consume_queues.get(key, EMPTY_QUEUE)
    physical, log = store.next_physical_offset, store.commit_log
    # `.length`, not len(): AppendLog.__len__ is a Python-level call, and every put reads both lengths.
    assigned = (queue.length, physical, compute_message_id(physical))
    record = draft[:RECORD_QUEUE_OFFSET] + assigned + draft[RECORD_RECONSUME_TIMES:]
    size = compute_stored_size(draft[RECORD_BODY], draft[RECORD_PROPERTIES:])
    if tags_code is None:
        tags_code = compute_tags_code(draft, delays)
    queue = queue.append((physical, size, tags_code, now, log.length))
    schedule_queues = store.schedule_queues
    if topic == SCHEDULE_TOPIC:
        missing = queue_id + 1 - len(schedule_queues)
        if missing > 0:
            schedule_queues = schedule_queues.extend([EMPTY_QUEUE] * missing)
        schedule_queues = schedule_queues.set(queue_id, queue)
    store = Store(log.append(record), physical + size, store.consume_queues.set(key, queue), schedule_queues)
    return store, record


def put_record(store: Store, message: Message, now: int, delays: tuple[int, ...], *,
               stored_properties: Mapping | None = None, clock_lead: int = 0) -> tuple[Store, tuple, Mapping]:
    """[ST-06] Append a message to the commit log and its consume queue, rewriting a delayed one first (ST-01).

    `stored_properties` is Java's propertiesString: what the commit log keeps when the caller computed it before
    changing the property map (ST-05); the delay check always reads `message.properties`. `clock_lead` models a
    broker wall clock that is ahead of the virtual clock by that many ms (it is set back later, DT-07).
    Returns the new store, the commit-log record appended and the property map it holds.
    """
    level = message.delay_time_level
    if level > 0:
        # transform_delay_level_message, folded into the one copy of the message that the store makes
        level = compute_clamped_delay_level(level, delays)
        topic, queue_id = SCHEDULE_TOPIC, delay_level_to_queue_id(level)
        properties = compute_delay_properties(message, level)
    else:
        topic, queue_id = message.topic, message.queue_id
        properties = message.properties if stored_properties is None else stored_properties
    stored_at = now + clock_lead
    draft = compute_draft_record(topic, message.body, message.tags, compute_flat_properties(properties), queue_id,
                                 message.reconsume_times, message.flag, message.born_timestamp, stored_at)
    # ST-03 for a message this put parks: its deliver timestamp, from the level already in hand
    tags_code = compute_deliver_timestamp(delays, level, stored_at) if level > 0 else None
    store, record = append_record(store, draft, now, delays, tags_code)
    return store, record, properties


def put_message(store: Store, message: Message, now: int, delays: tuple[int, ...], *,
                stored_properties: Mapping | None = None, clock_lead: int = 0) -> tuple[Store, Message]:
    """[ST-06] put_record, returning the message as stored (offsets, msg id and store time assigned)."""
    store, record, properties = put_record(store, message, now, delays, stored_properties=stored_properties,
                                           clock_lead=clock_lead)
    return store, Message(record[RECORD_TOPIC], record[RECORD_BODY], record[RECORD_TAGS], properties,
                          *record[RECORD_QUEUE_ID:RECORD_PROPERTIES])
