"""Request handlers: each turns one request into a call on the broker adapter and its answer into a response.

Nothing here decides a retry rule; the broker adapter asks the model. Handlers are looked up by request code in
HANDLERS; a code missing from it is answered REQUEST_CODE_NOT_SUPPORTED by the server.
"""

from __future__ import annotations

import asyncio
import json

from conformance.codec.codes import RequestCode as Rq
from conformance.codec.codes import ResponseCode as Rs
from conformance.codec.headers import (
    PULL_FLAG_COMMIT_OFFSET,
    PULL_FLAG_SUSPEND,
    decode_json_body,
    decode_message_queues,
    decode_send_header,
    encode_cluster_info,
    encode_json_body,
    encode_message_queue,
    encode_route,
    optional_int,
)
from conformance.codec.message import decode_properties, encode_messages
from conformance.codec.remoting import RemotingCommand, make_response
from conformance.runner.faults import make_fault_answer
from conformance.runner.server.admin_handlers import ADMIN_HANDLERS

PULL_STATUS_CODES = {"FOUND": Rs.SUCCESS, "NO_NEW_MSG": Rs.PULL_NOT_FOUND,
                     "NO_MATCHED_MSG": Rs.PULL_RETRY_IMMEDIATELY, "OFFSET_ILLEGAL": Rs.PULL_OFFSET_MOVED,
                     "NO_PERMISSION": Rs.NO_PERMISSION, "TOPIC_NOT_EXIST": Rs.TOPIC_NOT_EXIST,
                     "SYSTEM_ERROR": Rs.SYSTEM_ERROR}
REFUSALS = ("NO_PERMISSION", "TOPIC_NOT_EXIST", "SYSTEM_ERROR")  # answered without the pull's header fields


def ok(request: RemotingCommand, ext_fields: dict | None = None, body: bytes = b"") -> RemotingCommand:
    return make_response(request, Rs.SUCCESS, None, {k: str(v) for k, v in (ext_fields or {}).items()}, body)


async def get_route(server, request: RemotingCommand) -> RemotingCommand:
    topic = request.header("topic", "")
    # A killed broker's connection to the name server closes: RocketMQ's name server drops its routes at once
    # (BrokerHousekeepingService.onChannelClose); the restarted broker registers them again at its start.
    config = None if "broker" in server.down else server.adapter.broker.topics.get(topic)
    if config is None and server.settings_allow_auto_create(topic) and "broker" not in server.down:
        config = server.adapter.ensure_topic(topic)
    if config is None:
        return make_response(request, Rs.TOPIC_NOT_EXIST, f"No topic route info in name server for the topic: {topic}")
    perm = server.adapter.broker.perm & config.perm
    route = encode_route(server.settings.broker_name, server.settings.cluster_name, server.broker_addr,
                         config.read_queue_nums, perm)
    return ok(request, body=encode_json_body(route))


async def get_cluster_info(server, request: RemotingCommand) -> RemotingCommand:
    info = encode_cluster_info(server.settings.broker_name, server.settings.cluster_name, server.broker_addr)
    return ok(request, body=encode_json_body(info))


async def heart_beat(server, request: RemotingCommand) -> RemotingCommand:
    data = decode_json_body(request.body)
    client_id = str(data.get("clientID", ""))
    for consumer in data.get("consumerDataSet") or ():
        group = str(consumer["groupName"])
        server.adapter.ensure_group(group)
        server.consumers.setdefault(group, {})[client_id] = consumer
    return ok(request)


def get_registrations(request: RemotingCommand) -> set[tuple[str, str]]:
    """(group, clientID) of every consumer a HEART_BEAT registers (none for a body that is not one)."""
    try:
        data = decode_json_body(request.body)
        return {(str(c["groupName"]), str(data.get("clientID", ""))) for c in data.get("consumerDataSet") or ()}
    except (ValueError, TypeError, KeyError, AttributeError):
        return set()


