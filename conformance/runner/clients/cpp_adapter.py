"""The adapter process of rocketmq-client-cpp 1.2.3 (PyPI `rocketmq` 0.4.4): adapter protocol v1 on stdin/stdout.

Run as `python -m conformance.runner.clients.cpp_adapter`. The C++ library owns its threads and may not shut down
cleanly, so it lives in this process, never in the harness's: the harness (conformance/runner/clients/cpp.py) can
always kill it. One push consumer is started through the binding's ctypes functions; each message the library
hands to the C callback is one `delivery` line, and the callback blocks until the harness's `outcome` for it
arrives (at most OUTCOME_TIMEOUT_S, then RECONSUME_LATER and an `error` line).

Statuses: CONSUME_SUCCESS / SUCCESS / COMMIT return 0, RECONSUME_LATER / SUSPEND_CURRENT_QUEUE_A_MOMENT return
1 from the callback (the C API knows only these two, CPushConsumer.cpp L39-L76); EXCEPTION raises inside the
ctypes callback, which is what the binding's own `subscribe` wrapper does (client.py L381-L393 of 0.4.4: the
`finally` re-raises), so the status the library then reads is the binding's behaviour, measured. NULL and
ROLLBACK have no counterpart in the C API: the adapter answers `error` and RECONSUME_LATER.
"""

from __future__ import annotations

import base64
import sys
import tempfile
from importlib import metadata

from conformance.runner.clients.adapter_io import Channel, Deliveries, read_requests

CLIENT = {"name": "rocketmq-client-cpp", "version": "1.2.3", "language": "CPP"}
# The C API reads one property at a time (GetMessageProperty); these are the ones the rules look at.
PROPERTY_KEYS = ("UNIQ_KEY", "TAGS", "KEYS", "DELAY", "RETRY_TOPIC", "ORIGIN_MESSAGE_ID", "REAL_TOPIC", "REAL_QID",
                 "RECONSUME_TIME", "MAX_RECONSUME_TIMES", "CONSUME_START_TIME")
STATUS_CODES = {"CONSUME_SUCCESS": 0, "SUCCESS": 0, "COMMIT": 0, "RECONSUME_LATER": 1,
                "SUSPEND_CURRENT_QUEUE_A_MOMENT": 1}


class ListenerRaised(Exception):
    """What the outcome script's EXCEPTION raises inside the callback."""


def get_client_identity() -> dict:
    return {**CLIENT, "binding": "rocketmq", "bindingVersion": metadata.version("rocketmq")}


def read_message(ffi, msg) -> dict:
    """One MQMessageExt as the protocol's message record."""
    dll = ffi.dll
    properties = {}
    for key in PROPERTY_KEYS:
        value = dll.GetMessageProperty(msg, key.encode())
        if value:
            properties[key] = value.decode()
    body = dll.GetMessageBody(msg) or b""
    return {"msgId": (dll.GetMessageId(msg) or b"").decode(), "topic": (dll.GetMessageTopic(msg) or b"").decode(),
            "queueId": dll.GetMessageQueueId(msg), "queueOffset": dll.GetMessageQueueOffset(msg),
            "commitLogOffset": dll.GetMessageCommitLogOffset(msg), "reconsumeTimes": dll.GetMessageReconsumeTimes(msg),
            "bornTimestamp": dll.GetMessageBornTimestamp(msg), "storeTimestamp": dll.GetMessageStoreTimestamp(msg),
            "tags": (dll.GetMessageTags(msg) or b"").decode(), "bodyBase64": base64.b64encode(body).decode(),
            "properties": properties}


def make_callback(ffi, deliveries: Deliveries, channel: Channel):
    def on_message(_consumer, msg):
        outcome = deliveries.deliver(read_message(ffi, msg))
        status = outcome.get("status")
        if status == "EXCEPTION":
            raise ListenerRaised(f"outcome script: delivery {outcome.get('delivery')} raises")
        if status not in STATUS_CODES:
            channel.send({"type": "error", "message": f"status {status!r} has no counterpart in the C API"})
            return 1
        return STATUS_CODES[status]

    return ffi.MSG_CALLBACK_FUNC(on_message)


def start_consumer(ffi, start: dict, callback):
    """Create, configure and start one push consumer; answers its handle."""
    from rocketmq.exceptions import ffi_check

    dll = ffi.dll
    consumer = dll.CreatePushConsumer(start["group"].encode())
    calls = [
        (dll.SetPushConsumerNameServerAddress, start["namesrv"].encode()),
        (dll.SetPushConsumerInstanceName, start.get("instance", "conformance").encode()),
        (dll.SetPushConsumerMessageModel, ffi.MessageModel[start.get("model", "clustering").upper()]),
        (dll.SetPushConsumerLogPath, start.get("logDir", tempfile.gettempdir()).encode()),
        (dll.Subscribe, start["topic"].encode(), start.get("expression", "*").encode()),
    ]
    threads = start.get("config", {}).get("consumeThreadCount")
    if threads:
        calls.append((dll.SetPushConsumerThreadCount, int(threads)))
    batch = start.get("config", {}).get("consumeMessageBatchMaxSize")
    if batch:
        calls.append((dll.SetPushConsumerMessageBatchMaxSize, int(batch)))
    register = dll.RegisterMessageCallbackOrderly if start.get("mode") == "orderly" else dll.RegisterMessageCallback
    calls.append((register, callback))
    for function, *arguments in calls:
        ffi_check(function(consumer, *arguments))
    ffi_check(dll.StartPushConsumer(consumer))
    return consumer


def serve(stdin, stdout) -> int:
    from rocketmq import ffi  # loads librocketmq.so: only in the adapter process

    channel = Channel(stdout)
    deliveries = Deliveries(channel)
    started: list = []  # the consumer and its callback (which must outlive it)

    def on_start(request: dict) -> None:
        callback = make_callback(ffi, deliveries, channel)
        started.extend([start_consumer(ffi, request, callback), callback])
        ignored = sorted(set(request.get("config", {})) - {"consumeThreadCount", "consumeMessageBatchMaxSize"})
        channel.send({"type": "ready", "protocol": 1, "client": get_client_identity(), "ignoredConfig": ignored})

    read_requests(stdin, channel, deliveries, on_start)
    consumer = started[0] if started else None
    deliveries.release_all()
    if consumer is not None:
        ffi.dll.ShutdownPushConsumer(consumer)
    channel.send({"type": "stopped"})
    return 0


if __name__ == "__main__":
    sys.exit(serve(sys.stdin, sys.stdout))
