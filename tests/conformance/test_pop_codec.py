"""The POP codec (conformance/codec/pop.py) against headers and handles a real RocketMQ 5.3.3 broker sent (captured
by the POP probes' backend, differential/test_pop_*.py)."""

from __future__ import annotations

import pytest

from conformance.codec import pop

# A POP_MESSAGE response header of 5.3.3 (one message, queue 0, offset 0, of a normal topic).
POP_HEADER = {"invisibleTime": "2000", "startOffsetInfo": "0 0 0", "restNum": "0", "popTime": "1795796682650",
              "reviveQid": "0", "msgOffsetInfo": "0 0 0"}
# The POP_CK the broker itself put on a copy popped from %RETRY%G_T (mark 1).
RETRY_CK = "0 1795796686704 2000 7 1 broker-a 0 0"


def test_a_normal_message_gets_its_handle_from_the_header():
    header = pop.decode_pop_header(POP_HEADER)
    assert header.start_offsets == {("0", 0): 0} and header.msg_offsets == {("0", 0): (0,)}
    handle = pop.get_message_handle(header, "broker-a", "T", 0, 0, None)
    assert handle == "0 1795796682650 2000 0 0 broker-a 0 0"
    assert pop.decode_handle(handle).revive_time == 1795796682650 + 2000


def test_a_retry_copy_keeps_the_brokers_handle_and_is_acked_on_its_retry_topic():
    header = pop.decode_pop_header({**POP_HEADER, "startOffsetInfo": "1 0 0", "msgOffsetInfo": "1 0 0"})
    assert pop.get_message_handle(header, "broker-a", "T", 0, 0, RETRY_CK) == RETRY_CK
    ack = pop.encode_ack_request("G", "T", RETRY_CK)
    assert ack == {"consumerGroup": "G", "topic": "%RETRY%G_T", "queueId": 0, "extraInfo": RETRY_CK, "offset": 0}
    v2 = RETRY_CK.replace(" 1 broker-a", " 2 broker-a")
    assert pop.encode_ack_request("G", "T", v2)["topic"] == "%RETRY%G+T"


def test_retry_topic_names_and_marks():
    assert pop.get_retry_topic("G", "T") == "%RETRY%G_T"
    assert pop.get_retry_topic("G", "T", v2=True) == "%RETRY%G+T"
    assert [pop.get_topic_mark(t) for t in ("T", "%RETRY%G_T", "%RETRY%G+T")] == ["0", "1", "2"]


def test_a_changed_handle_starts_its_checkpoint_at_the_message():
    request = pop.encode_change_request("G", "T", "5 100 60000 3 0 broker-a 1 7", 1000)
    assert request["offset"] == 7 and request["invisibleTime"] == 1000
    changed = pop.get_changed_handle(request, {"popTime": "200", "invisibleTime": "1000", "reviveQid": "4"},
                                     "broker-a")
    assert changed == "7 200 1000 4 0 broker-a 1 7"


@pytest.mark.parametrize("bad", ["", "1 2 3", "a 1 2 3 0 b 0 0"])
def test_a_malformed_handle_is_refused(bad):
    with pytest.raises(pop.HandleError):
        pop.decode_handle(bad)


def test_fifo_order_counts_and_group_policies():
    header = pop.decode_pop_header({**POP_HEADER, "orderCountInfo": "0 qo0%0 2;0 0 2"})
    assert header.order_counts == {"0@qo0%0": 2, "0@0": 2}
    assert (pop.get_order_count(header, "T", 0, 0), pop.get_order_count(header, "T", 0, 5)) == (2, 2)
    assert pop.get_order_count(header, "T", 1, 0) == 0
    config = pop.encode_group_config("G", 3, orderly=True, policy=pop.customized_policy([1000, 2000]))
    assert config["retryMaxTimes"] == 3 and config["consumeMessageOrderly"] is True
    assert config["groupRetryPolicy"] == {"type": "CUSTOMIZED", "customizedRetryPolicy": {"next": [1000, 2000]}}
    assert pop.exponential_policy(1, 2, 3)["exponentialRetryPolicy"] == {"initial": 1, "max": 2, "multiplier": 3}
