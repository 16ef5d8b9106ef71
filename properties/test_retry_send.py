"""Properties of spec/02-send-back.md, rules RS-01 to RS-13: direct sends to %RETRY%<group> and their builders.

The oracles are the reference's §1.5, §3 and §4.4 written out; version behaviour comes from the reference tables
in send_back_strategies, not from model/values/profiles.py.
"""

from __future__ import annotations

import pytest
from hypothesis import Phase, event, find, given, settings
from hypothesis import strategies as st
from immutables import Map

from model.broker.locks import QueueLock
from model.broker.retry_send import on_broker_send_retry_message, on_send_retry_message
from model.broker.send_back import SendBackRequest, on_consumer_send_msg_back
from model.broker.state import Broker, SubscriptionGroupConfig, TopicConfig
from model.client.retry_message import compute_fallback_retry_message, compute_orderly_retry_message
from model.values.config import Config, ConsumeMode
from model.values.errors import IllegalTransition
from model.values.message import Message
from model.values.records import evolve
from properties.coverage import record_rules
from properties.send_back_strategies import (
    BROKER_LOCK_MAX_LIVE_MILLIS,
    DLQ_TOPIC,
    FALLBACK_KEEPS_ORIGIN,
    GROUP,
    MAX_LEVEL,
    ORDERLY_KEEPS_ORIGIN,
    ORDERLY_PLUS_ONE,
    RANDOM_INTS,
    RETRY_SEND_IMMEDIATE,
    RETRY_SEND_LOCK_CHECK,
    RETRY_SEND_STRICT,
    RETRY_TOPIC,
    VERSIONS,
    BrokerCase,
    broker_cases,
    get_destination,
    stored_messages,
)

INTEGER_MAX_VALUE = 2**31 - 1
NOW = 1_000_000
SEARCH = settings(max_examples=300, database=None, phases=tuple(Phase))  # shrinks in any profile


def expected_retry_send(case: BrokerCase, delay: int, reconsume: int | None, header_max: int | None, now: int,
                        random_int: int) -> tuple[str, tuple[str, int, int] | None]:
    """Reference §4.4 (+ the heartbeat-created retry topic): the code and where the message is bound."""
    group = case.group
    if group is None:
        return "SUBSCRIPTION_GROUP_NOT_EXIST", None
    n = group.retry_queue_nums
    retry = case.retry_topic or TopicConfig(RETRY_TOPIC, n, n, 6)
    if not (case.broker_perm & 2 and retry.perm & 2):
        return "NO_PERMISSION", None
    if retry.write_queue_nums <= 0:
        return "SYSTEM_ERROR", None
    r = reconsume or 0
    limit = group.retry_max_times if header_max is None else header_max
    locked = case.lock is not None and now - case.lock.last_update_timestamp <= BROKER_LOCK_MAX_LIVE_MILLIS
    over = r > limit if RETRY_SEND_STRICT[case.version] else r >= limit
    if over or (RETRY_SEND_LOCK_CHECK[case.version] and locked):
        level = 0 if RETRY_SEND_IMMEDIATE[case.version] else max(delay, 0)
        return "SUCCESS", (DLQ_TOPIC, 0, min(level, MAX_LEVEL))
    return "SUCCESS", (RETRY_TOPIC, random_int % retry.write_queue_nums, min(max(delay, 0), MAX_LEVEL))


@given(case=broker_cases(), delay=st.integers(-1, 25), reconsume=st.none() | st.integers(0, 20),
       header_max=st.none() | st.integers(0, 20), now=st.integers(0, 300_000), random_int=RANDOM_INTS)
def test_retry_send_matches_reference_oracle(case, delay, reconsume, header_max, now, random_int):
    """RS-01, RS-02, RS-03, RS-04, RS-05, RS-06, RS-07: code, destination, level, reconsumeTimes match §4.4."""
    message = Message(RETRY_TOPIC, b"body", properties=Map({"UNIQ_KEY": "U1", "DELAY": str(delay)}))
    broker = case.build()
    after, result = on_send_retry_message(broker, Config(profile=case.version), message, reconsume, header_max,
                                          now, random_int)
    record_rules(result.rules)
    code, destination = expected_retry_send(case, delay, reconsume, header_max, now, random_int)
    assert result.code.name == code
    assert (None if result.stored is None else get_destination(result.stored)) == destination
    if destination is None:
        assert after.store == broker.store
    else:
        assert result.stored.reconsume_times == (reconsume or 0)
        assert result.stored.born_timestamp == now and result.stored.uniq_key == "U1"


