"""The proxy's receive at its edges (spec/16-proxy.md PD-01, PD-02): the invisible-time bound inclusive at 12 h, a
refusal's whole answer, the handle a consumer's message carries, and the proxy's own tag check behind the broker's
hash-code filter — a message whose tag only shares the subscribed tag's hash code is acked, not delivered."""

from __future__ import annotations

from model.broker.pop.pop import PROPERTY_POP_CK
from model.broker.pop.state import PopGroupConfig
from model.proxy.receive import FollowUp, ReceiveAnswer, ReceiveRequest, on_receive
from model.values.message import java_string_hash
from model.values.pop_wire import decode_handle
from properties.pop_brokers import new_pop_broker, produce
from properties.pop_strategies import GROUP, TOPIC

TWELVE_HOURS = 12 * 3600 * 1000  # ProxyConfig.maxInvisibleTimeMills, 5.3.3 ProxyConfig.java L127


def test_a_receive_takes_twelve_hours_and_refuses_one_ms_more_whole():
    """PD-01: ReceiveMessageActivity validates the invisible time against [10 s, maxInvisibleTimeMills]
    (https://github.com/apache/rocketmq/blob/rocketmq-all-5.3.3/proxy/src/main/java/org/apache/rocketmq/proxy/grpc/v2/consumer/ReceiveMessageActivity.java#L100-L107);
    GrpcValidator refuses only invisibleTime > max
    (https://github.com/apache/rocketmq/blob/rocketmq-all-5.3.3/proxy/src/main/java/org/apache/rocketmq/proxy/grpc/v2/common/GrpcValidator.java#L89-L99),
    before any pop: nothing popped, no follow-up."""
    state = produce(new_pop_broker(), "m0")
    after, refused = on_receive(state, ReceiveRequest(GROUP, TOPIC, 1, TWELVE_HOURS + 1), 1_000, 50)
    assert (after, refused) == (state, ReceiveAnswer("ILLEGAL_INVISIBLE_TIME", rules=("PD-01",)))
    _, taken = on_receive(state, ReceiveRequest(GROUP, TOPIC, 1, TWELVE_HOURS), 1_000, 50)
    assert (taken.code, taken.handles[0].invisible_time) == ("SUCCESS", TWELVE_HOURS)
    assert taken.rules[-2:] == ("PD-01", "PD-02")


def test_a_received_message_carries_its_handle_as_pop_ck():
    """ConsumerProcessor.popMessage puts the handle it builds into the message's POP_CK property before the filter
    (https://github.com/apache/rocketmq/blob/rocketmq-all-5.3.3/proxy/src/main/java/org/apache/rocketmq/proxy/processor/ConsumerProcessor.java#L153-L162):
    the consumer's message names the checkpoint of the pop at 1 000 ms for 10 s, offset 0."""
    _, answer = on_receive(produce(new_pop_broker(), "m0"), ReceiveRequest(GROUP, TOPIC, 1, 10_000), 1_000, 50)
    handle = decode_handle(answer.messages[0].properties[PROPERTY_POP_CK], answer.handles[0].commit_log_offset)
    assert handle == answer.handles[0]
    assert (handle.start_offset, handle.pop_time, handle.invisible_time, handle.offset) == (0, 1_000, 10_000, 0)


def test_a_tag_sharing_only_the_hash_code_is_acked_by_the_proxy():
    """PD-02: the broker filters a pop by the tags' hash codes, so "BB" passes a subscription to "Aa" (both 2112);
    PopMessageResultFilterImpl then compares the tag itself: NO_MATCH
    (https://github.com/apache/rocketmq/blob/rocketmq-all-5.3.3/proxy/src/main/java/org/apache/rocketmq/proxy/grpc/v2/consumer/PopMessageResultFilterImpl.java#L33-L43),
    which ConsumerProcessor acks instead of delivering
    (https://github.com/apache/rocketmq/blob/rocketmq-all-5.3.3/proxy/src/main/java/org/apache/rocketmq/proxy/processor/ConsumerProcessor.java#L164-L175)."""
    assert java_string_hash("Aa") == java_string_hash("BB")
    state = produce(new_pop_broker(), "m0", tag="BB")
    _, answer = on_receive(state, ReceiveRequest(GROUP, TOPIC, 1, 10_000, tags=frozenset({"Aa"})), 1_000, 50)
    assert (answer.code, answer.messages, answer.handles) == ("MESSAGE_NOT_FOUND", (), ())
    [follow_up] = answer.follow_ups
    assert follow_up == FollowUp("ack", GROUP, TOPIC, follow_up.handle, "m0")
    assert (follow_up.handle.pop_time, follow_up.handle.offset) == (1_000, 0)


def test_a_fifo_receive_retried_with_its_attempt_id_gets_the_same_message():
    """FF-01 through the proxy: ReceiveMessageActivity passes the request's attempt id on to the pop
    (https://github.com/apache/rocketmq/blob/rocketmq-all-5.3.3/proxy/src/main/java/org/apache/rocketmq/proxy/grpc/v2/consumer/ReceiveMessageActivity.java#L125-L135),
    and OrderInfo.needBlock does not block the last orderly pop's own attempt id
    (https://github.com/apache/rocketmq/blob/rocketmq-all-5.3.3/broker/src/main/java/org/apache/rocketmq/broker/offset/ConsumerOrderInfoManager.java#L489-L495):
    a FIFO group's receive retried with attempt "A" gets m0 again, one with attempt "B" nothing while m0 is in
    flight."""
    state = produce(new_pop_broker(group_config=PopGroupConfig(consume_message_orderly=True)), "m0")
    state, first = on_receive(state, ReceiveRequest(GROUP, TOPIC, 1, 10_000, attempt_id="A"), 1_000, 50)
    _, again = on_receive(state, ReceiveRequest(GROUP, TOPIC, 1, 10_000, attempt_id="A"), 2_000, 50)
    _, other = on_receive(state, ReceiveRequest(GROUP, TOPIC, 1, 10_000, attempt_id="B"), 2_000, 50)
    assert [m.uniq_key for m in first.messages + again.messages] == ["m0", "m0"]
    assert (other.code, other.messages) == ("MESSAGE_NOT_FOUND", ())


def test_a_pop_the_broker_refuses_is_no_empty_receive():
    """PD-01: LocalMessageService.popMessage maps only SUCCESS, POLLING_FULL and POLLING_TIMEOUT/PULL_NOT_FOUND to a
    pop status and throws INTERNAL_SERVER_ERROR for any other broker code
    (https://github.com/apache/rocketmq/blob/rocketmq-all-5.3.3/proxy/src/main/java/org/apache/rocketmq/proxy/service/message/LocalMessageService.java#L220-L243),
    so a pop refused for a group whose consumeEnable is off is a failure, not MESSAGE_NOT_FOUND."""
    state = produce(new_pop_broker(group_config=PopGroupConfig(consume_enable=False)), "m0")
    _, refused = on_receive(state, ReceiveRequest(GROUP, TOPIC, 1, 10_000), 1_000, 50)
    assert (refused.code in ("SUCCESS", "MESSAGE_NOT_FOUND"), refused.messages) == (False, ())
