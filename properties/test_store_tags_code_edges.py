"""ST-03 edges: the tags code of a consume-queue unit in SCHEDULE_TOPIC_XXXX that the put itself did not park.

mutmut found `compute_tags_code`'s schedule branch unchecked: a delayed put passes its own deliver timestamp, so the
branch runs only for a record stored in SCHEDULE_TOPIC_XXXX by a put whose property map has no delay level (ST-05:
the commit log keeps the caller's properties string). RocketMQ computes the unit's tags code from the stored bytes
(CommitLog.checkMessageAndReturnSize), so the stored DELAY decides, not the map the put checked.
"""

from __future__ import annotations

from model.broker.store import Store, put_message
from model.values.config import Config
from model.values.message import Message

SCHEDULE_TOPIC = "SCHEDULE_TOPIC_XXXX"
DELAYS = Config().delay_levels
NOW = 50_000
# String.hashCode() of "TagA": ((('T' * 31 + 'a') * 31 + 'g') * 31 + 'A') = ((84*31+97)*31+103)*31+65
TAG_A_HASH = 2_598_919


def unit_tags_code(stored_delay: str | None) -> int:
    """Put a message with topic SCHEDULE_TOPIC_XXXX, queue 2, tags TagA and no DELAY in its map; the stored
    properties string carries DELAY=`stored_delay` (none if None). The tags code of the unit it gets."""
    message = Message(SCHEDULE_TOPIC, b"x", "TagA", queue_id=2)
    stored_properties = None if stored_delay is None else message.properties.set("DELAY", stored_delay)
    store, stored = put_message(Store(), message, NOW, DELAYS, stored_properties=stored_properties)
    assert (stored.topic, stored.queue_id) == (SCHEDULE_TOPIC, 2)  # not parked again: the map has no level
    return store.get_consume_queue(SCHEDULE_TOPIC, 2)[stored.queue_offset].tags_code


def test_a_stored_delay_makes_the_unit_tags_code_the_deliver_timestamp():
    """ST-03: CommitLog.checkMessageAndReturnSize 4.9.8 L383-L398 reads DELAY from the stored properties of a
    SCHEDULE_TOPIC_XXXX message, clamps it to the max level and, when > 0, stores
    ScheduleMessageService.computeDeliverTimestamp 4.9.8 L119-L126 = storeTimestamp + delay of the level
    (MessageStoreConfig.messageDelayLevel 4.9.8 L137: "1s 5s 10s ... 1h 2h")."""
    assert unit_tags_code("3") == NOW + 10_000  # level 3: 10s
    assert unit_tags_code("1") == NOW + 1_000  # level 1: 1s, the lowest level that is delayed
    assert unit_tags_code("18") == NOW + 7_200_000  # level 18: 2h
    assert unit_tags_code("40") == NOW + 7_200_000  # above the max (18): clamped, L389-L391


def test_no_stored_delay_or_level_zero_keeps_the_tags_hash():
    """ST-03: CommitLog.checkMessageAndReturnSize 4.9.8 L378-L398: the tags code is the tags' String.hashCode
    unless DELAY is present and its (clamped) level is > 0; a SCHEDULE_TOPIC_XXXX message without DELAY, or with
    DELAY=0, keeps the hash."""
    assert unit_tags_code(None) == TAG_A_HASH
    assert unit_tags_code("0") == TAG_A_HASH