def consumer_config(version: str, orderly: bool, max_times: int, modern: bool = True) -> Config:
    mode = ConsumeMode.ORDERLY if orderly else ConsumeMode.CONCURRENTLY
    return Config(profile=version, consume_mode=mode, max_reconsume_times=max_times,
                  client_version_at_least_3_4_9=modern)


def expected_builder_properties(msg: Message, keeps_origin: bool, reconsume_time: int, max_times: int) -> dict:
    """§1.5 / §3: the consumed message's properties plus RETRY_TOPIC, DELAY and the two header properties (the first
    attempt's properties are encoded before the producer clears them, RS-11), minus TRAN_MSG; ORIGIN_MESSAGE_ID as
    the property-order bug leaves it."""
    expected = dict(msg.properties)
    expected.pop("TRAN_MSG", None)
    expected.update({"RETRY_TOPIC": msg.topic, "DELAY": str(3 + msg.reconsume_times),
                     "RECONSUME_TIME": str(reconsume_time), "MAX_RECONSUME_TIMES": str(max_times)})
    if keeps_origin:
        existing = msg.properties.get("ORIGIN_MESSAGE_ID")
        client_id = msg.properties.get("UNIQ_KEY") or msg.msg_id
        expected["ORIGIN_MESSAGE_ID"] = existing if existing and existing.strip() else client_id
    return expected


BUILDER_INPUTS = dict(msg=stored_messages(), version=st.sampled_from(VERSIONS), max_times=st.integers(-1, 20),
                      modern=st.booleans(), transactional=st.booleans())


def with_listener_view(msg: Message, transactional: bool) -> Message:
    """The message as the listener sees it: topic reset to the original topic, maybe a TRAN_MSG property."""
    msg = evolve(msg, topic="T")
    return msg.put_property("TRAN_MSG", "true") if transactional else msg


def check_builder(builder, orderly: bool, msg: Message, version: str, max_times: int, modern: bool,
                  transactional: bool) -> None:
    """The built message and header against §1.5 (fallback) or §3 (orderly)."""
    msg = with_listener_view(msg, transactional)
    built, reconsume, header_max = builder(msg, GROUP, consumer_config(version, orderly, max_times, modern))
    keeps_origin = (ORDERLY_KEEPS_ORIGIN if orderly else FALLBACK_KEEPS_ORIGIN)[version]
    plus_one = ORDERLY_PLUS_ONE[version] if orderly else True
    unbounded = INTEGER_MAX_VALUE if orderly else 16  # CMOS vs DMPCI getMaxReconsumeTimes() for -1
    assert (built.topic, built.body, built.tags, built.flag) == (RETRY_TOPIC, msg.body, msg.tags, msg.flag)
    client_max = unbounded if max_times == -1 else max_times
    reconsume_time = msg.reconsume_times + (1 if plus_one else 0)
    assert dict(built.properties) == expected_builder_properties(msg, keeps_origin, reconsume_time, client_max)
    assert reconsume == reconsume_time
    assert header_max == (client_max if modern else None)
    event("RS-11")


@given(**BUILDER_INPUTS)
def test_fallback_message_matches_reference(msg, version, max_times, modern, transactional):
    """RS-08, RS-09, RS-11: the fallback message and its header, per §1.5."""
    event("RS-08")
    check_builder(compute_fallback_retry_message, False, msg, version, max_times, modern, transactional)
    if "ORIGIN_MESSAGE_ID" not in msg.properties:
        event("RS-09")  # a first failure: check_builder asserted whether this version keeps the id


@given(**BUILDER_INPUTS)
def test_orderly_message_matches_reference(msg, version, max_times, modern, transactional):
    """RS-10, RS-11: the orderly give-up message and its header, per §3."""
    event("RS-10")
    check_builder(compute_orderly_retry_message, True, msg, version, max_times, modern, transactional)


def give_up(version: str, max_times: int, reconsume: int, locked: bool = False) -> str:
    """The destination topic of an orderly give-up send of a message consumed `reconsume` times."""
    config = consumer_config(version, True, max_times)
    broker = BrokerCase(version, SubscriptionGroupConfig(GROUP), 6, None, None,
                        QueueLock("c", NOW) if locked else None).build()
    msg = Message("T", b"x", properties=Map({"UNIQ_KEY": "U1"}), msg_id="OFFSET-ID", reconsume_times=reconsume)
    built, header_reconsume, header_max = compute_orderly_retry_message(msg, GROUP, config)
    stored = on_send_retry_message(broker, config, built, header_reconsume, header_max, NOW, 0)[1].stored
    return get_destination(stored)[0]


