"""The adapter process of PyPI rocketmq-python-client 5.1.2 (apache/rocketmq-clients' Python client, gRPC to the
5.x proxy): adapter protocol v2 on stdin/stdout (conformance/runner/clients/ADAPTER.md).

Run as `python -m conformance.runner.clients.python5_adapter`. One consumer per process:
- `api` "simple": a SimpleConsumer. One thread receives (`config.batch`, `config.invisibleMs` rounded to seconds,
  long polling `config.awaitMs`); each message is one `delivery`, and the harness's outcome says what to do with it:
  ACK, CHANGE_INVISIBLE (`invisibleMs`) or NOTHING, after `slowMs`. Each ack or change answers a `settled` line with
  the proxy's code. `ready` comes after the first receive the proxy answered: a receive before the client's settings
  reached the proxy fails with INTERNAL (seen on 5.3.3), and each such failure is an `error` marked `startup`, retried
  for at most STARTUP_LIMIT_S — a start-up error, not a deviation. A receive that fails later (the proxy restarted)
  is an `error` marked `retried`: the loop receives again, as an application would.
- `api` "push": a PushConsumer whose listener writes a `delivery` and answers as the outcome says (after `slowMs`):
  SUCCESS, FAILURE, or EXCEPTION (it raises). The client acks, nacks and forwards to the DLQ itself.
stdout carries protocol lines only: sys.stdout is pointed at stderr before the client is imported; the client logs to
$HOME/logs/rocketmq_python (the driver sets HOME to the run's log directory).
"""

from __future__ import annotations

import base64
import os
import sys
import threading
import time
from importlib import metadata

from conformance.runner.clients.adapter_io import Channel, Deliveries, read_requests

PROTOCOL = 2
CLIENT = {"name": "rocketmq-python-client", "language": "PYTHON"}
STARTUP_LIMIT_S = 20.0
SHUTDOWN_LIMIT_S = 15.0
APPLIED_CONFIG = ("invisibleMs", "batch", "awaitMs", "consumptionThreads")


def get_client_identity() -> dict:
    return {**CLIENT, "version": metadata.version("rocketmq-python-client")}


def to_record(message) -> dict:
    """One rocketmq.v5 Message as the protocol's gRPC message record."""
    attempt = message.delivery_attempt or 1
    properties = {str(k): str(v) for k, v in (message.properties or {}).items()}
    return {"msgId": message.message_id, "topic": message.topic, "queueId": -1, "queueOffset": -1,
            "deliveryAttempt": attempt, "reconsumeTimes": attempt - 1, "tags": message.tag,
            "messageGroup": message.message_group, "bodyBase64": base64.b64encode(message.body or b"").decode(),
            "properties": properties}


def get_code(error: Exception) -> str:
    """The proxy's status code name a client exception carries (BadRequestException etc.), else its class."""
    from rocketmq.grpc_protocol import Code

    code = getattr(error, "code", None)
    if isinstance(code, int):
        return Code.Name(code) if code in Code.values() else str(code)
    return type(error).__name__


def seconds(ms: int) -> int:
    """The client takes whole seconds (it sets Duration.seconds)."""
    return max(1, round(ms / 1000))


class SimpleRun:
    """A SimpleConsumer's receive loop, each message settled as its outcome says."""

    def __init__(self, channel: Channel, deliveries: Deliveries, consumer, config: dict):
        self.channel, self.deliveries, self.consumer = channel, deliveries, consumer
        self.batch = int(config.get("batch", 1))
        self.invisible_s = seconds(int(config.get("invisibleMs", 10_000)))
        self.stopping = threading.Event()
        self.started = threading.Event()

    def receive(self) -> list:
        try:
            messages = self.consumer.receive(self.batch, self.invisible_s)
        except Exception as error:  # noqa: BLE001 - every failure of the client is a protocol line
            if self.stopping.is_set():
                return []  # the receive the shutdown cancelled
            self.channel.send({"type": "error", "message": f"receive: {get_code(error)}: {error}"[:500],
                               "startup": not self.started.is_set(), "retried": True})
            time.sleep(0.5)
            return []
        self.started.set()
        return messages or []

    def loop(self) -> None:
        while not self.stopping.is_set():
            for message in self.receive():
                if self.stopping.is_set():
                    break
                outcome = self.deliveries.deliver(to_record(message))
                self.settle(message, outcome)

    def settle(self, message, outcome: dict) -> None:
        time.sleep(outcome.get("slowMs", 0) / 1000)
        status, number = outcome.get("status"), outcome.get("delivery")
        if status == "ACK":
            action, invisible, call = "ack", 0, lambda: self.consumer.ack(message)
        elif status == "CHANGE_INVISIBLE":
            invisible = int(outcome.get("invisibleMs", 10_000))
            action, call = "change", lambda: self.consumer.change_invisible_duration(message, seconds(invisible))
        else:
            return  # NOTHING (or a release at stop): the message comes back when its invisible time ends
        try:
            call()
            code = "OK"
        except Exception as error:  # noqa: BLE001
            code = get_code(error)
        line = {"type": "settled", "delivery": number, "action": action, "code": code}
        self.channel.send({**line, "invisibleMs": invisible} if action == "change" else line)


