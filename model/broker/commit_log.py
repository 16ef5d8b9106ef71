"""The store's entries (spec/03-store.md): a commit-log record per stored message, and a consume-queue unit per
message in a queue (the schedule queues of SCHEDULE_TOPIC_XXXX included), each a named tuple: read by field name,
built at every put and delivery at a tuple's cost, and kept by the store as a plain tuple (benchmarks/NOTES.md)."""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import NamedTuple

from immutables import Map

from model.values.message import Message
from model.values.records import new_tuple

EMPTY_PROPERTIES = Map()


class ConsumeQueueUnit(NamedTuple):
    """One consume-queue entry: where the message is in the commit log and its tags code.

    `stored_at` is the virtual time of the put; it differs from the message's store timestamp only for a broker
    whose wall clock was ahead at the put (ST-03, a clock later set back). `log_index` is the message's position in
    the model's commit log (a model detail: RocketMQ reads the commit log at the physical offset). In a schedule
    queue the tags code is the deliver timestamp (ST-03).
    """

    commit_log_offset: int
    size: int
    tags_code: int
    stored_at: int
    log_index: int


class CommitLogRecord(NamedTuple):
    """The commit log's copy of a stored message: Message's fields in Message's order, the properties as one flat
    tuple (name, value, name, value, ...), which is what the store keeps (Java's propertiesString).

    No field holds a map or any other object CPython's cyclic collector tracks, so the commit log can keep each
    record as a plain tuple that the collector stops walking (model/values/append_log.py); a read of a record
    builds its message's map from the flat tuple. Flat rather than (name, value) pairs: a tuple of tuples is
    untracked one level per collection, so records of pairs lived on into the oldest generation, and kept a tracked
    tuple per property alive (benchmarks/NOTES.md).
    """

    topic: str
    body: bytes
    tags: str | None
    properties: tuple
    queue_id: int
    queue_offset: int
    commit_log_offset: int
    msg_id: str
    reconsume_times: int
    flag: int
    born_timestamp: int
    store_timestamp: int

    def get_properties(self) -> dict:
        """The properties the record holds, as a dict."""
        names_and_values = iter(self.properties)
        return dict(zip(names_and_values, names_and_values))  # noqa: B905 (one iterator paired with itself)


def compute_flat_properties(properties: Mapping) -> tuple:
    """A property map as the commit log keeps it: one flat tuple, name, value, name, value, ..."""
    # The pairs concatenated by `sum`: for a message's few properties, half the cost of a chain.from_iterable
    return sum(properties.items(), ())


def compute_property_map(flat_properties: tuple) -> Map:
    """The property map a flat properties tuple holds (the inverse of compute_flat_properties)."""
    names_and_values = iter(flat_properties)
    # An update of the empty map takes the pairs at half the cost of Map(pairs) (a read builds one for every message
    # it reads); `zip` pairs the one iterator with itself, so its strict check has nothing to check.
    return EMPTY_PROPERTIES.update(zip(names_and_values, names_and_values))  # noqa: B905


def compute_log_record(message: Message) -> CommitLogRecord:
    """The commit log's copy of a stored message."""
    return new_tuple(CommitLogRecord, (*message[:3], compute_flat_properties(message.properties), *message[4:]))


def compute_logged_message(record: tuple) -> Message:
    """The message a commit-log record (or the plain tuple the log stores) holds: the inverse of
    compute_log_record."""
    return compute_logged_messages((record,))[0]


def compute_logged_messages(records: Iterable[tuple]) -> list[Message]:
    """compute_logged_message of each record (one call for a pulled batch). Each record is unpacked whole: a
    quarter of the cost of two slices around the property map."""
    return [new_tuple(Message, (topic, body, tags, compute_property_map(flat), queue_id, offset, physical, msg_id,
                                times, flag, born, stored))
            for topic, body, tags, flat, queue_id, offset, physical, msg_id, times, flag, born, stored in records]


def compute_draft_record(topic: str, body: bytes, tags: str | None, flat_properties: tuple, queue_id: int,
                         reconsume_times: int, flag: int, born_timestamp: int, store_timestamp: int) -> CommitLogRecord:
    """A record about to be put: every field but the queue offset, physical offset and msg id, which the put
    assigns (append_record)."""
    return new_tuple(CommitLogRecord, (topic, body, tags, flat_properties, queue_id, -1, -1, "", reconsume_times, flag,
                                        born_timestamp, store_timestamp))
