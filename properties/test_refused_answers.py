"""SY-13: what the broker answers to a send-back or a retry send it refuses, asked directly through the cluster's
network (`exchange` with a `System` whose broker refuses that kind). The client reads only whether the code is
SUCCESS, so these answers are compared here field by field."""

from __future__ import annotations

import pytest

from model.client.retry_message import compute_fallback_retry_message
from model.system.events import Produce, RefuseRequests
from model.system.step import create_system
from model.values.config import Config
from model.values.names import GROUP
from model.values.wire import ResponseCode, SendBackRequest, SendMessage, compute_send_back_request, exchange
from properties.steps import run

ERRORS = (ResponseCode.SYSTEM_ERROR, ResponseCode.NO_PERMISSION, ResponseCode.TOPIC_NOT_EXIST,
          ResponseCode.SUBSCRIPTION_GROUP_NOT_EXIST)


def refusing(kind: str, code: ResponseCode):
    """A cluster holding one produced message whose broker refuses `kind` with `code`, and that message."""
    system, _ = run(create_system(Config()), Produce("k1", 1), RefuseRequests(kind, code))
    (message,) = system.broker.store.get_messages()
    return system, message


def send_back_of(message, config: Config) -> SendBackRequest:
    return compute_send_back_request(message, GROUP, config, 0)


def fallback_of(message, config: Config) -> SendMessage:
    return SendMessage(*compute_fallback_retry_message(message, GROUP, config))


@pytest.mark.parametrize("code", ERRORS)
@pytest.mark.parametrize(("kind", "build"), [("send_back", send_back_of), ("send", fallback_of)])
def test_a_refused_send_is_answered_with_its_code_and_a_remark_and_stores_nothing(kind, build, code):
    """[SY-13] CONSUMER_SEND_MSG_BACK and SEND_MESSAGE refused — group or topic missing, broker or topic not
    writeable, a put that failed — answer that error code with a remark saying why and store nothing: every refusal
    of `SendMessageProcessor` sets both code and remark before it returns
    ([4.9.8 L116-L171](https://github.com/apache/rocketmq/blob/rocketmq-all-4.9.8/broker/src/main/java/org/apache/rocketmq/broker/processor/SendMessageProcessor.java#L116-L171),
    [L255-L260](https://github.com/apache/rocketmq/blob/rocketmq-all-4.9.8/broker/src/main/java/org/apache/rocketmq/broker/processor/SendMessageProcessor.java#L255-L260),
    [L350-L407](https://github.com/apache/rocketmq/blob/rocketmq-all-4.9.8/broker/src/main/java/org/apache/rocketmq/broker/processor/SendMessageProcessor.java#L350-L407),
    [L465-L471](https://github.com/apache/rocketmq/blob/rocketmq-all-4.9.8/broker/src/main/java/org/apache/rocketmq/broker/processor/SendMessageProcessor.java#L465-L471)).
    The answer cites SY-13, the rule that makes the fate of the refused message exact."""
    system, message = refusing(kind, code)
    after, answer = exchange(system, build(message, system.config))
    assert (answer.code, answer.stored, answer.rules) == (code, None, ("SY-13",))
    assert isinstance(answer.remark, str) and answer.remark
    assert after is system  # nothing stored, nothing changed