def make_listener(deliveries: Deliveries):
    from rocketmq.v5.consumer import ConsumeResult, MessageListener

    class Listener(MessageListener):
        def consume(self, message):
            outcome = deliveries.deliver(to_record(message))
            time.sleep(outcome.get("slowMs", 0) / 1000)
            status = outcome.get("status")
            if status == "EXCEPTION":
                raise RuntimeError(f"outcome script: delivery {outcome.get('delivery')} raises")
            return ConsumeResult.SUCCESS if status == "SUCCESS" else ConsumeResult.FAILURE

    return Listener()


def start(channel: Channel, deliveries: Deliveries, request: dict):
    """(the started consumer, the SimpleRun or None); raises what the client raised."""
    from rocketmq.v5.client import ClientConfiguration, Credentials
    from rocketmq.v5.consumer import PushConsumer, SimpleConsumer
    from rocketmq.v5.model import FilterExpression

    config = request.get("config", {})
    configuration = ClientConfiguration(request["endpoints"], Credentials())
    subscription = {request["topic"]: FilterExpression(request.get("expression", "*"))}
    if request.get("api") == "simple":
        consumer = SimpleConsumer(configuration, request["group"], subscription,
                                  await_duration=seconds(int(config.get("awaitMs", 2_000))))
        consumer.startup()
        run = SimpleRun(channel, deliveries, consumer, config)
        threading.Thread(target=run.loop, name="receive", daemon=True).start()
        return consumer, run
    consumer = PushConsumer(configuration, request["group"], make_listener(deliveries), subscription,
                            consumption_thread_count=int(config.get("consumptionThreads", 4)))
    consumer.startup()
    return consumer, None


def shut_down(consumer) -> str | None:
    """shutdown() within SHUTDOWN_LIMIT_S; what went wrong, or None."""
    errors: list[str] = []

    def close():
        try:
            consumer.shutdown()
        except Exception as error:  # noqa: BLE001
            errors.append(f"shutdown: {error}")

    thread = threading.Thread(target=close, daemon=True)
    thread.start()
    thread.join(SHUTDOWN_LIMIT_S)
    return f"shutdown took over {SHUTDOWN_LIMIT_S} s" if thread.is_alive() else (errors[0] if errors else None)


def on_start_consumer(channel: Channel, deliveries: Deliveries, request: dict):
    """Start the consumer and answer `ready` (after the first answered receive, for a SimpleConsumer) or `error`."""
    try:
        consumer, run = start(channel, deliveries, request)
    except Exception as error:  # noqa: BLE001
        channel.send({"type": "error", "message": f"start: {get_code(error)}: {error}"[:500]})
        return None, None
    if run is not None and not run.started.wait(STARTUP_LIMIT_S):
        channel.send({"type": "error", "message": f"no receive answered within {STARTUP_LIMIT_S} s of the start"})
        return consumer, run
    ignored = sorted(set(request.get("config", {})) - set(APPLIED_CONFIG))
    channel.send({"type": "ready", "protocol": PROTOCOL, "client": get_client_identity(), "ignoredConfig": ignored})
    return consumer, run


def serve(stdin, stdout) -> int:
    channel = Channel(stdout)
    deliveries = Deliveries(channel, "NOTHING")
    started: list = []  # (consumer, SimpleRun or None)

    def on_start(request: dict) -> None:
        if request.get("api") == "push":
            deliveries.fallback = "FAILURE"
        started.append(on_start_consumer(channel, deliveries, request))

    read_requests(stdin, channel, deliveries, on_start)
    consumer, run = started[0] if started else (None, None)
    if run is not None:
        run.stopping.set()
    deliveries.release_all()
    problem = shut_down(consumer) if consumer is not None else None
    if problem:
        channel.send({"type": "error", "message": problem})
    channel.send({"type": "stopped"})
    return 0


def main() -> None:
    protocol = os.fdopen(os.dup(sys.stdout.fileno()), "w", encoding="utf-8")
    sys.stdout = sys.stderr  # the client's prints (if any) must not reach the protocol stream
    code = serve(sys.stdin, protocol)
    protocol.flush()
    os._exit(code)  # the client's non-daemon threads (scheduler, io loop) must not hold the exit


if __name__ == "__main__":
    main()
