"""The 5.3.3 Java remoting push consumer in POP mode (client rebalance off; ConsumeMessagePopConcurrentlyService,
spec/18-pop-consumer.md): what it sends the broker after its listener returns. model/client/pop_consumer.py turns
these actions into the wire's requests (model/values/pop_wire.py)."""

from __future__ import annotations

from typing import NamedTuple

from model.values.pop_wire import Handle

# DefaultMQPushConsumerImpl.popDelayLevel, in seconds: the POP consumer's own delay table.
POP_DELAY_LEVEL = (10, 30, 60, 120, 180, 240, 300, 360, 420, 480, 540, 600, 1200, 1800, 3600, 7200)


class PopAction(NamedTuple):
    """What the consumer sends for one message: "ack", "change" (with the invisible time in ms) or "none" (the
    client throws before sending, or drops the request); `give_up` marks the maxReconsumeTimes path (PC-02)."""

    kind: str
    handle: Handle
    invisible_time: int = 0
    give_up: bool = False


def compute_pop_delay_millis(delay_level: int, reconsume_times: int) -> int | None:
    """[PC-01] changePopInvisibleTime: level = delayLevelWhenNextConsume, or reconsumeTimes when it is 0; the
    invisible time is popDelayLevel[level] seconds (the last entry beyond the table). A negative level indexes the
    table below 0: the client throws and sends nothing (None)."""
    level = reconsume_times if delay_level == 0 else delay_level
    if level < 0:
        return None
    return POP_DELAY_LEVEL[min(level, len(POP_DELAY_LEVEL) - 1)] * 1000


def compute_give_up(handle: Handle, born_timestamp: int, now: int) -> PopAction:
    """[PC-02] checkNeedAckOrDelay: a message older than twice the last delay (2 x 7200 s) since it was born is
    acked — dropped, never dead-lettered; a younger one gets the invisible time of the first level longer than its
    age; one younger than the first level (10 s) makes the client throw: nothing is sent."""
    age = now - born_timestamp
    if age > POP_DELAY_LEVEL[-1] * 1000 * 2:
        return PopAction("ack", handle, give_up=True)
    level = next((index + 1 for index in reversed(range(len(POP_DELAY_LEVEL)))
                  if age >= POP_DELAY_LEVEL[index] * 1000), -1)
    millis = compute_pop_delay_millis(level, 0)
    return PopAction("none", handle, give_up=True) if millis is None else PopAction("change", handle, millis, True)


def is_pop_timeout(handle: Handle, now: int) -> bool:
    """[PC-03] ConsumeRequest.isPopTimeout: now - popTime >= invisibleTime (or no pop time or invisible time)."""
    if handle.pop_time <= 0 or handle.invisible_time <= 0:
        return True
    return now - handle.pop_time >= handle.invisible_time


def process_consume_result(messages: tuple, handles: tuple, succeeded: bool, ack_index: int, delay_level: int,
                           max_reconsume_times: int, now: int) -> tuple[PopAction, ...]:
    """[PC-01] processConsumeResult of one consume request: nothing once its pop has timed out (PC-03); else the
    messages up to ackIndex are acked (CONSUME_SUCCESS; RECONSUME_LATER acks none) and every other message either
    gives up (PC-02, reconsumeTimes >= maxReconsumeTimes) or has its invisible time changed (PC-01)."""
    if is_pop_timeout(handles[0], now):
        return tuple(PopAction("none", handle) for handle in handles)
    last_acked = min(ack_index, len(messages) - 1) if succeeded else -1
    actions = [PopAction("ack", handle) for handle in handles[:last_acked + 1]]
    for message, handle in zip(messages[last_acked + 1:], handles[last_acked + 1:], strict=True):
        action = compute_failure_action(message, handle, delay_level, max_reconsume_times, now)
        if action.kind == "none":  # the client threw: the rest of the request is not sent either
            actions.extend(PopAction("none", h, give_up=action.give_up) for h in handles[len(actions):])
            break
        actions.append(action)
    return tuple(actions)


def compute_failure_action(message, handle: Handle, delay_level: int, max_reconsume_times: int,
                           now: int) -> PopAction:
    """[PC-01] A failed message: the give-up path at reconsumeTimes >= maxReconsumeTimes (PC-02), else a change to
    the POP delay of its level."""
    if message.reconsume_times >= max_reconsume_times:
        return compute_give_up(handle, message.born_timestamp, now)
    millis = compute_pop_delay_millis(delay_level, message.reconsume_times)
    return PopAction("none", handle) if millis is None else PopAction("change", handle, millis)