def unregister_channel(server, registrations: set[tuple[str, str]]) -> None:
    """A broker connection closed: every consumer that heartbeated on it (and on no connection since) is
    unregistered, as RocketMQ 4.9.8's ConsumerManager.doChannelCloseEvent does — the group's other members then
    rebalance its queues at once instead of after the channel's 120 s expiry."""
    for group, client_id in registrations:
        server.consumers.get(group, {}).pop(client_id, None)


async def unregister_client(server, request: RemotingCommand) -> RemotingCommand:
    group = request.header("consumerGroup")
    if group:
        server.consumers.get(group, {}).pop(request.header("clientID", ""), None)
    return ok(request)


async def get_consumer_list(server, request: RemotingCommand) -> RemotingCommand:
    clients = sorted(server.consumers.get(request.header("consumerGroup", ""), {}))
    if not clients:
        return make_response(request, Rs.SYSTEM_ERROR, "no consumer for this group")
    return ok(request, body=encode_json_body({"consumerIdList": clients}))


def queue_of(request: RemotingCommand) -> tuple[str, int]:
    return request.header("topic", ""), int(request.header("queueId", "0"))


async def query_consumer_offset(server, request: RemotingCommand) -> RemotingCommand:
    """The model's answer: an offset, or QUERY_NOT_FOUND (RB-04)."""
    offset = server.adapter.query_offset(request.header("consumerGroup", ""), *queue_of(request))
    if offset is None:
        return make_response(request, Rs.QUERY_NOT_FOUND, "Not found, V3_0_6_SNAPSHOT maybe")
    return ok(request, {"offset": offset})


async def update_consumer_offset(server, request: RemotingCommand) -> RemotingCommand:
    server.adapter.commit_offset(request.header("consumerGroup", ""), *queue_of(request),
                                 int(request.header("commitOffset", "0")), server.now())
    return ok(request)


async def get_max_offset(server, request: RemotingCommand) -> RemotingCommand:
    return ok(request, {"offset": server.adapter.max_offset(*queue_of(request))})


async def get_min_offset(server, request: RemotingCommand) -> RemotingCommand:
    return ok(request, {"offset": server.adapter.min_offset(*queue_of(request))})


async def search_offset(server, request: RemotingCommand) -> RemotingCommand:
    offset = server.adapter.search_offset(*queue_of(request), int(request.header("timestamp", "0")))
    return ok(request, {"offset": offset})


async def send_message(server, request: RemotingCommand) -> RemotingCommand:
    kind = server.faults.get_kind(server, request)
    if kind is not None:
        return make_fault_answer(request, kind)
    fields = decode_send_header(request.ext_fields, request.code == Rq.SEND_MESSAGE_V2)
    header = (optional_int(fields, "reconsumeTimes"), optional_int(fields, "maxReconsumeTimes"))
    code, remark, stored, _rules = server.adapter.send(
        fields.get("topic", ""), int(fields.get("queueId", "0")), request.body,
        decode_properties(fields.get("properties") or ""), int(fields.get("flag", "0")),
        int(fields.get("bornTimestamp", "0")), header, server.advance())
    if stored is None:
        return make_response(request, code, remark or None)
    server.notify_store_changed()
    server.notify_arrival(fields.get("topic", ""))
    # The answer names the request's queue id (SendMessageProcessor 4.9.8 L278, L546), not the schedule or DLQ
    # queue the message went to.
    return make_response(request, code, None, {"msgId": stored.msg_id, "queueId": fields.get("queueId", "0"),
                                               "queueOffset": str(stored.queue_offset)})


async def send_back(server, request: RemotingCommand) -> RemotingCommand | None:
    kind = server.faults.get_kind(server, request)
    if server.faults.send_back_silent or server.faults.send_back_error:
        kind = "send_back_timeout" if server.faults.send_back_silent else "send_back_error"
    if kind is not None:
        return make_fault_answer(request, kind)
    code, remark, _rules = server.adapter.send_back(
        request.header("group", ""), int(request.header("offset", "-1")), int(request.header("delayLevel", "0")),
        request.header("originTopic", ""), request.header("originMsgId", ""),
        optional_int(request.ext_fields, "maxReconsumeTimes"), server.advance())
    server.notify_store_changed()
    return make_response(request, code, remark or None)


