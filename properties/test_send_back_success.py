"""The whole answer to a CONSUMER_SEND_MSG_BACK that stores a copy (spec/02-send-back.md, rows 4, 7 and 8 of the
branch table): SUCCESS, no remark, and every rule of the path the request took.

mutmut found both unchecked (benchmarks/MUTATION.md): `process_send_back` could drop the rules of the earlier
branches (SB-05, SB-08, SB-09, or all of them but SB-13 and SB-14) and answer a remark; no test compared either.

RocketMQ 4.9.8 `SendMessageProcessor.asyncConsumerSendMsgBack` (L116-L263), the path of a stored copy:
- L146-L156: the retry topic is created on first use and a retry queue drawn (SB-05);
- L175-L178: RETRY_TOPIC set when absent (SB-08); L183-L189: the header's maxReconsumeTimes wins (SB-09);
- L191-L205: reconsumeTimes >= max or delayLevel < 0 goes to the DLQ (SB-04), a one-queue topic (SB-10), DELAY
  cleared (SB-11); else L207-L210: level 0 becomes 3 + reconsumeTimes (SB-12);
- L213-L230: a new message with reconsumeTimes + 1 (SB-13), put by the store at L232 (SB-14) in both branches;
- L236-L251: on PUT_OK the answer is SUCCESS with `setRemark(null)` — the model's "" (the model-backed server
  sends `remark or None`, so "" goes on the wire as Java's null and any other text as a remark).
5.3.3 `AbstractSendMessageProcessor.consumerSendMsgBack` answers the same (L242, L275-L276).
"""

from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st
from immutables import Map

from model.broker.send_back import ResponseCode, SendBackRequest, on_consumer_send_msg_back
from model.broker.state import Broker, SubscriptionGroupConfig
from model.broker.store import Store, put_message
from model.values.config import Config
from model.values.message import Message
from properties.coverage import SPEC_RULE_IDS
from properties.send_back_strategies import DLQ_TOPIC, GROUP, RANDOM_INTS, RETRY_TOPIC, VERSIONS, get_destination

NOW = 1_000_000
# Written out from the table of spec/02-send-back.md and the source lines above, not read from the model.
COMMON_RULES = {"SB-05", "SB-08", "SB-09", "SB-13", "SB-14"}
DLQ_RULES = COMMON_RULES | {"SB-04", "SB-10", "SB-11"}
RETRY_RULES = COMMON_RULES | {"SB-12"}


def send_back(version: str, reconsume_times: int, delay_level: int, header_max: int | None, random_int: int):
    """A broker holding one delivered message (reconsumeTimes as given), sent back by its commit-log offset."""
    delivered = Message("T", b"body", "TagA", Map({"UNIQ_KEY": "U1", "TAGS": "TagA"}),
                        reconsume_times=reconsume_times, born_timestamp=7)
    config = Config(profile=version)
    store, stored = put_message(Store(), delivered, NOW - 1_000, config.delay_levels)
    broker = Broker(groups=Map({GROUP: SubscriptionGroupConfig(GROUP, 2, 3)}), store=store)
    request = SendBackRequest(GROUP, "T", stored.commit_log_offset, delay_level, stored.msg_id, header_max)
    return on_consumer_send_msg_back(broker, config, request, NOW, random_int)


def assert_stored_answer(result, dead_letter: bool) -> None:
    assert (result.code, result.remark) == (ResponseCode.SUCCESS, "")
    assert result.stored is not None
    assert get_destination(result.stored)[0] == (DLQ_TOPIC if dead_letter else RETRY_TOPIC)
    assert len(result.rules) == len(set(result.rules)), result.rules
    assert set(result.rules) == (DLQ_RULES if dead_letter else RETRY_RULES), result.rules
    assert set(result.rules) <= SPEC_RULE_IDS


@pytest.mark.parametrize(("reconsume_times", "delay_level", "dead_letter"), [
    (0, 0, False),  # a first failure, the broker's level 3
    (2, 5, False),  # a client level below the maximum
    (3, 0, True),   # reconsumeTimes reached the group's retryMaxTimes 3 (no header maximum)
    (0, -1, True),  # the client asked for the DLQ
])
def test_a_stored_send_back_answers_success_without_remark_citing_its_path(reconsume_times, delay_level,
                                                                           dead_letter):
    """The four corners of SB-04's test under 4.9.8: SUCCESS, remark null (""), the rules of rows 4 and 7 or 8."""
    _after, result = send_back("4.9.8", reconsume_times, delay_level, None, 0)
    assert_stored_answer(result, dead_letter)


@given(version=st.sampled_from(VERSIONS), reconsume_times=st.integers(0, 4), delay_level=st.integers(-1, 4),
       header_max=st.none() | st.integers(0, 4), random_int=RANDOM_INTS)
def test_every_stored_send_back_answers_success_without_remark(version, reconsume_times, delay_level, header_max,
                                                              random_int):
    """SB-04 decides the branch (the header's maximum, else the group's 3; a negative level); every version answers
    a stored copy the same: SUCCESS, no remark, every rule of the path taken."""
    limit = 3 if header_max is None else header_max
    _after, result = send_back(version, reconsume_times, delay_level, header_max, random_int)
    assert_stored_answer(result, reconsume_times >= limit or delay_level < 0)
