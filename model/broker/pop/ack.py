"""ACK_MESSAGE and CHANGE_MESSAGE_INVISIBLETIME (AckMessageProcessor, ChangeInvisibleTimeProcessor,
spec/14-pop.md): an ack marks its offset in its checkpoint; a change writes a new checkpoint, then acks the old."""

from __future__ import annotations

from typing import NamedTuple

from model.broker.consumer_offsets import commit_offset, query_offset
from model.broker.pop.config import ACK_TIME_INTERVAL, COLLISION_WINDOW, REVIVE_MARGIN
from model.broker.pop.fifo import commit_and_next, set_next_visible_time
from model.broker.pop.state import (
    Checkpoint,
    PopBroker,
    drop_checkpoint,
    put_checkpoint,
    set_broker,
    set_pop,
)
from model.values.pop_wire import AckRequest, ChangeRequest, Handle


class AckAnswer(NamedTuple):
    """The response code; `effective` says whether the ack reached a checkpoint not yet revived (or the order
    info of its pop); the rules taken."""

    code: str
    effective: bool
    rules: tuple[str, ...]


class ChangeAnswer(NamedTuple):
    """The response: its code, the pop time and invisible time of the new handle (None when the broker set none),
    whether the old handle's checkpoint was still pending (False: the change revives the message once more, PO-09)
    and the rules taken."""

    code: str
    pop_time: int | None
    invisible_time: int | None
    revive_queue_id: int
    was_pending: bool
    rules: tuple[str, ...]


def get_offset_refusal(state: PopBroker, topic: str, queue_id: int, offset: int, *, last_included: bool) -> str | None:
    """[PO-07] The checks before an ack (or a change): unknown topic, a queue outside the read queues, an offset
    outside the queue — an ack accepts the max offset itself (offset > max), a change does not (offset >= max)."""
    config = state.broker.topics.get(topic)
    if config is None:
        return "TOPIC_NOT_EXIST"
    if not 0 <= queue_id < config.read_queue_nums:
        return "MESSAGE_ILLEGAL"
    high = state.broker.store.get_max_offset_in_queue(topic, queue_id)
    if offset < 0 or offset > high or (offset == high and not last_included):
        return "NO_MESSAGE"
    return None


def on_ack(state: PopBroker, request: AckRequest, now: int) -> tuple[PopBroker, AckAnswer]:
    """[PO-07] Handle ACK_MESSAGE: SUCCESS for any handle of an offset in range; the ack marks its checkpoint only
    while that checkpoint waits in the revive topic — after its revive (or without one) it changes nothing."""
    refusal = get_offset_refusal(state, request.topic, request.queue_id, request.offset, last_included=True)
    if refusal is not None:
        return state, AckAnswer(refusal, False, ("PO-07",))
    if request.handle.is_order:
        return process_ack_orderly(state, request)
    state, effective = process_ack_checkpoint(state, request.topic, request.group, request.queue_id, request.offset,
                                              request.handle)
    return state, AckAnswer("SUCCESS", effective, ("PO-07",))


def mark_acked(ck: Checkpoint | None, offset: int, handle: Handle) -> Checkpoint | None:
    """The checkpoint with `offset` acked — None when the offset is not one of its own, or when the ack, read at its
    handle's revive time, cannot meet it in a revive scan (PO-11): the checkpoint is read 1 s before its own revive
    time and revived 2 s after, so only an ack due from ACK_TIME_INTERVAL before to REVIVE_MARGIN after that time
    reaches it. A handle's own checkpoint always lies in that window."""
    if ck is None or offset not in ck.offsets:
        return None
    if not -REVIVE_MARGIN <= ck.revive_time - handle.next_visible_time <= ACK_TIME_INTERVAL:
        return None
    return ck._replace(acked=ck.acked | 1 << ck.offsets.index(offset))


def process_ack_checkpoint(state: PopBroker, topic: str, group: str, queue_id: int, offset: int,
                           handle: Handle) -> tuple[PopBroker, bool]:
    """The ack message merged by mergeKey (topic, group, queue, the handle's start offset and pop time) into the
    pending checkpoint it meets (mark_acked), which is finished when all its offsets are acked (effective: True only
    when it acks an offset still unacked there); an ack of a checkpoint revived since the last persist is kept with
    it for a replay after a crash (PO-10) but revives nothing less."""
    key = (topic, group, queue_id, handle.start_offset, handle.pop_time)
    slot = key + (handle.next_visible_time,)  # a second checkpoint of the key, revived in another scan (PO-11)
    key = slot if slot in state.pop.checkpoints else key
    pending = state.pop.checkpoints.get(key)
    acked = mark_acked(pending, offset, handle)
    if acked is not None and acked != pending:
        return (drop_checkpoint(state, key) if acked.is_done else put_checkpoint(state, key, acked)), True
    late = mark_acked(state.pop.revived.get(key), offset, handle)
    if late is not None:
        return set_pop(state, revived=state.pop.revived.set(key, late)), False
    return state, False


