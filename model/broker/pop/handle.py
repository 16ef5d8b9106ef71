"""A popped message's handle: the broker's POP_CK extra info and the proxy's receipt handle (ReceiptHandle)."""

from __future__ import annotations

from typing import NamedTuple

from model.broker.pop.config import POP_ORDER_REVIVE_QUEUE
from model.broker.pop.names import get_real_topic


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
