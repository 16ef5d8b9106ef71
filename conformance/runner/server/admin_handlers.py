"""The admin requests a harness sends to set a backend up, answered by the model-backed server as RocketMQ 4.9.8's
AdminBrokerProcessor answers them: UPDATE_AND_CREATE_TOPIC (17), GET_ALL_TOPIC_CONFIG (21), UPDATE_BROKER_CONFIG
(25), GET_BROKER_CONFIG (26), UPDATE_AND_CREATE_SUBSCRIPTIONGROUP (200), and GET_ALL_DELAY_OFFSET (45), which
a harness reads to tell a copy still parked for a delay from one already delivered.

They change the model's broker configuration (topics, subscription groups, brokerPermission); they decide no retry
rule. The model server takes only the broker keys the rules depend on at run time (``brokerPermission``, and on a
5.x server the POP keys of pop_adapter.POP_CONFIG_KEYS, e.g. ``enableRetryTopicV2``); any other key of
UPDATE_BROKER_CONFIG is refused with SYSTEM_ERROR naming it, since the model cannot honour it. On a 5.x server a
subscription group also carries what POP and the proxy read: consumeEnable, consumeMessageOrderly, groupRetryPolicy.
"""

from __future__ import annotations

from conformance.codec.codes import RequestCode as Rq
from conformance.codec.codes import ResponseCode as Rs
from conformance.codec.headers import decode_json_body, encode_delay_offset_table, encode_json_body
from conformance.codec.remoting import RemotingCommand, make_response
from conformance.runner.server.pop_adapter import POP_CONFIG_KEYS

RUNTIME_KEYS = ("brokerPermission",)


def parse_properties(body: bytes) -> dict[str, str]:
    """A java.util.Properties text (``key=value`` lines), as MixAll.string2Properties reads it."""
    lines = body.decode("utf-8").splitlines()
    return dict(line.split("=", 1) for line in lines if "=" in line and not line.lstrip().startswith("#"))


async def update_and_create_topic(server, request: RemotingCommand) -> RemotingCommand:
    topic = request.header("topic", "")
    if not topic or topic == server.settings.cluster_name:
        return make_response(request, Rs.SYSTEM_ERROR, f"The topic[{topic}] is conflict with system reserved words.")
    server.adapter.create_topic(topic, int(request.header("readQueueNums", "16")),
                                int(request.header("writeQueueNums", "16")), int(request.header("perm", "6")))
    if server.pop is not None:  # the topic's message type, which a gRPC route names (attributes "+message.type=FIFO")
        server.pop.set_topic_fifo(topic, "message.type=FIFO" in request.header("attributes", ""))
    return make_response(request, Rs.SUCCESS)


async def get_all_topic_config(server, request: RemotingCommand) -> RemotingCommand:
    table = {name: {"topicName": name, "readQueueNums": config.read_queue_nums, "perm": config.perm,
                    "writeQueueNums": config.write_queue_nums, "topicFilterType": "SINGLE_TAG", "topicSysFlag": 0,
                    "order": False}
             for name, config in server.adapter.broker.topics.items()}
    return make_response(request, Rs.SUCCESS, body=encode_json_body({"topicConfigTable": table}))


async def update_broker_config(server, request: RemotingCommand) -> RemotingCommand:
    keys = parse_properties(request.body)
    allowed = (*RUNTIME_KEYS, *(POP_CONFIG_KEYS if server.pop is not None else ()))
    unknown = sorted(set(keys) - set(allowed))
    if unknown:
        return make_response(request, Rs.SYSTEM_ERROR,
                             f"the model-backed broker cannot change {', '.join(unknown)} at run time "
                             f"(only {', '.join(allowed)})")
    if "brokerPermission" in keys:
        server.set_broker_perm(int(keys["brokerPermission"]))
    pop_keys = {key: value for key, value in keys.items() if key in POP_CONFIG_KEYS}
    if pop_keys:
        server.pop.set_broker_config(pop_keys)
    return make_response(request, Rs.SUCCESS)


async def get_broker_config(server, request: RemotingCommand) -> RemotingCommand:
    settings = server.settings
    keys = {"brokerName": settings.broker_name, "brokerClusterName": settings.cluster_name,
            "brokerPermission": server.adapter.broker.perm, "messageDelayLevel": settings.message_delay_level,
            **(server.pop.get_broker_config() if server.pop is not None else {})}
    text = "".join(f"{key}={value}\n" for key, value in keys.items())
    return make_response(request, Rs.SUCCESS, body=text.encode())


async def update_and_create_subscription_group(server, request: RemotingCommand) -> RemotingCommand:
    config = decode_json_body(request.body)
    server.adapter.create_group(str(config["groupName"]), int(config.get("retryQueueNums", 1)),
                                int(config.get("retryMaxTimes", 16)))
    if server.pop is not None:
        server.pop.set_group(str(config["groupName"]), bool(config.get("consumeEnable", True)),
                             bool(config.get("consumeMessageOrderly", False)), config.get("groupRetryPolicy"))
    return make_response(request, Rs.SUCCESS)


async def get_all_delay_offset(server, request: RemotingCommand) -> RemotingCommand:
    """The model's delay-timer offsets as AdminBrokerProcessor.getAllDelayOffset answers (ScheduleMessageService's
    offsetTable): a level is listed once its task has moved its offset (a fresh 4.9.8 broker answers
    {"offsetTable":{}}); a level not listed is at 0."""
    offsets = {level: offset for level, offset in server.adapter.delay_offsets().items() if offset > 0}
    return make_response(request, Rs.SUCCESS, body=encode_delay_offset_table(offsets))


ADMIN_HANDLERS = {
    Rq.UPDATE_AND_CREATE_TOPIC: update_and_create_topic, Rq.GET_ALL_TOPIC_CONFIG: get_all_topic_config,
    Rq.UPDATE_BROKER_CONFIG: update_broker_config, Rq.GET_BROKER_CONFIG: get_broker_config,
    Rq.UPDATE_AND_CREATE_SUBSCRIPTIONGROUP: update_and_create_subscription_group,
    Rq.GET_ALL_DELAY_OFFSET: get_all_delay_offset,
}
