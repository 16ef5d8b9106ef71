"""The store's write side: commit log, consume queues and the delay-level rewrite (spec/03-store.md)."""

from __future__ import annotations

import enum
import operator
from collections.abc import Iterator, Mapping

import immutables
from attrs import field, frozen

from model.broker.commit_log import (
    CommitLogRecord,
    ConsumeQueueUnit,
    compute_draft_record,
    compute_flat_properties,
    compute_logged_message,
    compute_logged_messages,
)
from model.values.append_log import AppendLog
from model.values.delay_levels import compute_deliver_timestamp, delay_level_to_queue_id
from model.values.message import (
    PROPERTY_DELAY_TIME_LEVEL,
    PROPERTY_REAL_QUEUE_ID,
    PROPERTY_REAL_TOPIC,
    SCHEDULE_TOPIC,
    Message,
    compute_message_id,
    java_string_hash,
)
from model.values.records import bounded_repr, get_record_builder, new_tuple, record

# A consume queue is an AppendLog of units, indexed by queue offset; the commit log one of records. Both keep their
# entries as plain tuples, which CPython's cyclic collector stops walking (model/values/append_log.py).
EMPTY_QUEUE = AppendLog(kind=ConsumeQueueUnit)
EMPTY_COMMIT_LOG = AppendLog(kind=CommitLogRecord)


# A record's physical offset, read by position: the key of lookMessageByOffset's binary search over stored records.
get_commit_log_offset = operator.itemgetter(CommitLogRecord._fields.index("commit_log_offset"))


class PutMessageStatus(enum.Enum):
    PUT_OK = "PUT_OK"


@frozen
class ConsumeQueue:
    """A consume queue as its readers see it: sized, and indexed by queue offset to a ConsumeQueueUnit."""

    units: AppendLog

    def __len__(self) -> int:
        return len(self.units)

    def __getitem__(self, queue_offset: int) -> ConsumeQueueUnit:
        return self.units[queue_offset]


@record
class Store:
    """Commit log in physical-offset order (of log records), and consume queues keyed by (topic, queue id)."""

    __repr__ = bounded_repr  # [SY-12] a failure report never prints the whole state
    commit_log: AppendLog = EMPTY_COMMIT_LOG
    next_physical_offset: int = 0
    consume_queues: immutables.Map = field(factory=immutables.Map)
    # The queues of SCHEDULE_TOPIC_XXXX again, by queue id: the scheduler reads all of them at every event (DT-04).
    schedule_queues: tuple = ()

    def get_consume_queue(self, topic: str, queue_id: int) -> ConsumeQueue:
        return ConsumeQueue(self.get_queue_units(topic, queue_id))

    def get_queue_units(self, topic: str, queue_id: int) -> AppendLog:
        """The queue's units (ConsumeQueueUnit) by queue offset."""
        return self.consume_queues.get((topic, queue_id), EMPTY_QUEUE)

    def get_max_offset_in_queue(self, topic: str, queue_id: int) -> int:
        return len(self.get_queue_units(topic, queue_id))

    def get_min_offset_in_queue(self, topic: str, queue_id: int) -> int:
        """GET_MIN_OFFSET: 0, since the model's store never deletes a message."""
        return 0

    def get_offset_in_queue_by_time(self, topic: str, queue_id: int, timestamp: int) -> int:
        """SEARCH_OFFSET_BY_TIMESTAMP: ConsumeQueue.getOffsetInQueueByTime's binary search over the units by store
        time (4.9.8 L159-L226), for one consume-queue file whose head is kept. The first unit probed that was stored
        at `timestamp` answers (of equal store times, not always the first); else the nearer of the two units around
        it, the earlier on a tie; the first unit when all are later, the last (not the max offset) when all are
        earlier; an empty queue, which has no mapped file, answers 0."""
        units = self.get_queue_units(topic, queue_id)
        low, high = 0, len(units) - 1
        if high < 0:
            return 0
        left = right = left_at = right_at = None
        while low <= high:
            middle = (low + high) // 2
            stored_at = self.get_message_at(units[middle].log_index).store_timestamp
            if stored_at == timestamp:
                return middle
            if stored_at > timestamp:
                high, right, right_at = middle - 1, middle, stored_at
            else:
                low, left, left_at = middle + 1, middle, stored_at
        if left is None:
            return right
        if right is None:
            return left
        return right if abs(timestamp - left_at) > abs(timestamp - right_at) else left

    def look_message_by_offset(self, commit_log_offset: int) -> Message | None:
        """lookMessageByOffset: the stored message at a physical offset, or None."""
        log = self.commit_log
        index = log.bisect_left(commit_log_offset, get_commit_log_offset)
        if index < log.length:
            # The record as stored (a plain tuple), read once and decoded without its named tuple.
            stored = log.get_stored((index,))
            if get_commit_log_offset(stored[0]) == commit_log_offset:
                return compute_logged_messages(stored)[0]
        return None

    def get_message_at(self, log_index: int) -> Message:
        """The message at a position of the commit log (a consume-queue unit's `log_index`)."""
        return compute_logged_message(self.commit_log[log_index])

    def get_messages(self) -> Iterator[Message]:
        """Every stored message, in commit-log order."""
        return map(compute_logged_message, self.commit_log)

    def get_message(self, topic: str, queue_id: int, queue_offset: int) -> Message | None:
        queue = self.get_queue_units(topic, queue_id)
        if 0 <= queue_offset < len(queue):
            return self.get_message_at(queue[queue_offset].log_index)
        return None


