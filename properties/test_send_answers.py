"""Properties of the broker's whole answer to a producer send (spec/02-send-back.md, RS-01, RS-04 and RS-07): the
code, the remark, the rules the model cites, and the broker it leaves, for its three entry points —
`on_send_retry_message` (a send through the producer's route), `on_broker_send_retry_message` (the broker alone, as
the model-backed server answers a SEND_MESSAGE to %RETRY%) and `on_send_message` (any SEND_MESSAGE); and SB-01's
refusal of a send-back, which shares the remark.

mutmut found these parts of the answer unchecked (benchmarks/MUTATION.md): a remark or a cited rule could change, a
refusal could hand back another broker, a plain send could keep WAIT in what it stores. The remarks are RocketMQ's
own, by their fixed beginning (the rest names the request): `SendMessageProcessor` 4.9.8 L354-L355 (an unknown
group), `AbstractSendMessageProcessor.msgCheck` 4.9.8 L212 (a missing topic) and L221 (a queue id beyond the
topic's queues).
"""

from __future__ import annotations

import pytest
from hypothesis import event, given
from hypothesis import strategies as st
from immutables import Map

from model.broker.locks import QueueLock
from model.broker.retry_send import on_broker_send_retry_message, on_send_message, on_send_retry_message
from model.broker.send_back import ResponseCode, SendBackRequest, on_consumer_send_msg_back
from model.broker.state import PERM_READ, PERM_WRITE, Broker, SubscriptionGroupConfig, TopicConfig
from model.values.config import Config
from model.values.errors import IllegalTransition
from model.values.message import SCHEDULE_TOPIC, Message, MessageQueue
from properties.coverage import SPEC_RULE_IDS
from properties.send_back_strategies import (
    BROKER_LOCK_MAX_LIVE_MILLIS,
    DLQ_TOPIC,
    GROUP,
    RANDOM_INTS,
    RETRY_SEND_LOCK_CHECK,
    RETRY_TOPIC,
    VERSIONS,
)

NOW = 1_000_000
TOPIC = "T"
headers = st.tuples(st.none() | st.integers(0, 20), st.none() | st.integers(-1, 20))


def retry_message(queue_id: int = 0, **properties: str) -> Message:
    return Message(RETRY_TOPIC, b"x", None, Map({"UNIQ_KEY": "U1", **properties}), queue_id)


def assert_refused(before: Broker, after: Broker, result, code: ResponseCode, remark_start: str, rules: tuple):
    """A refusal: that code, RocketMQ's remark, those rules (each one spec/ defines), nothing stored."""
    assert (result.code, result.stored, result.rules) == (code, None, rules)
    assert set(result.rules) <= SPEC_RULE_IDS
    assert result.remark.startswith(remark_start), result.remark
    assert after.store is before.store


@given(alone=st.booleans(), header=headers, random_int=RANDOM_INTS)
def test_a_send_for_an_unknown_group_is_refused_and_changes_nothing(alone, header, random_int):
    """RS-01: SUBSCRIPTION_GROUP_NOT_EXIST naming the group (not the topic), and the very broker it was given."""
    broker = Broker()
    if alone:
        after, result = on_broker_send_retry_message(broker, Config(), retry_message(), *header, NOW)
    else:
        after, result = on_send_retry_message(broker, Config(), retry_message(), *header, NOW, random_int)
    assert after is broker
    assert_refused(broker, after, result, ResponseCode.SUBSCRIPTION_GROUP_NOT_EXIST,
                   f"subscription group not exist, {GROUP}", ("RS-01",))


@given(retry_queue_nums=st.integers(1, 4), queue_id=st.integers(-2, 6), header=headers)
def test_the_broker_alone_refuses_only_a_queue_id_outside_the_retry_topic(retry_queue_nums, queue_id, header):
    """RS-07, the broker alone: the retry topic exists afterwards as the heartbeat creates it (retryQueueNums
    queues, read and write); a queue id outside it is SYSTEM_ERROR, any other is stored there (SB-05 cited)."""
    broker = Broker(groups=Map({GROUP: SubscriptionGroupConfig(GROUP, retry_queue_nums)}))
    after, result = on_broker_send_retry_message(broker, Config(), retry_message(queue_id), *header, NOW)
    created = after.topics[RETRY_TOPIC]
    assert (created.read_queue_nums, created.write_queue_nums) == (retry_queue_nums, retry_queue_nums)
    assert created.perm == PERM_READ | PERM_WRITE
    if 0 <= queue_id < retry_queue_nums:
        assert result.code is ResponseCode.SUCCESS and result.remark == ""
        assert result.rules[0] == "SB-05" and set(result.rules) <= SPEC_RULE_IDS
    else:
        assert_refused(broker, after, result, ResponseCode.SYSTEM_ERROR, f"request queueId[{queue_id}] is illegal",
                       ("SB-05", "RS-07"))


