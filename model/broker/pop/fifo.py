"""FIFO consumption by POP (ConsumerOrderInfoManager, spec/17-fifo.md): an orderly pop blocks its queue while a
message of it is in flight; acks move the offset; each offset counts its attempts."""

from __future__ import annotations

import immutables

from model.broker.pop.state import OrderInfo


def compute_judged_order_info(info: OrderInfo | None, attempt_id: str | None, invisible_time: int) -> OrderInfo | None:
    """[FF-01] The order info as OrderInfo.needBlock leaves it: one without an invisible time (≤ 0) takes the
    asking pop's and keeps it, so later pops are judged by that value; one without offsets, or asked with its own
    attempt id, is left as it is (needBlock returns before the write)."""
    if info is None or not info.offsets or info.invisible_time > 0:
        return info
    if info.attempt_id is not None and info.attempt_id == attempt_id:
        return info
    return info._replace(invisible_time=invisible_time)


def is_order_blocked(info: OrderInfo | None, attempt_id: str | None, now: int) -> bool:
    """[FF-01] OrderInfo.needBlock's verdict on the order info as it leaves it (`compute_judged_order_info`): blocked
    while some offset of the last orderly pop is neither acked nor past its next visible time (pop time + invisible
    time, or what a change set); never for the same attempt id."""
    if info is None or not info.offsets:
        return False
    if info.attempt_id is not None and info.attempt_id == attempt_id:
        return False
    for index, offset in enumerate(info.offsets):
        if not info.committed >> index & 1:
            visible_at = info.next_visible.get(offset, info.pop_time + info.invisible_time)
            if now < visible_at:
                return True
    return False


def compute_consumed_counts(previous: OrderInfo | None, attempt_id: str | None, offsets: tuple[int, ...]):
    """[FF-03] OrderInfo.mergeOffsetConsumedCount: the same attempt id keeps the counts; another attempt counts
    +1 for each offset popped again (an offset seen for the first time has no count, i.e. 0)."""
    if previous is None:
        return immutables.Map()
    if previous.attempt_id is not None and previous.attempt_id == attempt_id:
        return previous.consumed
    again = set(previous.offsets)
    return immutables.Map({offset: previous.consumed.get(offset, 0) + 1 for offset in offsets if offset in again})


def is_count_carried(previous: OrderInfo | None, attempt_id: str | None, offsets: tuple[int, ...]) -> bool:
    """[FF-06] Whether a pop keeps counts that belong to other offsets: it repeats the last pop's attempt id and
    holds an offset that pop did not (what the proxy then reads as that offset's attempts)."""
    if previous is None or previous.attempt_id is None or previous.attempt_id != attempt_id:
        return False
    return not set(offsets) <= set(previous.offsets)


def compute_pop_order_info(previous: OrderInfo | None, attempt_id: str | None, pop_time: int, invisible_time: int,
                           offsets: tuple[int, ...]) -> OrderInfo:
    """[FF-02] ConsumerOrderInfoManager.update: a new order info for this pop (nothing acked, no next visible
    times), with the merged attempt counts."""
    consumed = compute_consumed_counts(previous, attempt_id, offsets)
    return OrderInfo(attempt_id, pop_time, invisible_time, offsets, 0, immutables.Map(), consumed)


def compute_order_count(info: OrderInfo, offset: int) -> int:
    """[FF-03] The attempt count of one offset (what the remoting client sets as reconsumeTimes when > 0)."""
    return info.consumed.get(offset, 0)


def compute_queue_order_count(info: OrderInfo) -> int:
    """[FF-03] The queue's count in orderCountInfo: the least count of the pop, 0 if an offset has none (what the
    local-mode proxy sets as reconsumeTimes when > 0). Only the number of counts is compared with the number of
    offsets, not which: counts kept by a repeated attempt id count for the offsets popped now (FF-06)."""
    if len(info.consumed) != len(info.offsets):
        return 0
    return min(info.consumed.values(), default=0)


def compute_next_offset(info: OrderInfo) -> int:
    """OrderInfo.getNextOffset: the first offset not acked, or the last + 1 when all are."""
    for index, offset in enumerate(info.offsets):
        if not info.committed >> index & 1:
            return offset
    return info.offsets[-1] + 1


def commit_and_next(info: OrderInfo | None, offset: int, pop_time: int) -> tuple[OrderInfo | None, int]:
    """[FF-05] ConsumerOrderInfoManager.commitAndNext: the new info and the offset to commit; without an order info
    the next offset is offset + 1 (nothing before it is checked), -2 for a handle of another pop, -1 for an offset
    that pop did not return."""
    if info is None:
        return None, offset + 1
    if not info.offsets:
        return info, -1
    if pop_time != info.pop_time:
        return info, -2
    if offset not in info.offsets:
        return info, -1
    info = info._replace(committed=info.committed | 1 << info.offsets.index(offset))
    return info, compute_next_offset(info)


def set_next_visible_time(info: OrderInfo | None, offset: int, pop_time: int, next_visible: int) -> OrderInfo | None:
    """[FF-04] updateNextVisibleTime: the offset's next visible time, only for the handle of the last pop."""
    if info is None or pop_time != info.pop_time:
        return info
    return info._replace(next_visible=info.next_visible.set(offset, next_visible))
