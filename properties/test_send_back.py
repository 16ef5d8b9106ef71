"""Properties of spec/02-send-back.md, rules SB-01 to SB-14: the CONSUMER_SEND_MSG_BACK handler.

The oracle `expected_send_back` is the reference's §4.2 branch list written out as a table, not a call into the
model; version behaviour comes from the reference's tables in send_back_strategies.
"""

from __future__ import annotations

import pytest
from hypothesis import event, find, given, settings
from hypothesis import strategies as st
from immutables import Map

from model.broker.send_back import SendBackRequest, compute_send_back_request, on_consumer_send_msg_back
from model.broker.state import SubscriptionGroupConfig, TopicConfig
from model.values.config import Config
from model.values.message import Message, compute_message_id
from model.values.records import evolve
from properties.coverage import record_rules
from properties.send_back_strategies import (
    DLQ_CLEARS_DELAY,
    DLQ_READABLE,
    DLQ_TOPIC,
    GROUP,
    MAX_LEVEL,
    RANDOM_INTS,
    RETRY_TOPIC,
    VERSIONS,
    BrokerCase,
    broker_cases,
    get_destination,
    stored_messages,
    with_only_stored,
)

# Reference §5.7: the delays of levels 3..18 in seconds, the default retry timetable.
DEFAULT_RETRY_WAITS = [10, 30, 60, 120, 180, 240, 300, 360, 420, 480, 540, 600, 1200, 1800, 3600, 7200]


def expected_send_back(case: BrokerCase, stored: Message, known: bool, delay_level: int, header_max: int | None,
                       random_int: int) -> tuple[str, tuple[str, int, int] | None]:
    """Reference §4.2 in order: the response code and where the copy is bound (topic, queue, clamped level)."""
    group = case.group
    if group is None:
        return "SUBSCRIPTION_GROUP_NOT_EXIST", None
    if not case.broker_perm & 2:
        return "NO_PERMISSION", None
    if group.retry_queue_nums <= 0:
        return "SUCCESS", None
    if case.retry_topic is not None and not case.retry_topic.perm & 2:
        return "NO_PERMISSION", None
    if not known:
        return "SYSTEM_ERROR", None
    limit = group.retry_max_times if header_max is None else header_max
    r = stored.reconsume_times
    if r >= limit or delay_level < 0:
        level = 0 if DLQ_CLEARS_DELAY[case.version] else int(stored.properties.get("DELAY", "0"))
        return "SUCCESS", (DLQ_TOPIC, 0, min(level, MAX_LEVEL))
    level = delay_level if delay_level > 0 else 3 + r
    return "SUCCESS", (RETRY_TOPIC, random_int % group.retry_queue_nums, min(level, MAX_LEVEL))


def expected_topics(case: BrokerCase, code: str, destination) -> dict[str, TopicConfig | None]:
    """The retry and DLQ topic configs after the request (created on first use, existing ones unchanged)."""
    retry, dlq = case.retry_topic, case.dlq_topic
    reached_retry_topic = code not in ("SUBSCRIPTION_GROUP_NOT_EXIST",) and case.broker_perm & 2 and (
        case.group.retry_queue_nums > 0)
    if retry is None and reached_retry_topic:
        n = case.group.retry_queue_nums
        retry = TopicConfig(RETRY_TOPIC, n, n, 6)
    if dlq is None and destination is not None and destination[0] == DLQ_TOPIC:
        dlq = TopicConfig(DLQ_TOPIC, 1, 1, 6 if DLQ_READABLE[case.version] else 2)
    return {RETRY_TOPIC: retry, DLQ_TOPIC: dlq}


def send_back(broker, version, offset, delay_level=0, header_max=16, random_int=0, now=5_000):
    request = SendBackRequest(GROUP, "T", offset, delay_level, "U1", header_max)
    return on_consumer_send_msg_back(broker, Config(profile=version), request, now, random_int)


LEVELS = st.one_of(st.just(0), st.integers(-2, 25))  # 0, "let the broker decide", is the client's default


@given(case=broker_cases(), stored=stored_messages(), known=st.integers(0, 9), delay_level=LEVELS,
       header_max=st.none() | st.integers(0, 20), random_int=RANDOM_INTS)
def test_send_back_matches_reference_oracle(case, stored, known, delay_level, header_max, random_int):
    """SB-01 to SB-14 (every branch): code, destination, level, copy and topic configs match §4.2."""
    offset = stored.commit_log_offset if known else stored.commit_log_offset + 1
    broker = case.build(stored)
    after, result = send_back(broker, case.version, offset, delay_level, header_max, random_int)
    record_rules(result.rules)
    code, destination = expected_send_back(case, stored, bool(known), delay_level, header_max, random_int)
    assert result.code.name == code
    assert (None if result.stored is None else get_destination(result.stored)) == destination
    assert {name: after.topics.get(name) for name in (RETRY_TOPIC, DLQ_TOPIC)} == expected_topics(
        case, code, destination)
    if destination is not None:
        assert_faithful_copy(result.stored, stored)
        assert after.store.look_message_by_offset(result.stored.commit_log_offset) == result.stored


