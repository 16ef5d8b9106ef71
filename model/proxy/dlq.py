"""The proxy's forward to the dead-letter queue (ProducerProcessor.forwardMessageToDeadLetterQueue,
spec/16-proxy.md): the broker's CONSUMER_SEND_MSG_BACK of chapter 02, then — separately — an ack."""

from __future__ import annotations

from typing import NamedTuple

from model.broker.pop.state import PopBroker, set_broker
from model.broker.send_back import SendBackRequest, on_consumer_send_msg_back
from model.proxy.consumer import on_proxy_ack
from model.proxy.receive import FollowUp
from model.values.pop_wire import Handle


class ForwardAnswer(NamedTuple):
    """The send-back's result (SendBackResult) and the ack the proxy then sends on its own (None when the
    send-back failed: the message stays to be revived)."""

    result: object
    follow_up: FollowUp | None
    rules: tuple[str, ...]


def compute_dlq_request(group: str, topic: str, handle: Handle, message_id: str) -> SendBackRequest:
    """[PD-03] The send-back header: the handle's commit-log offset, delayLevel -1 and maxReconsumeTimes 0 — the
    broker's dead-letter branch (SB-04) whatever the message's reconsumeTimes."""
    return SendBackRequest(group, handle.get_real_topic(topic, group), handle.commit_log_offset, -1, message_id, 0)


def on_forward_to_dlq(state: PopBroker, group: str, topic: str, handle: Handle, message_id: str, now: int,
                      random_int: int) -> tuple[PopBroker, ForwardAnswer]:
    """[PD-03] forwardMessageToDeadLetterQueue: the broker's send-back (chapter 02: the DLQ copy, or SB-03's
    SUCCESS without a copy for a group with no retry queue), and only on SUCCESS an ack, sent without waiting —
    two requests, not one step (PD-04 for what the DLQ copy carries; PC-04: the send-back is chapter 02's)."""
    request = compute_dlq_request(group, topic, handle, message_id)
    broker, result = on_consumer_send_msg_back(state.broker, state.config, request, now, random_int)
    state = set_broker(state, broker)
    follow_up = FollowUp("ack", group, topic, handle, message_id) if result.code.name == "SUCCESS" else None
    return state, ForwardAnswer(result, follow_up, result.rules + ("PD-03", "PD-04"))


def process_follow_up(state: PopBroker, follow_up: FollowUp, now: int, random_int: int) -> tuple[PopBroker, tuple]:
    """Send one follow-up of a receive or a forward: an ack (PD-02, PD-03), or a forward to the DLQ whose own
    follow-up ack comes back among the returned follow-ups (the driver may lose it, as a proxy crash does)."""
    if follow_up.kind == "ack":
        state, answer = on_proxy_ack(state, follow_up.group, follow_up.topic, follow_up.handle, now)
        return state, ()
    state, answer = on_forward_to_dlq(state, follow_up.group, follow_up.topic, follow_up.handle,
                                      follow_up.message_id, now, random_int)
    return state, (answer.follow_up,) if answer.follow_up else ()
