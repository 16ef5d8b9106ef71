"""The store's entries (spec/03-store.md): a commit-log record per stored message, and a consume-queue unit per
message in a queue (the schedule queues of SCHEDULE_TOPIC_XXXX included), each a named tuple: read by field name,
built at every put and delivery at a tuple's cost (benchmarks/NOTES.md)."""

from __future__ import annotations

from collections.abc import Mapping
from itertools import chain
from operator import itemgetter
from typing import NamedTuple

from model.values.message import Message
from model.values.records import new_tuple


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
    """The commit log's copy of a stored message: its fields as Message has them, the properties as one flat tuple
    (name, value, name, value, ...), which is what the store keeps (Java's propertiesString).

    `property_map` is that tuple decoded, the map a read of the record gives its message: every pull and look-up
    reads records back, and the map is built once, at the put (it is the put's own map).
    """

    topic: str
    body: bytes
    tags: str | None
    queue_id: int
    queue_offset: int
    commit_log_offset: int
    msg_id: str
    reconsume_times: int
    flag: int
    born_timestamp: int
    store_timestamp: int
    properties: tuple
    property_map: Mapping

    def get_properties(self) -> dict:
        """The properties the record holds, as a dict."""
        return dict(self.property_map)


def compute_flat_properties(properties: Mapping) -> tuple:
    """A property map as one flat tuple: name, value, name, value, ..."""
    return tuple(chain.from_iterable(properties.items()))


def compute_log_record(message: Message) -> CommitLogRecord:
    """The commit log's copy of a stored message."""
    return CommitLogRecord(message.topic, message.body, message.tags, message.queue_id, message.queue_offset,
                           message.commit_log_offset, message.msg_id, message.reconsume_times, message.flag,
                           message.born_timestamp, message.store_timestamp, compute_flat_properties(message.properties),
                           message.properties)


# A record's fields under Message's field names, in Message's order (the message's properties are the record's
# property map): one C-level read of all twelve, as every pull and look-up decodes records.
_get_message_fields = itemgetter(*[CommitLogRecord._fields.index("property_map" if name == "properties" else name)
                                   for name in Message._fields])


def compute_logged_message(record: CommitLogRecord) -> Message:
    """The message a commit-log record holds (the inverse of compute_log_record)."""
    return new_tuple(Message, _get_message_fields(record))


def compute_logged_messages(records: list[CommitLogRecord]) -> list[Message]:
    """compute_logged_message of each record (one call for a pulled batch)."""
    return [new_tuple(Message, _get_message_fields(record)) for record in records]


# The three fields a put assigns are neighbours in CommitLogRecord: placing a draft replaces that slice.
_PLACED_FROM, _PLACED_TO = CommitLogRecord._fields.index("queue_offset"), CommitLogRecord._fields.index("msg_id") + 1


def compute_placed_record(draft: CommitLogRecord, queue_offset: int, commit_log_offset: int,
                          msg_id: str) -> CommitLogRecord:
    """The drafted record with the offsets and msg id its put assigned."""
    return new_tuple(CommitLogRecord, draft[:_PLACED_FROM] + (queue_offset, commit_log_offset, msg_id)
                      + draft[_PLACED_TO:])


def compute_draft_record(topic: str, body: bytes, tags: str | None, flat_properties: tuple, queue_id: int,
                         reconsume_times: int, flag: int, born_timestamp: int, store_timestamp: int,
                         property_map: Mapping) -> CommitLogRecord:
    """A record about to be put: every field but the queue offset, physical offset and msg id, which the put
    assigns (append_record). `property_map` is the map `flat_properties` was flattened from."""
    return new_tuple(CommitLogRecord, (topic, body, tags, queue_id, -1, -1, "", reconsume_times, flag, born_timestamp,
                                        store_timestamp, flat_properties, property_map))
