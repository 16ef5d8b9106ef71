"""The proxy's refusals of an ack and a change of invisible time (spec/16-proxy.md PD-05, PD-06), each stated whole:
the invisible-time bound, the expired handle and the broker's refusal — none answers a handle, none reaches a
checkpoint, and the first two leave the broker untouched."""

from __future__ import annotations

from model.proxy.consumer import on_change_invisible_duration, on_proxy_ack
from model.proxy.receive import ReceiveRequest, on_receive
from model.proxy.settings import DEFAULT_PROXY_CONFIG
from properties.pop_brokers import new_pop_broker, produce
from properties.pop_strategies import GROUP, TOPIC

TWELVE_HOURS = 12 * 3600 * 1000  # ProxyConfig.maxInvisibleTimeMills, 5.3.3 ProxyConfig.java L127


def received():
    """One message in T received at 1 000 ms for 10 s: (state, its handle)."""
    state, answer = on_receive(produce(new_pop_broker(), "m0"), ReceiveRequest(GROUP, TOPIC, 1, 10_000), 1_000, 50)
    return state, answer.handles[0]


def test_a_change_above_max_invisible_time_is_refused_before_the_broker():
    """PD-06: ChangeInvisibleDurationActivity validates the duration first
    (https://github.com/apache/rocketmq/blob/rocketmq-all-5.3.3/proxy/src/main/java/org/apache/rocketmq/proxy/grpc/v2/consumer/ChangeInvisibleDurationActivity.java#L47-L48);
    GrpcValidator.validateInvisibleTime throws ILLEGAL_INVISIBLE_TIME only for invisibleTime > max, so 12 h itself
    passes (https://github.com/apache/rocketmq/blob/rocketmq-all-5.3.3/proxy/src/main/java/org/apache/rocketmq/proxy/grpc/v2/common/GrpcValidator.java#L89-L99)."""
    assert DEFAULT_PROXY_CONFIG.max_invisible_time_mills == TWELVE_HOURS
    state, handle = received()
    after, refused = on_change_invisible_duration(state, GROUP, TOPIC, handle, TWELVE_HOURS + 1, 2_000)
    assert (after, refused) == (state, ("ILLEGAL_INVISIBLE_TIME", None, False, ("PD-06",)))
    _, accepted = on_change_invisible_duration(state, GROUP, TOPIC, handle, TWELVE_HOURS, 2_000)
    assert (accepted.code, accepted.handle.pop_time, accepted.handle.invisible_time) == ("OK", 2_000, TWELVE_HOURS)


def test_an_expired_handle_is_refused_whole_by_ack_and_change():
    """PD-05: ConsumerProcessor.ackMessage and changeInvisibleTime throw INVALID_RECEIPT_HANDLE in
    validateReceiptHandle before any request to the broker
    (https://github.com/apache/rocketmq/blob/rocketmq-all-5.3.3/proxy/src/main/java/org/apache/rocketmq/proxy/processor/ConsumerProcessor.java#L214-L225,
    L309-L313): no handle, no checkpoint reached. Pop time 1 000 + 10 000 ms: expired at 11 000."""
    state, handle = received()
    expected = (state, ("INVALID_RECEIPT_HANDLE", None, False, ("PD-05",)))
    assert on_proxy_ack(state, GROUP, TOPIC, handle, 11_000) == expected
    assert on_change_invisible_duration(state, GROUP, TOPIC, handle, 10_000, 11_000) == expected


def test_a_change_the_broker_refuses_answers_internal_server_error():
    """PD-06: ChangeInvisibleTimeProcessor answers NO_MESSAGE for an offset >= the queue's max offset
    (https://github.com/apache/rocketmq/blob/rocketmq-all-5.3.3/broker/src/main/java/org/apache/rocketmq/broker/processor/ChangeInvisibleTimeProcessor.java#L126-L134);
    LocalMessageService makes any non-SUCCESS an AckStatus.NO_EXIST
    (https://github.com/apache/rocketmq/blob/rocketmq-all-5.3.3/proxy/src/main/java/org/apache/rocketmq/proxy/service/message/LocalMessageService.java#L323-L329)
    and the activity answers it INTERNAL_SERVER_ERROR without a handle
    (https://github.com/apache/rocketmq/blob/rocketmq-all-5.3.3/proxy/src/main/java/org/apache/rocketmq/proxy/grpc/v2/consumer/ChangeInvisibleDurationActivity.java#L85-L96).
    One message in the queue: max offset 1, so a handle naming offset 1 is refused."""
    state, handle = received()
    beyond = handle._replace(offset=1)
    after, refused = on_change_invisible_duration(state, GROUP, TOPIC, beyond, 10_000, 2_000)
    assert (after, refused) == (state, ("INTERNAL_SERVER_ERROR", None, False, ("PO-08", "PD-06")))


def test_an_ack_the_broker_refuses_is_not_ok():
    """PD-05: AckMessageProcessor refuses an offset above the queue's max offset (NO_MESSAGE); LocalMessageService
    makes it AckStatus.NO_EXIST
    (https://github.com/apache/rocketmq/blob/rocketmq-all-5.3.3/proxy/src/main/java/org/apache/rocketmq/proxy/service/message/LocalMessageService.java#L362-L370),
    which AckMessageActivity does not answer OK
    (https://github.com/apache/rocketmq/blob/rocketmq-all-5.3.3/proxy/src/main/java/org/apache/rocketmq/proxy/grpc/v2/consumer/AckMessageActivity.java#L99-L103).
    One message: an ack accepts offset 1 (the max itself), not 2."""
    state, handle = received()
    after, refused = on_proxy_ack(state, GROUP, TOPIC, handle._replace(offset=2), 2_000)
    assert (after, refused.code != "OK", refused.handle, refused.effective) == (state, True, None, False)
