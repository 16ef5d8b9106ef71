"""RocketMQ 5.x POP on the remoting protocol: the headers of POP_MESSAGE, ACK_MESSAGE and
CHANGE_MESSAGE_INVISIBLETIME, the receipt handle (``extraInfo``, the POP_CK property) and the retry topic names.

Pure values in, values out; the connection is conformance/runner/backends/remoting_client.py.

Sources (apache/rocketmq at rocketmq-all-5.3.3): remoting/.../protocol/header/PopMessageRequestHeader.java,
PopMessageResponseHeader.java, AckMessageRequestHeader.java, ChangeInvisibleTimeRequestHeader.java,
ChangeInvisibleTimeResponseHeader.java, ExtraInfoUtil.java (the handle), common/.../KeyBuilder.java (retry topic
names), client/.../impl/MQClientAPIImpl.java processPopResponse (how a client gives each popped message its handle).
"""

from __future__ import annotations

import time

import attrs

KEY_SEPARATOR = " "  # MessageConst.KEY_SEPARATOR
RETRY_PREFIX = "%RETRY%"
DLQ_PREFIX = "%DLQ%"
# ExtraInfoUtil's topic marks: the normal topic, a v1 retry topic (%RETRY%group_topic), a v2 one (%RETRY%group+topic).
NORMAL_MARK, RETRY_MARK_V1, RETRY_MARK_V2 = "0", "1", "2"
INIT_MODE_MIN, INIT_MODE_MAX = 0, 1  # ConsumeInitMode
ORDER_REVIVE_QUEUE = 999  # KeyBuilder.POP_ORDER_REVIVE_QUEUE: the reviveQid of a FIFO (order) pop


class HandleError(ValueError):
    """A receipt handle (extraInfo) that ExtraInfoUtil would not parse."""


def get_retry_topic(group: str, topic: str, v2: bool = False) -> str:
    """KeyBuilder.buildPopRetryTopic: ``%RETRY%{group}_{topic}`` (v1) or ``%RETRY%{group}+{topic}`` (v2)."""
    return f"{RETRY_PREFIX}{group}{'+' if v2 else '_'}{topic}"


def get_dlq_topic(group: str) -> str:
    return f"{DLQ_PREFIX}{group}"


def get_topic_mark(topic: str) -> str:
    """ExtraInfoUtil.getRetry(topic): which kind of topic a handle or an offset-info entry names."""
    if topic.startswith(RETRY_PREFIX) and "+" in topic:
        return RETRY_MARK_V2
    return RETRY_MARK_V1 if topic.startswith(RETRY_PREFIX) else NORMAL_MARK


@attrs.frozen
class Handle:
    """A parsed receipt handle: ckQueueOffset popTime invisibleTime reviveQid topicMark brokerName queueId offset."""

    ck_offset: int
    pop_time: int
    invisible_time: int
    revive_qid: int
    topic_mark: str
    broker_name: str
    queue_id: int
    offset: int

    @property
    def revive_time(self) -> int:
        """popTime + invisibleTime: the earliest time the checkpoint may revive the message."""
        return self.pop_time + self.invisible_time

    def get_real_topic(self, topic: str, group: str) -> str:
        """ExtraInfoUtil.getRealTopic: the topic an ack or a change of this handle must name."""
        if self.topic_mark == NORMAL_MARK:
            return topic
        return get_retry_topic(group, topic, v2=self.topic_mark == RETRY_MARK_V2)


def encode_handle(handle: Handle) -> str:
    """ExtraInfoUtil.buildExtraInfo(..., msgQueueOffset)."""
    parts = (handle.ck_offset, handle.pop_time, handle.invisible_time, handle.revive_qid, handle.topic_mark,
             handle.broker_name, handle.queue_id, handle.offset)
    return KEY_SEPARATOR.join(str(p) for p in parts)


def decode_handle(text: str) -> Handle:
    parts = text.split(KEY_SEPARATOR)
    if len(parts) != 8:
        raise HandleError(f"receipt handle {text!r} has {len(parts)} fields (valid: 8)")
    try:
        return Handle(int(parts[0]), int(parts[1]), int(parts[2]), int(parts[3]), parts[4], parts[5], int(parts[6]),
                      int(parts[7]))
    except ValueError as error:
        raise HandleError(f"receipt handle {text!r}: {error}") from None


def encode_pop_request(group: str, topic: str, queue_id: int, max_nums: int, invisible_ms: int, poll_ms: int,
                       exp: str = "*", order: bool = False, attempt_id: str | None = None,
                       init_mode: int = INIT_MODE_MIN, born_ms: int | None = None) -> dict[str, object]:
    """PopMessageRequestHeader (queueId -1: every queue). The broker refuses (POLLING_TIMEOUT) a request whose
    bornTime + pollTime is more than 500 ms in the past, so bornTime is now unless given."""
    return {"consumerGroup": group, "topic": topic, "queueId": queue_id, "maxMsgNums": max_nums,
            "invisibleTime": invisible_ms, "pollTime": poll_ms,
            "bornTime": int(time.time() * 1000) if born_ms is None else born_ms, "initMode": init_mode,
            "expType": "TAG", "exp": exp, "order": "true" if order else "false", "attemptId": attempt_id}


@attrs.frozen
class PopHeader:
    """PopMessageResponseHeader."""

    pop_time: int
    invisible_time: int
    revive_qid: int
    rest_num: int
    start_offsets: dict[tuple[str, int], int]  # (topic mark, queue id) -> the checkpoint's start offset
    msg_offsets: dict[tuple[str, int], tuple[int, ...]]
    order_counts: dict[str, int]  # "mark@queueId" or "mark@qo<queueId>%<offset>" -> times popped (FIFO)


