"""The 5.x requests a POP consumer sends, as values (spec/14-pop.md, spec/16-proxy.md): the broker's POP_MESSAGE,
ACK_MESSAGE and CHANGE_MESSAGE_INVISIBLETIME (a remoting client sends them to the broker), the proxy's
ReceiveMessage, AckMessage and ChangeInvisibleDuration (a gRPC client sends them to the proxy), and the handle a
popped message carries, which an ack or a change sends back.

A client builds these and exchanges them with its peer (model/values/wire.py's `exchange`); model/system routes
them to the broker's POP answers or to the proxy's. The answers are the answering layer's own values.
"""

from __future__ import annotations

from typing import NamedTuple

from attrs import frozen

from model.values.pop_names import get_real_topic

# KeyBuilder.POP_ORDER_REVIVE_QUEUE: the revive queue id an orderly handle carries (no checkpoint is written).
POP_ORDER_REVIVE_QUEUE = 999


class Handle(NamedTuple):
    """[PO-06] What ack and changeInvisibleTime need: the checkpoint's start offset and pop time, the invisible
    time, the revive queue, the retry flag ("0" normal, "1" v1 retry, "2" v2 retry), the broker, the queue and
    the message's queue offset; the proxy adds the commit-log offset (for its forward to the DLQ)."""

    start_offset: int
    pop_time: int
    invisible_time: int
    revive_queue_id: int
    retry_flag: str
    broker_name: str
    queue_id: int
    offset: int
    commit_log_offset: int = -1

    @property
    def is_order(self) -> bool:
        """ExtraInfoUtil.isOrder: an orderly pop's handle names revive queue 999."""
        return self.revive_queue_id == POP_ORDER_REVIVE_QUEUE

    @property
    def next_visible_time(self) -> int:
        return self.pop_time + self.invisible_time

    def is_expired(self, now: int) -> bool:
        """[PD-05] ReceiptHandle.isExpired: nextVisibleTime <= now."""
        return self.next_visible_time <= now

    def get_real_topic(self, topic: str, group: str) -> str:
        return get_real_topic(topic, group, self.retry_flag)

    def encode(self) -> str:
        """The POP_CK text, ExtraInfoUtil.buildExtraInfo: the fields separated by spaces."""
        return " ".join(map(str, self[:8]))


def decode_handle(text: str, commit_log_offset: int = -1) -> Handle:
    """The handle a POP_CK text names (the inverse of Handle.encode)."""
    start, pop_time, invisible, revive_qid, flag, broker, queue_id, offset = text.split(" ")
    return Handle(int(start), int(pop_time), int(invisible), int(revive_qid), flag, broker, int(queue_id),
                  int(offset), commit_log_offset)


# The broker's requests (a remoting client's)


@frozen
class PopRequest:
    """PopMessageRequestHeader. `queue_id` -1 reads every queue of the topic; `tags` None subscribes "*"."""

    group: str
    topic: str
    queue_id: int = -1
    max_msg_nums: int = 32
    invisible_time: int = 60_000
    order: bool = False
    attempt_id: str | None = None
    tags: frozenset | None = None


@frozen
class AckRequest:
    """AckMessageRequestHeader: the group, the topic the message is stored in (a retry topic for a retry copy),
    its queue and queue offset, and the handle (extraInfo)."""

    group: str
    topic: str
    queue_id: int
    offset: int
    handle: Handle


@frozen
class ChangeRequest:
    """ChangeInvisibleTimeRequestHeader: what an ack names, and the new invisible time."""

    group: str
    topic: str
    queue_id: int
    offset: int
    handle: Handle
    invisible_time: int


def compute_ack_request(group: str, topic: str, handle: Handle) -> AckRequest:
    """The ack a remoting client sends for a message popped from `topic`: the handle's real topic (a retry copy is
    acked in its retry topic), queue and offset."""
    return AckRequest(group, handle.get_real_topic(topic, group), handle.queue_id, handle.offset, handle)


def compute_change_request(group: str, topic: str, handle: Handle, invisible_time: int) -> ChangeRequest:
    """The changeInvisibleTime a remoting client sends for a message popped from `topic`."""
    return ChangeRequest(group, handle.get_real_topic(topic, group), handle.queue_id, handle.offset, handle,
                         invisible_time)


# The proxy's requests (a gRPC client's)


@frozen
class ReceiveRequest:
    """ReceiveMessageRequest: the group, topic, batch size, invisible duration, the tag subscription (None: "*"),
    an attempt id (FIFO) and autoRenew (a push consumer's receive)."""

    group: str
    topic: str
    batch_size: int = 32
    invisible_time: int = 30_000
    tags: frozenset | None = None
    attempt_id: str | None = None
    auto_renew: bool = False


@frozen
class ProxyAckRequest:
    """AckMessageRequest: the group, the topic the consumer received from, and the receipt handle."""

    group: str
    topic: str
    handle: Handle


@frozen
class ProxyChangeRequest:
    """ChangeInvisibleDurationRequest: what an ack names, and the new invisible duration."""

    group: str
    topic: str
    handle: Handle
    invisible_time: int
