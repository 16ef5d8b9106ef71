"""The 5.x broker requests of the model-backed server: POP_MESSAGE, ACK_MESSAGE, CHANGE_MESSAGE_INVISIBLETIME and
QUERY_ASSIGNMENT (a client with client rebalance off, as RocketMQ 5.3.3's remoting POP consumer),
answered only by a server whose profile has server-side retry (``server.pop``, pop_adapter.py); a 4.x server answers
them REQUEST_CODE_NOT_SUPPORTED, as for any code it lacks.

Nothing here decides a rule: the POP adapter asks the model. A POP whose pollTime is above 0 and that finds nothing
is held, as PopLongPollingService holds it, until a message arrives in its topic (or in its v2 retry topic) or the
poll time ends; a v1 retry copy does not wake it (the broker notifies the retry topic's own name, which no pop waits
on).
"""

from __future__ import annotations

from conformance.codec import pop
from conformance.codec.codes import RequestCode as Rq
from conformance.codec.codes import ResponseCode as Rs
from conformance.codec.headers import decode_json_body, encode_json_body
from conformance.codec.message import encode_messages
from conformance.codec.remoting import RemotingCommand, make_response


def get_notified_topic(topic: str) -> str | None:
    """The topic whose held pops a message stored in `topic` wakes (notifyMessageArrivingWithRetryTopic): a v2
    retry topic's normal topic (the part after '+'), any other topic itself; a v1 retry topic names a topic no pop
    waits on (None)."""
    if not topic.startswith("%RETRY%"):
        return topic
    return topic.split("+", 1)[1] if "+" in topic else None


def get_code(name: str) -> int:
    return Rs[name].value


async def pop_message(server, request: RemotingCommand) -> RemotingCommand:
    fields = request.ext_fields
    topic, poll_ms = fields["topic"], int(fields.get("pollTime", "0"))
    deadline = server.now() + poll_ms
    while True:
        waiter = server.arrival_waiter(topic)
        result = server.pop.pop_messages(
            fields["consumerGroup"], topic, int(fields["queueId"]), int(fields["maxMsgNums"]),
            int(fields["invisibleTime"]), fields.get("exp", "*"), fields.get("order") == "true",
            fields.get("attemptId"), server.advance())
        remaining = deadline - server.now()
        if result.code != "POLLING_TIMEOUT" or remaining <= 0:
            break
        await server.wait(waiter, remaining)
    server.notify_store_changed()  # the revive timer learns of the new checkpoints
    header = {k: str(v) for k, v in result.header.items()}
    return make_response(request, get_code(result.code), None if result.messages else "NO_MESSAGE_IN_QUEUE", header,
                         encode_messages(list(result.messages)))


async def ack_message(server, request: RemotingCommand) -> RemotingCommand:
    fields = request.ext_fields
    code = server.pop.ack(fields["consumerGroup"], fields["topic"], int(fields["queueId"]), int(fields["offset"]),
                          fields["extraInfo"], server.advance())
    return make_response(request, get_code(code))


async def change_invisible_time(server, request: RemotingCommand) -> RemotingCommand:
    fields = request.ext_fields
    code, header = server.pop.change(fields["consumerGroup"], fields["topic"], int(fields["queueId"]),
                                     int(fields["offset"]), fields["extraInfo"], int(fields["invisibleTime"]),
                                     server.advance())
    server.notify_store_changed()
    return make_response(request, get_code(code), None, {k: str(v) for k, v in header.items()})


async def query_assignment(server, request: RemotingCommand) -> RemotingCommand:
    topic, group, client_id, strategy = pop.decode_assignment_request(decode_json_body(request.body))
    config = server.adapter.broker.topics.get(topic)
    mode, queue_ids = server.pop.assign(topic, config.read_queue_nums if config is not None else None,
                                        tuple(server.consumers.get(group, {})), client_id, strategy)
    body = pop.encode_assignment_body(topic, server.settings.broker_name, mode, queue_ids)
    return make_response(request, Rs.SUCCESS, None, None, encode_json_body(body))


POP_HANDLERS = {Rq.POP_MESSAGE: pop_message, Rq.ACK_MESSAGE: ack_message,
                Rq.CHANGE_MESSAGE_INVISIBLETIME: change_invisible_time, Rq.QUERY_ASSIGNMENT: query_assignment}
