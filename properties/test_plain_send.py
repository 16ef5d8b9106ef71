"""Properties of RS-07's plain send (spec/02-send-back.md): SEND_MESSAGE to a topic that is not %RETRY% is the
broker's msgCheck alone, and a %RETRY% send is the direct-send path with the request's header.

The oracle is AbstractSendMessageProcessor.msgCheck (4.9.8 L165-L233) written out: a missing topic is
TOPIC_NOT_EXIST, a queue id beyond max(write, read) queues SYSTEM_ERROR, anything else is stored where it was sent,
whether the broker is writeable or not (only ordered topics are refused, and the model has none).
"""

from __future__ import annotations

from hypothesis import event, given
from hypothesis import strategies as st
from immutables import Map

from model.broker.retry_send import on_send_message, on_send_retry_message
from model.broker.send_back import ResponseCode
from model.broker.state import Broker, SubscriptionGroupConfig, TopicConfig
from model.values.config import Config
from model.values.message import Message
from properties.send_back_strategies import GROUP, RETRY_TOPIC

NOW = 1_000_000
TOPIC = "T"
headers = st.tuples(st.none() | st.integers(0, 20), st.none() | st.integers(-1, 20))


def build_broker(perm: int, queues: tuple[int, int] | None) -> Broker:
    topics = {} if queues is None else {TOPIC: TopicConfig(TOPIC, queues[1], queues[0])}
    return Broker(perm=perm, topics=Map(topics), groups=Map({GROUP: SubscriptionGroupConfig(GROUP)}))


@given(perm=st.sampled_from((2, 4, 6)), queues=st.none() | st.tuples(st.integers(0, 4), st.integers(0, 4)),
       queue_id=st.integers(0, 6), header=headers)
def test_a_plain_send_is_msg_check_alone(perm, queues, queue_id, header):
    """RS-07: the code and the stored copy follow msgCheck, the broker's permission playing no part."""
    broker = build_broker(perm, queues)
    message = Message(TOPIC, b"x", properties=Map({"UNIQ_KEY": "U1"}), queue_id=queue_id)
    after, result = on_send_message(broker, Config(), message, header, NOW, 0)
    if queues is None:
        expected = ResponseCode.TOPIC_NOT_EXIST
    elif queue_id >= max(queues):
        expected = ResponseCode.SYSTEM_ERROR
    else:
        expected = ResponseCode.SUCCESS
    assert result.code is expected
    if expected is ResponseCode.SUCCESS:
        assert (result.stored.topic, result.stored.queue_id) == (TOPIC, queue_id)
        assert len(after.store.get_queue_units(TOPIC, queue_id)) == 1
        if not perm & 2:
            event("RS-07")  # stored by a broker that is not writeable
    else:
        assert result.stored is None and after is broker
        assert result.rules == ("RS-07",)  # the refusal is this rule's, whatever else the step touched
        # RocketMQ's remark, by its fixed beginning (msgCheck 4.9.8 L212 and L221)
        assert result.remark.startswith(f"topic[{TOPIC}] not exist" if queues is None
                                        else f"request queueId[{queue_id}] is illegal")


@given(perm=st.sampled_from((4, 6)), header=headers, random_int=st.integers(0, 99_999_988))
def test_a_send_to_retry_is_the_direct_send_with_its_header(perm, header, random_int):
    """RS-07: SEND_MESSAGE to %RETRY%<group> is on_send_retry_message with the request's two header values."""
    broker = build_broker(perm, None)
    message = Message(RETRY_TOPIC, b"x", properties=Map({"UNIQ_KEY": "U1", "DELAY": "3"}))
    plain = on_send_message(broker, Config(), message, header, NOW, random_int)
    direct = on_send_retry_message(broker, Config(), message, header[0], header[1], NOW, random_int)
    assert plain == direct
