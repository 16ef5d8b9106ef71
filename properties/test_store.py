"""Properties of spec/03-store.md: the write side and the delay-level rewrite."""

from __future__ import annotations

from hypothesis import event, given
from hypothesis import strategies as st
from immutables import Map

from model.broker.commit_log import compute_log_record, compute_logged_message
from model.broker.store import Store, put_message
from model.values.config import Config
from model.values.delay_levels import compute_deliver_timestamp, delay_level_to_queue_id, queue_id_to_delay_level
from model.values.message import Message, create_message, java_string_hash

# The default messageDelayLevel, from the reference (§5.1), in seconds: level n is entry n - 1.
REFERENCE_DELAY_SECONDS = [1, 5, 10, 30, 60, 120, 180, 240, 300, 360, 420, 480, 540, 600, 1200, 1800, 3600, 7200]
SCHEDULE_TOPIC = "SCHEDULE_TOPIC_XXXX"
DELAYS = Config().delay_levels

topics = st.sampled_from(["Orders", "%RETRY%group", "%DLQ%group"])
keys = st.text("abcdef0123456789", min_size=1, max_size=8)
times = st.integers(0, 10**12)


ANY_LEVEL = st.integers(-3, 30)


@st.composite
def messages(draw, delay_level=ANY_LEVEL):
    message = create_message(draw(topics), draw(keys), body=draw(st.binary(max_size=16)),
                             tags=draw(st.none() | st.sampled_from(["TagA", "TagB", "*"])),
                             queue_id=draw(st.integers(0, 7)), delay_level=draw(delay_level))
    return message.put_property("ORIGIN_MESSAGE_ID", draw(keys)) if draw(st.booleans()) else message


def put_all(batch: list[tuple[Message, int]]) -> tuple[Store, list[Message]]:
    store, stored = Store(), []
    for message, now in batch:
        store, one = put_message(store, message, now, DELAYS)
        stored.append(one)
    return store, stored


@given(messages(delay_level=st.integers(1, 18)), times)
def test_delayed_put_is_parked_in_the_schedule_topic(message, now):
    """ST-01"""
    event("ST-01")
    _store, stored = put_message(Store(), message, now, DELAYS)
    level = message.delay_time_level
    assert (stored.topic, stored.queue_id) == (SCHEDULE_TOPIC, level - 1)
    assert stored.get_property("REAL_TOPIC") == message.topic
    assert stored.get_property("REAL_QID") == str(message.queue_id)
    assert stored.get_property("DELAY") == str(level)
    assert stored.body == message.body and stored.tags == message.tags
    for key, value in message.properties.items():
        assert stored.get_property(key) == value


@given(st.integers(1, 10_000))
def test_level_and_queue_id_are_inverse(level):
    """ST-02"""
    event("ST-02")
    assert delay_level_to_queue_id(level) == level - 1
    assert queue_id_to_delay_level(delay_level_to_queue_id(level)) == level


@given(messages(), times)
def test_tags_code_is_the_deliver_timestamp(message, now):
    """ST-03: storeTimestamp + the reference's delay for the clamped level; the tags hash otherwise."""
    store, stored = put_message(Store(), message, now, DELAYS)
    unit = store.get_consume_queue(stored.topic, stored.queue_id)[stored.queue_offset]
    if message.delay_time_level > 0:
        event("ST-03")
        level = min(message.delay_time_level, 18)
        assert unit.tags_code == now + REFERENCE_DELAY_SECONDS[level - 1] * 1000
    else:
        assert unit.tags_code == java_string_hash(message.tags)


def test_unknown_level_counts_one_second():
    """ST-03: ScheduleMessageServiceTest.otherTest, computeDeliverTimestamp(999, 0) = 1000."""
    assert compute_deliver_timestamp(DELAYS, 999, 0) == 1000
    assert compute_deliver_timestamp((5000, 8000), 2, 100) == 8100
    assert compute_deliver_timestamp((5000, 8000), 1, 100) == 5100  # level 1 is known: the table's first delay
    assert compute_deliver_timestamp((5000, 8000), 0, 100) == 1100  # level 0 is not


@given(messages(delay_level=st.integers(19, 10_000)), times)
def test_level_above_maximum_is_clamped(message, now):
    """ST-04"""
    event("ST-04")
    _store, stored = put_message(Store(), message, now, DELAYS)
    assert (stored.topic, stored.queue_id, stored.get_property("DELAY")) == (SCHEDULE_TOPIC, 17, "18")


@given(messages(delay_level=st.integers(-5, 0)), times)
def test_level_zero_or_less_is_not_delayed(message, now):
    """ST-04"""
    event("ST-04")
    _store, stored = put_message(Store(), message, now, DELAYS)
    assert (stored.topic, stored.queue_id) == (message.topic, message.queue_id)
    assert stored.get_property("REAL_TOPIC") is None


@given(messages(delay_level=st.just(0)), st.integers(1, 18), times)
def test_stored_properties_do_not_decide_the_delay(message, level, now):
    """ST-05: a properties string with DELAY is stored as is, while the map without DELAY decides: not delayed."""
    event("ST-05")
    string = message.properties.set("DELAY", str(level))
    store, stored = put_message(Store(), message, now, DELAYS, stored_properties=string)
    assert stored.topic == message.topic and stored.properties == string
    assert store.get_max_offset_in_queue(SCHEDULE_TOPIC, level - 1) == 0
    # The delay rewrite recomputes the string: the caller's string does not replace REAL_TOPIC etc.
    delayed = message.with_delay_time_level(level)
    _store, parked = put_message(Store(), delayed, now, DELAYS, stored_properties=Map())
    assert parked.topic == SCHEDULE_TOPIC and parked.get_property("REAL_TOPIC") == message.topic


@given(st.lists(st.tuples(messages(), st.integers(0, 10**6)), max_size=20))
def test_put_appends(batch):
    """ST-06: queue offset = position in its queue, physical offsets increase, store time = now, nothing moves."""
    event("ST-06")
    batch = sorted(batch, key=lambda pair: pair[1])
    store, stored = put_all(batch)
    per_queue: dict[tuple[str, int], int] = {}
    for (_message, now), one in zip(batch, stored, strict=True):
        key = (one.topic, one.queue_id)
        assert one.queue_offset == per_queue.get(key, 0)
        per_queue[key] = one.queue_offset + 1
        assert one.store_timestamp == now
        assert store.look_message_by_offset(one.commit_log_offset) == one
        assert store.get_message(one.topic, one.queue_id, one.queue_offset) == one
    physical = [one.commit_log_offset for one in stored]
    assert physical == sorted(set(physical))
    assert len({one.msg_id for one in stored}) == len(stored)
    for topic, queue_id in per_queue:
        # Reads at the queue's ends: the model's store deletes nothing (min 0), and max is one past the last.
        assert store.get_min_offset_in_queue(topic, queue_id) == 0
        assert store.get_message(topic, queue_id, per_queue[topic, queue_id]) is None
        assert store.get_message(topic, queue_id, -1) is None


@given(messages(delay_level=st.just(0)), times)
def test_a_stored_message_and_its_commit_log_record_are_one(message, now):
    """ST-06: the commit log's record of a stored message gives that message back, every field of it (the
    record is what a pull and a look-up by offset decode)."""
    store, stored = put_message(Store(), message, now, DELAYS)
    assert compute_log_record(stored) == store.commit_log[0]
    assert compute_logged_message(compute_log_record(stored)) == stored
