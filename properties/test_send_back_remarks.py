"""The texts of CONSUMER_SEND_MSG_BACK's answers that no other test compared (spec/02-send-back.md, SB-02, SB-03,
SB-07), each from `SendMessageProcessor.consumerSendMsgBack` 4.9.8, and the error a draw outside the broker's range
raises.

mutmut found these texts free to change (benchmarks/MUTATION.md, group m): the remark of a broker that is not
writeable, of a group with no retry queue, of an offset that finds no message, and the event an illegal draw names.
"""

from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st
from immutables import Map

from model.broker.send_back import ResponseCode, SendBackRequest, on_consumer_send_msg_back
from model.broker.state import PERM_READ, Broker, SubscriptionGroupConfig
from model.values.config import Config
from model.values.errors import IllegalTransition
from properties.send_back_strategies import GROUP, RANDOM_INTS

NOW = 1_000_000
TOPIC = "T"


def request_for(offset: int = 0, delay_level: int = 0) -> SendBackRequest:
    return SendBackRequest(GROUP, TOPIC, offset, delay_level, "", None)


@pytest.mark.parametrize("random_int", [-1, 99_999_999])
def test_a_draw_outside_the_brokers_range_is_an_illegal_send_back(random_int):
    """The broker's queue draw is an argument of the step: one outside [0, 99999999) is not a CONSUMER_SEND_MSG_BACK
    the model can take, and the error names the state and that event (h11's style)."""
    broker = Broker(groups=Map({GROUP: SubscriptionGroupConfig(GROUP)}))
    with pytest.raises(IllegalTransition) as raised:
        on_consumer_send_msg_back(broker, Config(), request_for(), NOW, random_int)
    assert (raised.value.state, raised.value.event) == ("broker", "CONSUMER_SEND_MSG_BACK")
    assert str(random_int) in raised.value.reason


@given(perm=st.sampled_from((0, PERM_READ)), delay_level=st.integers(-1, 3), random_int=RANDOM_INTS)
def test_a_broker_that_is_not_writeable_refuses_with_rocketmqs_remark(perm, delay_level, random_int):
    """SB-02: "the broker[" + brokerIP1 + "] sending message is forbidden", NO_PERMISSION (4.9.8 L134-L137). The
    model holds no IP, so the remark is compared by the source's fixed beginning and end; nothing is stored."""
    broker = Broker(perm=perm, groups=Map({GROUP: SubscriptionGroupConfig(GROUP)}))
    after, result = on_consumer_send_msg_back(broker, Config(), request_for(delay_level=delay_level), NOW,
                                              random_int)
    assert after is broker
    assert (result.code, result.stored, result.rules) == (ResponseCode.NO_PERMISSION, None, ("SB-02",))
    assert result.remark.startswith("the broker") and result.remark.endswith(" sending message is forbidden")


@given(delay_level=st.integers(-1, 3), random_int=RANDOM_INTS)
def test_a_group_with_no_retry_queue_is_answered_success_without_remark(delay_level, random_int):
    """SB-03: retryQueueNums <= 0 answers SUCCESS with remark null and stores nothing (4.9.8 L140-L144); the
    model's null remark is "", which the model-backed server sends as Java's null (test_send_back_success.py)."""
    broker = Broker(groups=Map({GROUP: SubscriptionGroupConfig(GROUP, 0)}))
    after, result = on_consumer_send_msg_back(broker, Config(), request_for(delay_level=delay_level), NOW,
                                              random_int)
    assert after is broker
    assert (result.code, result.remark, result.stored, result.rules) == (ResponseCode.SUCCESS, "", None, ("SB-03",))


@given(offset=st.integers(0, 10**9), random_int=RANDOM_INTS)
def test_an_offset_that_finds_no_message_is_refused_naming_the_offset(offset, random_int):
    """SB-07: "look message by offset failed, " + the request's offset, SYSTEM_ERROR (4.9.8 L168-L172)."""
    broker = Broker(groups=Map({GROUP: SubscriptionGroupConfig(GROUP)}))
    _after, result = on_consumer_send_msg_back(broker, Config(), request_for(offset), NOW, random_int)
    assert (result.code, result.stored) == (ResponseCode.SYSTEM_ERROR, None)
    assert result.remark == f"look message by offset failed, {offset}"
    assert result.rules == ("SB-05", "SB-07")