# §3 / §4.4: for r = max the orderly give-up lands in the DLQ except in 5.0.0-5.1.0 (#6163, #5717).
ORDERLY_GIVE_UP_AT_MAX = {"4.9.1": DLQ_TOPIC, "4.9.8": DLQ_TOPIC, "5.0.0": RETRY_TOPIC, "5.3.3": DLQ_TOPIC,
                          "develop": DLQ_TOPIC}


@pytest.mark.parametrize("version", VERSIONS)
@given(max_times=st.integers(0, 20))
def test_orderly_give_up_destination_per_profile(version, max_times):
    """RS-12: an orderly give-up at r = max goes to %DLQ% (4.9.8, 5.3.3) or back to %RETRY% (5.0.0)."""
    event("RS-12")
    event(f"RS-12: {version}")
    assert give_up(version, max_times, max_times) == ORDERLY_GIVE_UP_AT_MAX[version]


@pytest.mark.parametrize("version", VERSIONS)
def test_orderly_give_up_misses_dlq_in_5_0_0(version):
    """RS-12: "an orderly give-up (r >= max) reaches the DLQ" holds except in 5.0.0, where Hypothesis refutes it."""
    cases = st.tuples(st.integers(0, 20), st.integers(0, 3))  # (max, r - max)

    def misses(case):
        return give_up(version, case[0], case[0] + case[1]) != DLQ_TOPIC

    if ORDERLY_GIVE_UP_AT_MAX[version] == DLQ_TOPIC:
        assert not any(misses((m, extra)) for m in (0, 1, 16) for extra in (0, 1))
    else:
        max_times, extra = find(cases, misses, settings=SEARCH)
        assert extra == 0


def rpc_and_fallback(version: str, max_times: int, reconsume: int) -> tuple[str, str]:
    """Where the send-back RPC and the fallback send a message stored with `reconsume` times (no queue locks)."""
    config = consumer_config(version, False, max_times)
    stored = Message("T", b"x", properties=Map({"UNIQ_KEY": "U1"}), commit_log_offset=0, msg_id="OFFSET-ID",
                     reconsume_times=reconsume)
    broker = BrokerCase(version, SubscriptionGroupConfig(GROUP), 6, None, None, None).build(stored)
    rpc = on_consumer_send_msg_back(broker, config, SendBackRequest(GROUP, "T", 0, 0, "U1", max_times), NOW, 0)
    built, header_reconsume, header_max = compute_fallback_retry_message(stored, GROUP, config)
    fallback = on_send_retry_message(broker, config, built, header_reconsume, header_max, NOW, 0)
    return get_destination(rpc[1].stored)[0], get_destination(fallback[1].stored)[0]


@pytest.mark.parametrize("version", VERSIONS)
def test_fallback_dead_letters_one_retry_early_in_4_9(version):
    """RS-13: "RPC and fallback agree on the DLQ" holds in 5.x; in 4.9 Hypothesis finds r = max - 1 against it."""
    cases = st.tuples(st.integers(1, 20), st.integers(0, 20))

    def disagree(case):
        rpc, fallback = rpc_and_fallback(version, *case)
        return rpc != fallback

    if RETRY_SEND_STRICT[version]:
        assert not any(disagree((m, r)) for m in (1, 16) for r in range(m - 1, m + 2))
    else:
        max_times, reconsume = find(cases, disagree, settings=SEARCH)
        assert reconsume == max_times - 1
        assert rpc_and_fallback(version, max_times, reconsume) == (RETRY_TOPIC, DLQ_TOPIC)


@given(version=st.sampled_from(VERSIONS), max_times=st.integers(1, 20), reconsume=st.integers(0, 20))
def test_rpc_and_fallback_destinations(version, max_times, reconsume):
    """RS-13: the send-back dead-letters at r >= max (SB-04); the fallback's RECONSUME_TIME r + 1 at r + 1 >= max in
    4.9 (one retry early) and at r + 1 > max in 5.x (§4.4)."""
    event("RS-13")
    fallback_dlq = reconsume + 1 > max_times if RETRY_SEND_STRICT[version] else reconsume + 1 >= max_times
    expected = (DLQ_TOPIC if reconsume >= max_times else RETRY_TOPIC, DLQ_TOPIC if fallback_dlq else RETRY_TOPIC)
    assert rpc_and_fallback(version, max_times, reconsume) == expected