@given(broker_perm=st.sampled_from((0, 2, 4, 6)), retry_perm=st.sampled_from((0, 2, 4, 6)),
       write_queue_nums=st.integers(0, 2), header=headers, random_int=RANDOM_INTS)
def test_a_send_with_no_writeable_route_names_why(broker_perm, retry_perm, write_queue_nums, header, random_int):
    """RS-07, through the route: NO_PERMISSION or SYSTEM_ERROR with a remark naming the topic, rules SB-05 and
    RS-07; a send that is stored has no remark, cites SB-05 first and its destination's rule last (RS-06 for
    %RETRY%, SB-10 for the DLQ), and leaves WAIT out of what it stores unless it is parked."""
    retry = TopicConfig(RETRY_TOPIC, 1, write_queue_nums, retry_perm)
    groups = Map({GROUP: SubscriptionGroupConfig(GROUP)})
    broker = Broker(perm=broker_perm, topics=Map({RETRY_TOPIC: retry}), groups=groups)
    after, result = on_send_retry_message(broker, Config(), retry_message(WAIT="true"), *header, NOW, random_int)
    if not (broker_perm & PERM_WRITE and retry_perm & PERM_WRITE):
        assert_refused(broker, after, result, ResponseCode.NO_PERMISSION, f"no writeable route to {RETRY_TOPIC}",
                       ("SB-05", "RS-07"))
    elif write_queue_nums == 0:
        assert_refused(broker, after, result, ResponseCode.SYSTEM_ERROR, f"no route info of {RETRY_TOPIC}",
                       ("SB-05", "RS-07"))
    else:
        assert (result.code, result.remark, result.rules[0]) == (ResponseCode.SUCCESS, "", "SB-05")
        assert set(result.rules) <= SPEC_RULE_IDS and result.rules[-1] in ("RS-06", "SB-10")
        # The stored properties string leaves WAIT out, unless the store parks the message and rebuilds it.
        assert ("WAIT" in result.stored.properties) == (result.stored.topic == SCHEDULE_TOPIC)


@given(version=st.sampled_from(VERSIONS), locked=st.booleans(), reconsume=st.integers(0, 4),
       header_max=st.integers(0, 4))
def test_a_dead_letter_cites_rs_04_exactly_when_the_lock_sent_it(version, locked, reconsume, header_max):
    """RS-04: a direct send sent to the DLQ cites RS-04 iff the group holds an unexpired lock and the profile
    redirects on it (5.1.1+); a send kept in %RETRY% never does."""
    lock = QueueLock("c", NOW - (0 if locked else 2 * BROKER_LOCK_MAX_LIVE_MILLIS))
    broker = Broker(groups=Map({GROUP: SubscriptionGroupConfig(GROUP)}),
                    queue_locks=Map({(GROUP, MessageQueue(TOPIC, 0)): lock}))
    _after, result = on_send_retry_message(broker, Config(profile=version), retry_message(), reconsume, header_max,
                                           NOW, 0)
    topic = result.stored.topic if result.stored.topic != SCHEDULE_TOPIC else result.stored.get_property("REAL_TOPIC")
    redirected_by_lock = locked and RETRY_SEND_LOCK_CHECK[version]
    assert ("RS-04" in result.rules) == (topic == DLQ_TOPIC and redirected_by_lock)
    assert set(result.rules) <= SPEC_RULE_IDS


