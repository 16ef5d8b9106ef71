"""Custom headers and JSON bodies of the requests a push consumer sends (RocketMQ 4.9.8 field names).

Sources (common/src/main/java/org/apache/rocketmq/common/protocol/ at rocketmq-all-4.9.8): header/
PullMessageRequestHeader, ConsumerSendMsgBackRequestHeader, SendMessageRequestHeader(V2), Query/
UpdateConsumerOffsetRequestHeader; body/LockBatchRequestBody, UnlockBatchRequestBody, HeartbeatData; route/
TopicRouteData, QueueData, BrokerData.
"""

from __future__ import annotations

import json
import re

from conformance.codec.codes import RequestCode

# SendMessageRequestHeaderV2 carries SendMessageRequestHeader's fields under single letters.
SEND_V2_KEYS = {"a": "producerGroup", "b": "topic", "c": "defaultTopic", "d": "defaultTopicQueueNums",
                "e": "queueId", "f": "sysFlag", "g": "bornTimestamp", "h": "flag", "i": "properties",
                "j": "reconsumeTimes", "k": "unitMode", "l": "maxReconsumeTimes", "m": "batch", "n": "brokerName"}
# The header field of a SEND_MESSAGE (full names) and a SEND_MESSAGE_V2 (SEND_V2_KEYS' letters) that holds `name`.
SEND_FIELDS = {name: {RequestCode.SEND_MESSAGE: name, RequestCode.SEND_MESSAGE_V2: letter}
               for letter, name in SEND_V2_KEYS.items()}
# PullSysFlag
PULL_FLAG_COMMIT_OFFSET = 0x1
PULL_FLAG_SUSPEND = 0x2
PULL_FLAG_SUBSCRIPTION = 0x4
PULL_FLAG_CLASS_FILTER = 0x8


# The header fields RocketMQ 4.9.8 declares @CFNotNull, by request code (common/.../protocol/header/*RequestHeader).
# RemotingCommand.decodeCommandCustomHeader refuses a request without one ("the custom field <x> is null"); the
# fast-decoded headers (SendMessageRequestHeaderV2, PullMessageRequestHeader) fail on the first use of the null
# instead. Either way the answer is SYSTEM_ERROR (NettyRemotingAbstract.processRequestCommand).
REQUIRED_FIELDS = {
    10: ("producerGroup", "topic", "defaultTopic", "defaultTopicQueueNums", "queueId", "sysFlag", "bornTimestamp",
         "flag"),
    310: tuple("abcdefgh"),
    11: ("consumerGroup", "topic", "queueId", "queueOffset", "maxMsgNums", "sysFlag", "commitOffset",
         "suspendTimeoutMillis", "subVersion"),
    36: ("offset", "group", "delayLevel"),
    14: ("consumerGroup", "topic", "queueId"),
    15: ("consumerGroup", "topic", "queueId", "commitOffset"),
}


def get_missing_field(code: int, ext_fields: dict[str, str]) -> str | None:
    """The first @CFNotNull header field of request `code` that `ext_fields` lacks (None: all there)."""
    return next((f for f in REQUIRED_FIELDS.get(code, ()) if ext_fields.get(f) is None), None)


def decode_send_header(ext_fields: dict[str, str], v2: bool) -> dict[str, str]:
    """A SEND_MESSAGE(_V2) header under SendMessageRequestHeader's long names."""
    if not v2:
        return dict(ext_fields)
    return {SEND_V2_KEYS.get(k, k): v for k, v in ext_fields.items()}


def encode_send_header_v2(fields: dict[str, object]) -> dict[str, str]:
    long_to_short = {v: k for k, v in SEND_V2_KEYS.items()}
    return {long_to_short.get(k, k): _java_text(v) for k, v in fields.items()}


def _java_text(value: object) -> str:
    return ("true" if value else "false") if isinstance(value, bool) else str(value)


def optional_int(fields: dict[str, str], key: str) -> int | None:
    value = fields.get(key)
    return None if value in (None, "", "null") else int(value)


def decode_json_body(body: bytes) -> dict:
    """A JSON body as fastjson writes it; rejects anything that is not a JSON object."""
    value = json.loads(body.decode("utf-8")) if body else {}
    if not isinstance(value, dict):
        raise ValueError(f"body is a JSON {type(value).__name__}, expected an object")
    return value


def encode_json_body(value: dict) -> bytes:
    return json.dumps(value, separators=(",", ":")).encode("utf-8")


# fastjson writes the Integer keys of a map bare: ScheduleMessageService.encode() is {"offsetTable":{2:1}}.
BARE_INT_KEY = re.compile(r'([{,]\s*)(-?\d+)\s*:')


def decode_delay_offset_table(body: bytes) -> dict[int, int]:
    """GET_ALL_DELAY_OFFSET's body (ScheduleMessageService.encode, DelayOffsetSerializeWrapper): the delay timer's
    offsetTable, delay level -> the next SCHEDULE_TOPIC_XXXX queue offset that level's task delivers."""
    text = BARE_INT_KEY.sub(r'\1"\2":', body.decode("utf-8")) if body else "{}"
    table = decode_json_body(text.encode("utf-8")).get("offsetTable") or {}
    return {int(level): int(offset) for level, offset in table.items()}


def encode_delay_offset_table(offsets: dict[int, int]) -> bytes:
    """The offsetTable as RocketMQ 4.9.8 writes it (fastjson, Integer keys bare), levels in order."""
    entries = ",".join(f"{level}:{offset}" for level, offset in sorted(offsets.items()))
    return ('{"offsetTable":{' + entries + "}}").encode("utf-8")


def encode_message_queue(topic: str, broker_name: str, queue_id: int) -> dict:
    return {"brokerName": broker_name, "queueId": queue_id, "topic": topic}


def decode_message_queues(items) -> list[tuple[str, int]]:
    """The mqSet of a Lock/UnlockBatchRequestBody as (topic, queue id) pairs."""
    return [(str(item["topic"]), int(item["queueId"])) for item in items or ()]


def encode_route(broker_name: str, cluster: str, broker_addr: str, queue_nums: int, perm: int) -> dict:
    """TopicRouteData of one broker (brokerAddrs keyed by broker id 0 = master, as a JSON string key)."""
    return {"orderTopicConf": None, "filterServerTable": {},
            "queueDatas": [{"brokerName": broker_name, "readQueueNums": queue_nums, "writeQueueNums": queue_nums,
                            "perm": perm, "topicSysFlag": 0}],
            "brokerDatas": [{"cluster": cluster, "brokerName": broker_name, "brokerAddrs": {"0": broker_addr}}]}


def encode_cluster_info(broker_name: str, cluster: str, broker_addr: str) -> dict:
    return {"brokerAddrTable": {broker_name: {"cluster": cluster, "brokerName": broker_name,
                                              "brokerAddrs": {"0": broker_addr}}},
            "clusterAddrTable": {cluster: [broker_name]}}