async def pull_message(server, request: RemotingCommand) -> RemotingCommand:
    if server.faults.pull_error or server.faults.get_kind(server, request) == "pull_error":
        return make_fault_answer(request, "pull_error")
    group, (topic, queue_id) = request.header("consumerGroup", ""), queue_of(request)
    flags, offset = int(request.header("sysFlag", "0")), int(request.header("queueOffset", "0"))
    commit = optional_int(request.ext_fields, "commitOffset")
    if flags & PULL_FLAG_COMMIT_OFFSET and commit is not None and commit >= 0:
        server.adapter.commit_offset(group, topic, queue_id, commit, server.now())
    suspend = int(request.header("suspendTimeoutMillis", "0")) if flags & PULL_FLAG_SUSPEND else 0
    deadline = server.now() + suspend
    while True:
        waiter = server.store_changed_waiter()
        server.advance()
        status, found, next_offset, low, high = server.adapter.pull(
            topic, queue_id, offset, int(request.header("maxMsgNums", "32")), request.header("subscription", "*"))
        remaining = deadline - server.now()
        if status != "NO_NEW_MSG" or remaining <= 0:
            break
        try:
            await asyncio.wait_for(waiter, remaining / 1000)
        except TimeoutError:
            pass
    if status in REFUSALS:
        return make_response(request, PULL_STATUS_CODES[status], f"pull refused: {status}")
    header = {"nextBeginOffset": next_offset, "minOffset": low, "maxOffset": high, "suggestWhichBrokerId": 0}
    return make_response(request, PULL_STATUS_CODES[status], None, {k: str(v) for k, v in header.items()},
                         encode_messages(found))


def lock_body(request: RemotingCommand) -> tuple[str, str, list[tuple[str, int]]]:
    body = decode_json_body(request.body)
    return str(body.get("consumerGroup", "")), str(body.get("clientId", "")), decode_message_queues(body.get("mqSet"))


async def lock_batch(server, request: RemotingCommand) -> RemotingCommand:
    group, client_id, queues = lock_body(request)
    granted = server.adapter.lock(group, queues, client_id, server.advance())
    name = server.settings.broker_name
    body = {"lockOKMQSet": [encode_message_queue(topic, name, queue_id) for topic, queue_id in granted]}
    return ok(request, body=encode_json_body(body))


async def unlock_batch(server, request: RemotingCommand) -> RemotingCommand:
    group, client_id, queues = lock_body(request)
    server.adapter.unlock(group, queues, client_id)
    return ok(request)


HANDLERS = {
    Rq.GET_ROUTEINFO_BY_TOPIC: get_route, Rq.GET_BROKER_CLUSTER_INFO: get_cluster_info, Rq.HEART_BEAT: heart_beat,
    Rq.UNREGISTER_CLIENT: unregister_client, Rq.GET_CONSUMER_LIST_BY_GROUP: get_consumer_list,
    Rq.QUERY_CONSUMER_OFFSET: query_consumer_offset, Rq.UPDATE_CONSUMER_OFFSET: update_consumer_offset,
    Rq.GET_MAX_OFFSET: get_max_offset, Rq.GET_MIN_OFFSET: get_min_offset, Rq.SEARCH_OFFSET_BY_TIMESTAMP: search_offset,
    Rq.SEND_MESSAGE: send_message, Rq.SEND_MESSAGE_V2: send_message, Rq.CONSUMER_SEND_MSG_BACK: send_back,
    Rq.PULL_MESSAGE: pull_message, Rq.LOCK_BATCH_MQ: lock_batch, Rq.UNLOCK_BATCH_MQ: unlock_batch,
    **ADMIN_HANDLERS,
}


def describe_body(body: bytes) -> str:
    try:
        return json.dumps(json.loads(body))[:200]
    except (ValueError, UnicodeDecodeError):
        return f"<{len(body)} bytes>"
