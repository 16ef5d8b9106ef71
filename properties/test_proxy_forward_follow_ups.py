"""The proxy's forward to the DLQ and the ack that follows it (spec/16-proxy.md PD-03): the ack is sent only after
the broker's send-back answered SUCCESS, and it names the message id the forward was given —
ProducerProcessor.forwardMessageToDeadLetterQueue (the line numbers below)
https://github.com/apache/rocketmq/blob/rocketmq-all-5.3.3/proxy/src/main/java/org/apache/rocketmq/proxy/processor/ProducerProcessor.java#L230-L262"""

from __future__ import annotations

from model.proxy.dlq import on_forward_to_dlq, process_follow_up
from model.proxy.receive import FollowUp, ReceiveRequest, on_receive
from properties.pop_brokers import new_pop_broker, produce
from properties.pop_strategies import GROUP, TOPIC


def received():
    state, answer = on_receive(produce(new_pop_broker(), "m0"), ReceiveRequest(GROUP, TOPIC, 1, 10_000), 1_000, 50)
    return state, answer.handles[0]


def test_a_forward_the_broker_accepts_is_followed_by_an_ack_of_the_same_message_id():
    """ProducerProcessor.forwardMessageToDeadLetterQueue acks with the handle and messageId it was given once the
    send-back answered SUCCESS (L252-L256); a dlq follow-up sent returns that ack as its own."""
    state, handle = received()
    _, answer = on_forward_to_dlq(state, GROUP, TOPIC, handle, "m0", 2_000, 0)
    assert (answer.result.code.name, answer.follow_up) == ("SUCCESS", FollowUp("ack", GROUP, TOPIC, handle, "m0"))
    _, more = process_follow_up(state, FollowUp("dlq", GROUP, TOPIC, handle, "m0"), 2_000, 0)
    assert more == (FollowUp("ack", GROUP, TOPIC, handle, "m0"),)


def test_a_forward_the_broker_refuses_sends_no_ack():
    """The ack is sent only for a SUCCESS send-back (L253); a send-back of a commit-log offset where no
    message is stored is refused by the broker, so neither the forward nor its follow-up starts an ack."""
    state, handle = received()
    lost = handle._replace(commit_log_offset=10**9)
    _, answer = on_forward_to_dlq(state, GROUP, TOPIC, lost, "m0", 2_000, 0)
    assert (answer.result.code.name != "SUCCESS", answer.follow_up) == (True, None)
    assert process_follow_up(state, FollowUp("dlq", GROUP, TOPIC, lost, "m0"), 2_000, 0)[1] == ()
