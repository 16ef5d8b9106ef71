"""Broker settings sent over the wire: topics (UPDATE_AND_CREATE_TOPIC, 17), subscription groups
(UPDATE_AND_CREATE_SUBSCRIPTIONGROUP, 200) and broker configuration such as ``brokerPermission``
(UPDATE_BROKER_CONFIG, 25) — the same requests RocketMQ's admin tool sends, without a JVM start per setting.
"""

from __future__ import annotations

import json
import time

from conformance.codec.codes import (
    GET_BROKER_CONFIG,
    GET_BROKER_RUNTIME_INFO,
    UPDATE_AND_CREATE_SUBSCRIPTIONGROUP,
    UPDATE_AND_CREATE_TOPIC,
    UPDATE_BROKER_CONFIG,
    ResponseCode,
)
from conformance.codec.remoting import RemotingCommand as Command
from conformance.runner.backends.remoting_client import RemotingClient

SUCCESS = ResponseCode.SUCCESS
PERM_READ, PERM_WRITE = 4, 2
PERM_READ_WRITE = PERM_READ | PERM_WRITE


class AdminError(RuntimeError):
    """The broker refused a setting."""


def check(response: Command, what: str) -> Command:
    if response.code != SUCCESS:
        raise AdminError(f"{what}: response code {response.code} ({response.remark})")
    return response


def create_topic(client: RemotingClient, topic: str, queue_nums: int = 4, perm: int = PERM_READ_WRITE) -> None:
    """Creates (or updates) `topic` with `queue_nums` read and write queues and permission `perm`."""
    fields = {"topic": topic, "defaultTopic": "TBW102", "readQueueNums": queue_nums, "writeQueueNums": queue_nums,
              "perm": perm, "topicFilterType": "SINGLE_TAG", "topicSysFlag": 0, "order": "false"}
    check(client.call(UPDATE_AND_CREATE_TOPIC, fields), f"create topic {topic}")


def create_group(client: RemotingClient, group: str, retry_max_times: int = 16, retry_queue_nums: int = 1) -> None:
    """Creates (or updates) the subscription group `group` with its retryMaxTimes and retryQueueNums."""
    config = {"groupName": group, "consumeEnable": True, "consumeFromMinEnable": True,
              "consumeBroadcastEnable": True, "retryQueueNums": retry_queue_nums, "retryMaxTimes": retry_max_times,
              "brokerId": 0, "whichBrokerWhenConsumeSlowly": 1, "notifyConsumerIdsChangedEnable": True}
    body = json.dumps(config).encode()
    check(client.call(UPDATE_AND_CREATE_SUBSCRIPTIONGROUP, body=body), f"create group {group}")


def update_broker_config(client: RemotingClient, **keys: object) -> None:
    """Changes broker configuration keys at run time (e.g. ``brokerPermission=4`` for read-only)."""
    body = "".join(f"{k}={v}\n" for k, v in keys.items()).encode()
    check(client.call(UPDATE_BROKER_CONFIG, body=body), f"update broker config {keys}")


def get_broker_config(client: RemotingClient) -> dict[str, str]:
    """The broker's configuration as it reports it (GET_BROKER_CONFIG, 26)."""
    text = check(client.call(GET_BROKER_CONFIG), "get broker config").body.decode()
    return dict(line.split("=", 1) for line in text.splitlines() if "=" in line)


DISPATCH_PAUSE_S = 0.03  # where the broker does not report its dispatch: the pause the examples always took
DISPATCH_LIMIT_S = 10.0


def wait_for_dispatch(client: RemotingClient, limit_s: float = DISPATCH_LIMIT_S) -> None:
    """Returns once the broker dispatched all it stored to its consume queues (GET_BROKER_RUNTIME_INFO, 28:
    ``dispatchBehindBytes`` 0), so a pull right after a write sees it: a fixed 30 ms was too short for a real
    4.9.8 broker at load 10 (differential-broker read an empty queue). A broker that does not report it (the
    model-backed server dispatches at once) gets the fixed pause; past `limit_s` the caller reads what is there."""
    deadline = time.monotonic() + limit_s
    while True:
        response = client.call(GET_BROKER_RUNTIME_INFO)
        if response.code != SUCCESS or not response.body:
            time.sleep(DISPATCH_PAUSE_S)
            return
        table = json.loads(response.body.decode()).get("table", {})
        if table.get("dispatchBehindBytes", "0") == "0" or time.monotonic() > deadline:
            return
        time.sleep(0.01)