# Every put builds its Store (model/values/records.py).
_build_store = get_record_builder(Store)


def compute_stored_size(body: bytes, flat_properties: tuple) -> int:
    """A stand-in for the encoded size: what advances the physical offset (body + properties string + header),
    with the properties flat (name, value, ...): the string has one separator after each name and each value."""
    return 100 + len(body) + len("".join(flat_properties)) + len(flat_properties)


def compute_clamped_delay_level(level: int, delays: tuple[int, ...]) -> int:
    """[ST-04] A delay level above the maximum is stored as the maximum."""
    return min(level, len(delays))


def compute_delay_properties(message: Message, level: int) -> Mapping:
    """The properties of a parked message: the clamped level, the real topic and the real queue id (ST-01)."""
    return message.properties.update(
        {PROPERTY_DELAY_TIME_LEVEL: str(level), PROPERTY_REAL_TOPIC: message.topic,
         PROPERTY_REAL_QUEUE_ID: str(message.queue_id)}
    )


def compute_tags_code(record: CommitLogRecord, delays: tuple[int, ...]) -> int:
    """[ST-03] A scheduled message's tags code is its deliver timestamp; any other message's is its tags hash.

    A message stored in SCHEDULE_TOPIC_XXXX carries its (clamped) DELAY in the record's properties.
    """
    if record.topic == SCHEDULE_TOPIC:
        delay = record.get_properties().get(PROPERTY_DELAY_TIME_LEVEL)
        level = compute_clamped_delay_level(int(delay or 0), delays)
        if level > 0:
            return compute_deliver_timestamp(delays, level, record.store_timestamp)
    return java_string_hash(record.tags)


def append_record(store: Store, draft: CommitLogRecord, now: int, delays: tuple[int, ...],
                  tags_code: int | None = None) -> tuple[Store, CommitLogRecord]:
    """[ST-06] Append a drafted record to the commit log and its unit to the consume queue of its topic and queue
    id, assigning the queue offset, the physical offset and the msg id; return the new store and the record.

    `tags_code` is the unit's tags code when the caller already knows it (ST-03), else it is computed here."""
    # Unpacked once (a named tuple's field read is a generic look-up): all but the three fields the put assigns.
    topic, body, tags, flat_properties, queue_id, _, _, _, reconsume_times, flag, born_at, stored_at = draft
    key = (topic, queue_id)
    queue = store.consume_queues.get(key, EMPTY_QUEUE)
    physical, log = store.next_physical_offset, store.commit_log
    # `.length`, not len(): AppendLog.__len__ is a Python-level call, and every put reads both lengths.
    # Both logs take plain tuples (the record's, in CommitLogRecord's order, and the unit's, in ConsumeQueueUnit's).
    stored = (topic, body, tags, flat_properties, queue_id, queue.length, physical, compute_message_id(physical),
              reconsume_times, flag, born_at, stored_at)
    size = compute_stored_size(body, flat_properties)
    if tags_code is None:
        tags_code = compute_tags_code(draft, delays)
    queue = queue.append((physical, size, tags_code, now, log.length))
    schedule_queues = store.schedule_queues
    if topic == SCHEDULE_TOPIC:
        missing = queue_id + 1 - len(schedule_queues)
        if missing > 0:
            schedule_queues += (EMPTY_QUEUE,) * missing
        schedule_queues = schedule_queues[:queue_id] + (queue,) + schedule_queues[queue_id + 1:]
    store = _build_store({"commit_log": log.append(stored), "next_physical_offset": physical + size,
                          "consume_queues": store.consume_queues.set(key, queue), "schedule_queues": schedule_queues})
    return store, new_tuple(CommitLogRecord, stored)


def put_record(store: Store, message: Message, now: int, delays: tuple[int, ...], *,
               stored_properties: Mapping | None = None, clock_lead: int = 0) -> tuple[Store, CommitLogRecord, Mapping]:
    """[ST-06] Append a message to the commit log and its consume queue, rewriting a delayed one first (ST-01).

    `stored_properties` is Java's propertiesString: what the commit log keeps when the caller computed it before
    changing the property map (ST-05); the delay check always reads `message.properties`. `clock_lead` models a
    broker wall clock that is ahead of the virtual clock by that many ms (it is set back later, DT-07).
    Returns the new store, the commit-log record appended and the property map it holds.
    """
    level = message.delay_time_level
    if level > 0:
        # HookUtils.transformDelayLevelMessage (CommitLog.asyncPutMessage in 4.x), on the one copy the store makes
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
    # The record's message, with the map its properties were taken from rather than one built again.
    return store, new_tuple(Message, (*record[:3], properties, *record[4:]))