def decode_pop_header(fields: dict[str, str]) -> PopHeader:
    starts = _split_info(fields.get("startOffsetInfo"))
    offsets = _split_info(fields.get("msgOffsetInfo"))
    counts = _split_info(fields.get("orderCountInfo"), False)
    return PopHeader(int(fields.get("popTime", 0)), int(fields.get("invisibleTime", 0)),
                     int(fields.get("reviveQid", 0)), int(fields.get("restNum", 0)),
                     {k: int(v) for k, v in starts.items()},
                     {k: tuple(int(o) for o in v.split(",")) for k, v in offsets.items()},
                     {f"{k[0]}@{k[1]}": int(v) for k, v in counts.items()})


def _split_info(text: str | None, int_key: bool = True) -> dict:
    """ExtraInfoUtil.parse*Info: ``mark queueId value`` entries joined by ``;``."""
    entries = {}
    for entry in (text or "").split(";"):
        if entry:
            mark, key, value = entry.split(KEY_SEPARATOR)
            entries[(mark, int(key) if int_key else key)] = value
    return entries


def get_message_handle(header: PopHeader, broker_name: str, stored_topic: str, queue_id: int, queue_offset: int,
                       pop_ck: str | None) -> str:
    """The handle a client gives one popped message (MQClientAPIImpl.processPopResponse): the broker's own POP_CK
    where it set one (a message popped from a retry topic), else built from the header's start offset of its queue."""
    if pop_ck:
        return pop_ck
    mark = get_topic_mark(stored_topic)
    start = header.start_offsets[(mark, queue_id)]
    return encode_handle(Handle(start, header.pop_time, header.invisible_time, header.revive_qid, mark, broker_name,
                                queue_id, queue_offset))


def get_order_count(header: PopHeader, stored_topic: str, queue_id: int, queue_offset: int) -> int:
    """How many times an orderly pop handed this offset out before (orderCountInfo: per offset, else per queue); the
    Java client shows it as the message's reconsumeTimes (MQClientAPIImpl.processPopResponse). 0 when none."""
    mark = get_topic_mark(stored_topic)
    count = header.order_counts.get(f"{mark}@qo{queue_id}%{queue_offset}")
    return count if count is not None else header.order_counts.get(f"{mark}@{queue_id}", 0)


def encode_ack_request(group: str, topic: str, handle: str) -> dict[str, object]:
    """AckMessageRequestHeader for one handle; the topic is the handle's real topic (a retry topic for a revived
    copy), as the Java client and the proxy send it."""
    parsed = decode_handle(handle)
    return {"consumerGroup": group, "topic": parsed.get_real_topic(topic, group), "queueId": parsed.queue_id,
            "extraInfo": handle, "offset": parsed.offset}


def encode_change_request(group: str, topic: str, handle: str, invisible_ms: int) -> dict[str, object]:
    return {**encode_ack_request(group, topic, handle), "invisibleTime": invisible_ms}


def get_changed_handle(request: dict[str, object], response_fields: dict[str, str], broker_name: str) -> str:
    """The new handle after a successful change (MQClientAPIImpl.changeInvisibleTimeAsync): its checkpoint starts at
    the message's own offset, with the response's popTime, invisibleTime and reviveQid."""
    offset, topic = int(request["offset"]), str(request["topic"])
    return encode_handle(Handle(offset, int(response_fields["popTime"]), int(response_fields["invisibleTime"]),
                                int(response_fields["reviveQid"]), get_topic_mark(topic), broker_name,
                                int(request["queueId"]), offset))


def encode_group_config(group: str, retry_max_times: int = 16, orderly: bool = False,
                        policy: dict | None = None) -> dict:
    """SubscriptionGroupConfig as UPDATE_AND_CREATE_SUBSCRIPTIONGROUP's JSON body; `policy` is a GroupRetryPolicy
    (see customized_policy, exponential_policy), the broker's default (customized, 1s 5s ... 2h) when None."""
    config = {"groupName": group, "consumeEnable": True, "consumeFromMinEnable": True,
              "consumeBroadcastEnable": True, "consumeMessageOrderly": orderly, "retryQueueNums": 1,
              "retryMaxTimes": retry_max_times, "brokerId": 0, "whichBrokerWhenConsumeSlowly": 1,
              "notifyConsumerIdsChangedEnable": True}
    if policy is not None:
        config["groupRetryPolicy"] = policy
    return config


def customized_policy(next_ms: list[int]) -> dict:
    return {"type": "CUSTOMIZED", "customizedRetryPolicy": {"next": list(next_ms)}}


def exponential_policy(initial_ms: int, max_ms: int, multiplier: int) -> dict:
    return {"type": "EXPONENTIAL",
            "exponentialRetryPolicy": {"initial": initial_ms, "max": max_ms, "multiplier": multiplier}}


def decode_assignment_request(body: dict) -> tuple[str, str, str, str]:
    """QueryAssignmentRequestBody (QUERY_ASSIGNMENT's JSON body): (topic, consumerGroup, clientId, strategyName)."""
    return (str(body.get("topic", "")), str(body.get("consumerGroup", "")), str(body.get("clientId", "")),
            str(body.get("strategyName", "")))


def encode_assignment_body(topic: str, broker_name: str, mode: str, queue_ids: tuple[int, ...] | None) -> dict:
    """QueryAssignmentResponseBody: one MessageQueueAssignment (its queue, the mode) per queue id; a null set where
    the broker has no valid assignment."""
    assignments = None if queue_ids is None else [
        {"messageQueue": {"topic": topic, "brokerName": broker_name, "queueId": queue_id}, "mode": mode,
         "attachments": {}} for queue_id in queue_ids]
    return {"messageQueueAssignments": assignments}