@given(queues=st.tuples(st.integers(1, 4), st.integers(1, 4)), delay=st.integers(0, 3))
def test_a_plain_send_stores_without_wait_and_parks_a_delayed_message(queues, delay):
    """RS-07, a plain send that msgCheck lets through: SUCCESS with no remark, ST-06 cited; what is stored leaves
    WAIT out (the properties string a send keeps, SendMessageProcessor 4.9.8 L303-L312), except where the message
    is parked in SCHEDULE_TOPIC_XXXX by the configured delay table: the store rebuilds a parked message's string
    from its property map, which still holds WAIT (CommitLog.asyncPutMessage 4.9.8 L634-L645), its real topic kept."""
    broker = Broker(topics=Map({TOPIC: TopicConfig(TOPIC, queues[1], queues[0])}))
    properties = {"UNIQ_KEY": "U1", "WAIT": "true", **({"DELAY": str(delay)} if delay else {})}
    message = Message(TOPIC, b"x", properties=Map(properties), queue_id=0)
    after, result = on_send_message(broker, Config(), message, (None, None), NOW, 0)
    assert (result.code, result.remark, result.rules) == (ResponseCode.SUCCESS, "", ("ST-06",))
    assert ("WAIT" in result.stored.properties) == bool(delay)
    assert (result.stored.topic, result.stored.get_property("REAL_TOPIC")) == (
        (SCHEDULE_TOPIC, TOPIC) if delay else (TOPIC, None))
    assert after.store.get_max_offset_in_queue(result.stored.topic, result.stored.queue_id) == 1


@given(delay_level=st.integers(-1, 3), random_int=RANDOM_INTS)
def test_a_send_back_for_an_unknown_group_is_refused_with_rocketmqs_remark(delay_level, random_int):
    """SB-01: CONSUMER_SEND_MSG_BACK for a group without a subscription group config is SUBSCRIPTION_GROUP_NOT_EXIST,
    "subscription group not exist, <group>" (SendMessageProcessor.consumerSendMsgBack 4.9.8 L128-L131)."""
    broker = Broker()
    request = SendBackRequest(GROUP, TOPIC, 0, delay_level, "", None)
    after, result = on_consumer_send_msg_back(broker, Config(), request, NOW, random_int)
    assert after is broker
    assert_refused(broker, after, result, ResponseCode.SUBSCRIPTION_GROUP_NOT_EXIST,
                   f"subscription group not exist, {GROUP}", ("SB-01",))


@given(retry_perm=st.sampled_from((0, PERM_READ)), delay_level=st.integers(-1, 3), random_int=RANDOM_INTS)
def test_a_send_back_to_a_retry_topic_that_is_not_writeable_is_refused(retry_perm, delay_level, random_int):
    """SB-06: a writeable broker whose %RETRY% topic is not writeable answers NO_PERMISSION, "the topic[%RETRY%G]
    sending message is forbidden" (SendMessageProcessor.consumerSendMsgBack 4.9.8 L163-L166), before it looks the
    message up; nothing is stored."""
    retry = TopicConfig(RETRY_TOPIC, 1, 1, retry_perm)
    broker = Broker(topics=Map({RETRY_TOPIC: retry}), groups=Map({GROUP: SubscriptionGroupConfig(GROUP)}))
    request = SendBackRequest(GROUP, TOPIC, 0, delay_level, "", None)
    after, result = on_consumer_send_msg_back(broker, Config(), request, NOW, random_int)
    assert after.topics[RETRY_TOPIC] == retry  # an existing topic is kept as it is (SB-05)
    assert_refused(broker, after, result, ResponseCode.NO_PERMISSION,
                   f"the topic[{RETRY_TOPIC}] sending message is forbidden", ("SB-05", "SB-06"))
    event("SB-06")


@pytest.mark.parametrize("random_int", [-1, 99_999_999])
def test_a_draw_outside_the_brokers_range_is_an_illegal_send(random_int):
    """The producer's queue draw is an argument of the step: one outside [0, 99999999) is not a SEND_MESSAGE the
    model can take, and the error names the state and the event (h11's style)."""
    broker = Broker(groups=Map({GROUP: SubscriptionGroupConfig(GROUP)}))
    with pytest.raises(IllegalTransition) as raised:
        on_send_retry_message(broker, Config(), retry_message(), None, None, NOW, random_int)
    assert (raised.value.state, raised.value.event) == ("broker", "SEND_MESSAGE")


def test_a_send_to_another_topic_is_not_a_retry_send():
    """on_send_retry_message takes %RETRY% topics only: the error names the state and the event."""
    broker = Broker(groups=Map({GROUP: SubscriptionGroupConfig(GROUP)}))
    with pytest.raises(IllegalTransition) as raised:
        on_send_retry_message(broker, Config(), Message(TOPIC), None, None, NOW, 0)
    assert (raised.value.state, raised.value.event) == ("broker", "SEND_MESSAGE")
    assert "not a %RETRY% topic" in raised.value.reason