def process_ack_orderly(state: PopBroker, request: AckRequest) -> tuple[PopBroker, AckAnswer]:
    """[FF-05] ackOrderly: an offset below the committed one changes nothing; otherwise commitAndNext decides the
    offset to commit (-2, another pop's handle: nothing; -1: MESSAGE_ILLEGAL)."""
    committed = query_offset(state.broker, request.group, request.topic, request.queue_id)
    if request.offset < committed:
        return state, AckAnswer("SUCCESS", False, ("FF-05",))
    key = (request.topic, request.group, request.queue_id)
    info, next_offset = commit_and_next(state.pop.order_infos.get(key), request.offset, request.handle.pop_time)
    if next_offset == -1:
        return state, AckAnswer("MESSAGE_ILLEGAL", False, ("FF-05",))
    if next_offset == -2:
        return state, AckAnswer("SUCCESS", False, ("FF-05",))
    if info is not None:
        state = set_pop(state, order_infos=state.pop.order_infos.set(key, info))
    broker = commit_offset(state.broker, request.group, request.topic, request.queue_id, next_offset)
    return set_broker(state, broker), AckAnswer("SUCCESS", True, ("FF-02", "FF-05"))


def on_change_invisible_time(state: PopBroker, request: ChangeRequest, now: int) -> tuple[PopBroker, ChangeAnswer]:
    """[PO-08] Handle CHANGE_MESSAGE_INVISIBLETIME: a new checkpoint for this one message (start offset = its
    offset, pop time = now, the new invisible time), then an ack of the old checkpoint; the answer's pop time is
    now, so the caller gets a new handle. The old checkpoint is not checked: a stale handle still adds one (PO-09)."""
    refusal = get_offset_refusal(state, request.topic, request.queue_id, request.offset, last_included=False)
    if refusal is not None:
        return state, ChangeAnswer(refusal, None, None, request.handle.revive_queue_id, False, ("PO-08",))
    if request.handle.is_order:
        return process_change_orderly(state, request, now)
    ck = Checkpoint(request.topic, request.group, request.queue_id, request.offset, now, request.invisible_time,
                    (request.offset,), request.handle.revive_queue_id)
    state, was_pending, collides = process_change_checkpoint(state, request, ck)
    rules = ("PO-08",) + (() if was_pending else ("PO-09",)) + (("PO-11",) if collides else ())
    return state, ChangeAnswer("SUCCESS", now, request.invisible_time, ck.revive_queue_id, was_pending, rules)


def process_change_checkpoint(state: PopBroker, request: ChangeRequest, ck: Checkpoint) -> tuple[PopBroker, bool, bool]:
    """[PO-11] appendCheckPointThenAckOrigin as the revive service reads it: (state, whether the origin's checkpoint
    was pending, whether the new checkpoint collided with a pending one of its key). The revive scan merges by key
    (map.put: the one read last wins) what it reads before it revives the earlier; it reads a checkpoint 1 s before
    its revive time and revives it 2 s after. So a checkpoint of an existing key whose revive time lies more than
    COLLISION_WINDOW away is revived on its own; within it the later-due one replaces the other. The origin's ack
    then reaches whichever checkpoint of its key it meets (mark_acked)."""
    existing = state.pop.checkpoints.get(ck.key)
    delta = None if existing is None else ck.revive_time - existing.revive_time
    if delta is None or 0 <= delta <= COLLISION_WINDOW:  # new, or the later-due one that replaces the other
        state = put_checkpoint(state, ck.key, ck)
    elif abs(delta) > COLLISION_WINDOW:  # revived in another scan than the existing one
        state = put_checkpoint(state, ck.key + (ck.revive_time,), ck)
    state, was_pending = process_ack_checkpoint(state, request.topic, request.group, request.queue_id,
                                                request.offset, request.handle)
    return state, was_pending, delta is not None and abs(delta) <= COLLISION_WINDOW


def process_change_orderly(state: PopBroker, request: ChangeRequest, now: int) -> tuple[PopBroker, ChangeAnswer]:
    """[FF-04] processChangeInvisibleTimeForOrder: below the committed offset nothing changes (and the answer sets
    no times); otherwise the offset becomes visible at now + invisible time and the handle keeps its pop time."""
    handle = request.handle
    if request.offset < query_offset(state.broker, request.group, request.topic, request.queue_id):
        return state, ChangeAnswer("SUCCESS", None, None, handle.revive_queue_id, False, ("FF-04",))
    key = (request.topic, request.group, request.queue_id)
    next_visible = now + request.invisible_time
    info = state.pop.order_infos.get(key)
    changed = set_next_visible_time(info, request.offset, handle.pop_time, next_visible)
    if changed is not None:
        state = set_pop(state, order_infos=state.pop.order_infos.set(key, changed))
    return state, ChangeAnswer("SUCCESS", handle.pop_time, next_visible - handle.pop_time, handle.revive_queue_id,
                               changed is not info, ("FF-04",))