def assert_faithful_copy(copy: Message, stored: Message) -> None:
    """§4.2 step 9 and 13: what the new message takes from the looked-up one."""
    origin = stored.properties.get("ORIGIN_MESSAGE_ID")
    assert copy.origin_message_id == (origin if origin and origin.strip() else stored.msg_id)
    assert copy.get_property("RETRY_TOPIC") == stored.properties.get("RETRY_TOPIC", stored.topic)
    assert copy.get_property("WAIT") == "false"
    assert copy.reconsume_times == stored.reconsume_times + 1
    identity = ("body", "flag", "tags", "born_timestamp", "uniq_key")
    assert [getattr(copy, name) for name in identity] == [getattr(stored, name) for name in identity]


@given(case=broker_cases(), stored=stored_messages(), known=st.booleans(), delay_level=st.integers(-2, 25))
def test_refusals_store_nothing(case, stored, known, delay_level):
    """SB-01, SB-02, SB-03, SB-06, SB-07: an answer without a stored copy leaves store and groups untouched."""
    broker = case.build(stored)
    offset = stored.commit_log_offset if known else -1
    after, result = send_back(broker, case.version, offset, delay_level)
    if result.stored is None:
        event(f"refused: {result.rules[-1]}")
        assert after.store == broker.store and after.groups == broker.groups
        assert set(after.topics) - set(broker.topics) <= {RETRY_TOPIC}
        event(result.rules[-1])
    else:
        assert known, "SB-07: a send-back whose offset finds no message is refused, never stored"
        assert after.store.next_physical_offset > broker.store.next_physical_offset


def store_original(case_version="4.9.8", **group):
    group_config = SubscriptionGroupConfig(GROUP, **group)
    case = BrokerCase(case_version, group_config, 6, None, None, None)
    original = Message(topic="T", body=b"payload", tags="tagA", properties=Map({"UNIQ_KEY": "U1", "TAGS": "tagA"}),
                       commit_log_offset=40, msg_id=compute_message_id(40), flag=3, born_timestamp=77)
    return case.build(original), original


@given(queue_nums=st.integers(1, 8), existing=st.none() | st.integers(1, 8), random_int=RANDOM_INTS)
def test_retry_queue_and_topic_creation(queue_nums, existing, random_int):
    """SB-05: queue = random % retryQueueNums; a missing retry topic is created, an existing one kept as is."""
    event("SB-05")
    broker, original = store_original(retry_queue_nums=queue_nums)
    if existing is not None:
        broker = evolve(broker, topics=broker.topics.set(RETRY_TOPIC, TopicConfig(RETRY_TOPIC, existing, existing, 6)))
    after, result = send_back(broker, "4.9.8", original.commit_log_offset, random_int=random_int)
    assert get_destination(result.stored)[1] == random_int % queue_nums
    kept = existing if existing is not None else queue_nums
    assert after.topics[RETRY_TOPIC] == TopicConfig(RETRY_TOPIC, kept, kept, 6)


