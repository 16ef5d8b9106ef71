"""The harness as a RocketMQ client: the broker requests of the retry machinery, one method each.

Each method sends one request over a :class:`RemotingClient` and returns the raw response, so that the caller
compares codes, header fields and bodies of two backends itself.
"""

from __future__ import annotations

import json
import time

from conformance.codec.codes import (
    CONSUMER_SEND_MSG_BACK,
    GET_MAX_OFFSET,
    GET_MIN_OFFSET,
    HEART_BEAT,
    LOCK_BATCH_MQ,
    PULL_MESSAGE,
    QUERY_CONSUMER_OFFSET,
    SEND_MESSAGE,
    UNLOCK_BATCH_MQ,
    UPDATE_CONSUMER_OFFSET,
)
from conformance.codec.message import encode_properties
from conformance.codec.remoting import RemotingCommand as Command
from conformance.runner.backends.remoting_client import RemotingClient

PULL_FLAG_SUBSCRIPTION = 0x4


class BrokerClient(RemotingClient):
    """A connection to one broker, with the requests the differential draws."""

    def send(self, topic: str, queue_id: int, body: bytes, properties: dict[str, str],
             reconsume_times: int | None = None, max_reconsume_times: int | None = None) -> Command:
        fields = {"producerGroup": "rmqspec-producer", "topic": topic, "defaultTopic": "TBW102",
                  "defaultTopicQueueNums": 4, "queueId": queue_id, "sysFlag": 0,
                  "bornTimestamp": int(time.time() * 1000), "flag": 0, "properties": encode_properties(properties),
                  "reconsumeTimes": reconsume_times, "unitMode": "false", "batch": "false",
                  "maxReconsumeTimes": max_reconsume_times}
        return self.call(SEND_MESSAGE, fields, body)

    def send_back(self, group: str, commit_log_offset: int, delay_level: int, origin_msg_id: str | None,
                  origin_topic: str | None, max_reconsume_times: int | None) -> Command:
        fields = {"offset": commit_log_offset, "group": group, "delayLevel": delay_level,
                  "originMsgId": origin_msg_id, "originTopic": origin_topic, "unitMode": "false",
                  "maxReconsumeTimes": max_reconsume_times}
        return self.call(CONSUMER_SEND_MSG_BACK, fields)

    def pull(self, group: str, topic: str, queue_id: int, offset: int, max_nums: int = 32) -> Command:
        """A pull that answers at once (no suspend) and carries its own subscription ``*``."""
        fields = {"consumerGroup": group, "topic": topic, "queueId": queue_id, "queueOffset": offset,
                  "maxMsgNums": max_nums, "sysFlag": PULL_FLAG_SUBSCRIPTION, "commitOffset": 0,
                  "suspendTimeoutMillis": 0, "subscription": "*", "subVersion": 0, "expressionType": "TAG"}
        return self.call(PULL_MESSAGE, fields)

    def query_offset(self, group: str, topic: str, queue_id: int) -> Command:
        return self.call(QUERY_CONSUMER_OFFSET, {"consumerGroup": group, "topic": topic, "queueId": queue_id})

    def update_offset(self, group: str, topic: str, queue_id: int, offset: int) -> Command:
        fields = {"consumerGroup": group, "topic": topic, "queueId": queue_id, "commitOffset": offset}
        return self.call(UPDATE_CONSUMER_OFFSET, fields)

    def max_offset(self, topic: str, queue_id: int) -> Command:
        return self.call(GET_MAX_OFFSET, {"topic": topic, "queueId": queue_id})

    def min_offset(self, topic: str, queue_id: int) -> Command:
        return self.call(GET_MIN_OFFSET, {"topic": topic, "queueId": queue_id})

    def lock(self, group: str, client_id: str, broker_name: str, topic: str, queue_ids: list[int]) -> Command:
        return self.call(LOCK_BATCH_MQ, body=_lock_body(group, client_id, broker_name, topic, queue_ids))

    def heartbeat(self, client_id: str, group: str, topic: str) -> Command:
        """A push consumer's heartbeat for `group` subscribed to `topic` (``*``); the broker then creates the group's
        %RETRY% topic with its retryQueueNums queues (ClientManageProcessor.heartBeat), as before any real retry."""
        subscription = {"topic": topic, "subString": "*", "tagsSet": [], "codeSet": [], "subVersion": 0,
                        "expressionType": "TAG", "classFilterMode": False}
        consumer = {"groupName": group, "consumeType": "CONSUME_PASSIVELY", "messageModel": "CLUSTERING",
                    "consumeFromWhere": "CONSUME_FROM_LAST_OFFSET", "subscriptionDataSet": [subscription],
                    "unitMode": False}
        body = {"clientID": client_id, "producerDataSet": [], "consumerDataSet": [consumer]}
        return self.call(HEART_BEAT, body=json.dumps(body).encode())

    def unlock(self, group: str, client_id: str, broker_name: str, topic: str, queue_ids: list[int]) -> Command:
        return self.call(UNLOCK_BATCH_MQ, body=_lock_body(group, client_id, broker_name, topic, queue_ids))


def _lock_body(group: str, client_id: str, broker_name: str, topic: str, queue_ids: list[int]) -> bytes:
    mqs = [{"topic": topic, "brokerName": broker_name, "queueId": q} for q in queue_ids]
    return json.dumps({"consumerGroup": group, "clientId": client_id, "mqSet": mqs}).encode()


def get_locked_queue_ids(response: Command) -> list[int]:
    """The queue ids a LOCK_BATCH_MQ response granted."""
    if not response.body:
        return []
    return sorted(mq["queueId"] for mq in json.loads(response.body).get("lockOKMQSet", []))