@pytest.mark.parametrize("version", VERSIONS)
def test_fallback_loses_origin_message_id(version):
    """RS-09: "a first failure's fallback copy carries ORIGIN_MESSAGE_ID" holds only in develop."""
    config = Config(profile=version)

    def lost(msg):
        return compute_fallback_retry_message(evolve(msg, topic="T"), GROUP, config)[0].origin_message_id is None

    def without_origin(msg):
        properties = msg.properties
        return evolve(msg, properties=properties.delete("ORIGIN_MESSAGE_ID") if "ORIGIN_MESSAGE_ID" in properties
                      else properties)

    first_failures = stored_messages().map(without_origin)
    if FALLBACK_KEEPS_ORIGIN[version]:
        assert not any(lost(Message("T", properties=Map({"UNIQ_KEY": u}), msg_id="ID")) for u in ("U1", ""))
    else:
        assert find(first_failures, lost, settings=SEARCH).origin_message_id is None


@given(version=st.sampled_from(VERSIONS), max_times=st.integers(0, 20), reconsume=st.integers(0, 20),
       lock_age=st.integers(0, 2 * BROKER_LOCK_MAX_LIVE_MILLIS))
def test_locked_group_always_dead_letters(version, max_times, reconsume, lock_age):
    """RS-04: since 5.1.1 an unexpired queue lock of the group sends every direct send to the DLQ."""
    config = consumer_config(version, False, max_times)
    lock = QueueLock("c", NOW - lock_age)
    broker = BrokerCase(version, SubscriptionGroupConfig(GROUP), 6, None, None, lock).build()
    msg = Message("T", b"x", properties=Map({"UNIQ_KEY": "U1"}), reconsume_times=reconsume)
    built, header_reconsume, header_max = compute_fallback_retry_message(msg, GROUP, config)
    _, result = on_send_retry_message(broker, config, built, header_reconsume, header_max, NOW, 0)
    unexpired = lock_age <= BROKER_LOCK_MAX_LIVE_MILLIS
    if RETRY_SEND_LOCK_CHECK[version] and unexpired:
        event("RS-04")
        assert get_destination(result.stored)[0] == DLQ_TOPIC
    else:
        strict = RETRY_SEND_STRICT[version]
        over = reconsume + 1 > max_times if strict else reconsume + 1 >= max_times
        assert (get_destination(result.stored)[0] == DLQ_TOPIC) == over


def test_send_to_other_topic_is_illegal():
    """RS-01: only %RETRY% topics go through handleRetryAndDLQ; anything else is not this event."""
    broker = BrokerCase("4.9.8", SubscriptionGroupConfig(GROUP), 6, None, None, None).build()
    with pytest.raises(IllegalTransition, match="not a %RETRY% topic"):
        on_send_retry_message(broker, Config(), Message("T"), None, None, NOW, 0)


@given(perm=st.sampled_from((2, 4, 6)), retry_queue_nums=st.integers(0, 3), queue_id=st.integers(0, 3),
       reconsume=st.integers(0, 3))
def test_broker_alone_stores_a_retry_send_at_its_queue_whatever_the_permission(perm, retry_queue_nums, queue_id,
                                                                               reconsume):
    """[RS-07] Over the wire, with no producer route in between, 4.9.8's broker checks no permission for a send to
    %RETRY% (SMP 4.9.8 L344-L387): it stores at the request's queue id, or SYSTEM_ERROR outside the queues."""
    group = SubscriptionGroupConfig(GROUP, retry_queue_nums, 16)
    broker = Broker(perm=perm, groups=Map({GROUP: group}))
    message = Message(RETRY_TOPIC, b"x", None, Map(), queue_id, -1, -1, "", reconsume, 0, 0)
    _after, result = on_broker_send_retry_message(broker, Config(), message, reconsume, 2, NOW)
    event("RS-07")
    if queue_id >= retry_queue_nums:
        assert (result.code.name, result.stored) == ("SYSTEM_ERROR", None)
    elif reconsume >= 2:
        assert result.code.name == "SUCCESS" and result.stored.topic in (DLQ_TOPIC, "SCHEDULE_TOPIC_XXXX")
    else:
        assert result.code.name == "SUCCESS"
        assert (result.stored.topic, result.stored.queue_id) == (RETRY_TOPIC, queue_id)