@pytest.mark.parametrize("version", VERSIONS)
@given(max_times=st.integers(0, 24))
def test_default_timetable(version, max_times):
    """SB-04, SB-12: with level 0 a message is retried max times at levels 3 + r (clamped), then dead-lettered."""
    broker, message = store_original(version)
    levels = []
    while True:
        broker, result = send_back(broker, version, message.commit_log_offset, header_max=max_times)
        message = result.stored
        topic, _queue, level = get_destination(message)
        if topic == DLQ_TOPIC:
            break
        levels.append(level)
    event("SB-04")
    assert levels == [min(3 + r, MAX_LEVEL) for r in range(max_times)]
    assert message.reconsume_times == max_times + 1
    if max_times == 16:
        assert [Config().delay_levels[level - 1] // 1000 for level in levels] == DEFAULT_RETRY_WAITS
        assert sum(DEFAULT_RETRY_WAITS) == 4 * 3600 + 45 * 60 + 40


@given(version=st.sampled_from(VERSIONS), rounds=st.integers(0, 4), level=st.integers(0, 25))
def test_a_client_level_is_kept_and_level_zero_is_the_brokers(version, rounds, level):
    """SB-12: after `rounds` broker-decided retries, a send-back at level 0 is parked at 3 + reconsumeTimes and one
    at a positive level at that level, both clamped to the highest level by the store (ST-01)."""
    broker, message = store_original(version)
    for _ in range(rounds):
        broker, result = send_back(broker, version, message.commit_log_offset, header_max=16)
        message = result.stored
    _broker, result = send_back(broker, version, message.commit_log_offset, delay_level=level, header_max=16)
    assert get_destination(result.stored)[0] == RETRY_TOPIC
    expected = 3 + message.reconsume_times if level == 0 else level
    assert get_destination(result.stored)[2] == min(expected, MAX_LEVEL)
    if level not in (0, 3 + message.reconsume_times):
        event("SB-12")  # a client's own level, kept


@given(rounds=st.integers(1, 20), version=st.sampled_from(VERSIONS))
def test_copy_keeps_identity(rounds, version):
    """SB-08, SB-13: every copy keeps body, flag, tags, born time, UNIQ_KEY, RETRY_TOPIC=T, the first ORIGIN id."""
    event("SB-08")
    broker, original = store_original(version)
    message = original
    for _ in range(rounds):
        broker, result = send_back(broker, version, message.commit_log_offset, header_max=None)
        message = result.stored
    assert (message.body, message.flag, message.tags, message.born_timestamp) == (b"payload", 3, "tagA", 77)
    assert message.uniq_key == "U1" and message.get_property("RETRY_TOPIC") == "T"
    assert message.origin_message_id == original.msg_id
    assert message.reconsume_times == rounds


@given(reconsume=st.integers(0, 20), header_max=st.none() | st.integers(0, 20), group_max=st.integers(0, 20))
def test_header_max_wins(reconsume, header_max, group_max):
    """SB-09: the header's maxReconsumeTimes decides when present, the group's retryMaxTimes otherwise."""
    broker, original = store_original(retry_max_times=group_max)
    stored = evolve(original, reconsume_times=reconsume)
    broker = with_only_stored(broker, stored)
    _, result = send_back(broker, "4.9.8", 40, header_max=header_max)
    limit = group_max if header_max is None else header_max
    event("SB-09: header" if header_max is not None else "SB-09: group")
    assert (get_destination(result.stored)[0] == DLQ_TOPIC) == (reconsume >= limit)


@given(max_times=st.integers(-1, 20), modern=st.booleans(), uniq_key=st.none() | st.just("U9"),
       level=st.integers(-1, 18))
def test_the_client_header_names_the_message_and_its_maximum(max_times, modern, uniq_key, level):
    """SB-09, the client's side (MQClientAPIImpl.consumerSendMessageBack 4.9.8 L1077-L1094): group, the consumed
    message's topic, commit-log offset and client id (its UNIQ_KEY, else the offset msg id) and the delay level;
    maxReconsumeTimes only from a client of 3.4.9 or later (-1 is 16)."""
    properties = Map({"UNIQ_KEY": uniq_key} if uniq_key else {})
    message = Message("T", b"x", properties=properties, commit_log_offset=40, msg_id=compute_message_id(40))
    config = Config(max_reconsume_times=max_times, client_version_at_least_3_4_9=modern)
    request = compute_send_back_request(message, GROUP, config, level)
    assert (request.group, request.origin_topic, request.offset, request.delay_level) == (GROUP, "T", 40, level)
    assert request.origin_msg_id == (uniq_key or compute_message_id(40))
    assert request.max_reconsume_times == ((16 if max_times == -1 else max_times) if modern else None)


@pytest.mark.parametrize("version", VERSIONS)
def test_dlq_topic_permission_per_profile(version):
    """SB-10: a DLQ topic created by the handler is write-only up to 4.9.1 and read-write since 4.9.2."""
    broker, original = store_original(version)
    after, _ = send_back(broker, version, original.commit_log_offset, delay_level=-1)
    assert after.topics[DLQ_TOPIC] == TopicConfig(DLQ_TOPIC, 1, 1, 6 if DLQ_READABLE[version] else 2)


DLQ_CASES = st.tuples(st.integers(0, 20), st.integers(1, 18))  # (reconsume times, stale DELAY of the last retry)


def dead_letter(version: str, reconsume: int, stale_level: int) -> Message:
    broker, original = store_original(version)
    stored = evolve(original, reconsume_times=reconsume).with_delay_time_level(stale_level)
    broker = with_only_stored(broker, stored)
    return send_back(broker, version, 40, header_max=reconsume)[1].stored


@pytest.mark.parametrize("version", VERSIONS)
def test_dlq_arrives_late_before_4_9_2(version):
    """SB-11: "a dead letter is stored in the DLQ at once" holds from 4.9.2; under 4.9.1 Hypothesis refutes it."""

    def parked(case):
        return dead_letter(version, *case).topic != DLQ_TOPIC

    if DLQ_CLEARS_DELAY[version]:
        assert not any(parked((r, level)) for r in (0, 16) for level in (1, 18))
    else:
        reconsume, level = find(DLQ_CASES, parked, settings=settings(max_examples=200, database=None))
        assert get_destination(dead_letter(version, reconsume, level)) == (DLQ_TOPIC, 0, level)
