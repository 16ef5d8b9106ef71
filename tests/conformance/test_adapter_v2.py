"""Adapter protocol v2's pieces without a broker: the harness sends v1 for what v1 says (the 4.x adapters run
unchanged) and v2 otherwise; the 5.x Python adapter's message records, settlements and start-up errors are lines of
the schema; a `ready` in another version fails the start."""

from __future__ import annotations

import io
import json
import sys

from conformance.runner.clients.adapter_io import Channel, Deliveries
from conformance.runner.clients.driver import AdapterConsumer, StartRequest
from conformance.runner.clients.protocol import get_protocol_problems
from conformance.runner.clients.python5_adapter import SimpleRun, to_record


def test_a_start_v1_can_say_is_sent_as_v1_and_a_5x_one_as_v2():
    push = StartRequest("127.0.0.1:9876", "G", "T", "i", config={"maxReconsumeTimes": 2})
    assert push.to_line()["protocol"] == 1 and "api" not in push.to_line()
    simple = StartRequest("", "G", "T", "i", api="simple", endpoints="127.0.0.1:8081", config={"invisibleMs": 2000})
    pop = StartRequest("127.0.0.1:9876", "G", "T", "i", config={"clientRebalance": False, "invisibleMs": 3000})
    assert simple.to_line()["protocol"] == pop.to_line()["protocol"] == 2
    assert get_protocol_problems([push.to_line(), pop.to_line(), {**simple.to_line(), "namesrv": "127.0.0.1:1"}]) == []


class FakeMessage:
    message_id, topic, tag, message_group, body, properties, delivery_attempt = "m0", "T", "TagA", None, b"x", {}, 2


class FakeConsumer:
    def __init__(self, refuse: bool):
        self.refuse, self.calls = refuse, []

    def ack(self, message):
        self.calls.append("ack")
        if self.refuse:
            raise RuntimeError("invalid receipt handle")

    def change_invisible_duration(self, message, seconds):
        self.calls.append(("change", seconds))


def test_the_python5_adapter_settles_each_outcome_in_schema_lines():
    out = io.StringIO()
    channel = Channel(out)
    run = SimpleRun(channel, Deliveries(channel, "NOTHING"), FakeConsumer(refuse=False), {"invisibleMs": 2000})
    run.settle(FakeMessage(), {"delivery": 1, "status": "CHANGE_INVISIBLE", "invisibleMs": 1000})
    run.settle(FakeMessage(), {"delivery": 2, "status": "ACK"})
    run.settle(FakeMessage(), {"delivery": 3, "status": "NOTHING"})
    refused = SimpleRun(channel, Deliveries(channel), FakeConsumer(refuse=True), {})
    refused.settle(FakeMessage(), {"delivery": 4, "status": "ACK"})
    lines = [json.loads(line) for line in out.getvalue().splitlines()]
    assert [(line["delivery"], line["action"], line["code"]) for line in lines] == \
        [(1, "change", "OK"), (2, "ack", "OK"), (4, "ack", "RuntimeError")]
    delivery = {"type": "delivery", "delivery": 1, "thread": "t", "messages": [to_record(FakeMessage())],
                "context": {}}
    startup = {"type": "error", "message": "receive: INTERNAL", "startup": True}
    assert get_protocol_problems([*lines, delivery, startup]) == []
    assert to_record(FakeMessage())["reconsumeTimes"] == 1


FAKE_V1 = r"""
import json, sys
sys.stdin.readline()
print(json.dumps({"type": "ready", "protocol": 1, "client": {"name": "old", "version": "1"}}), flush=True)
sys.stdin.readline()
"""


class OldAdapter(AdapterConsumer):
    ready_timeout_s = 10.0

    def get_argv(self):
        return [sys.executable, "-c", FAKE_V1]


def test_a_ready_in_another_version_than_the_start_fails_the_start():
    request = StartRequest("", "G", "T", "i", api="simple", endpoints="127.0.0.1:8081")
    consumer = OldAdapter(request, lambda message, seen: "ACK")
    try:
        consumer.start()
        raise AssertionError("a v1 ready to a v2 start was accepted")
    except TimeoutError as error:
        assert "ready in protocol 1, start was 2" in str(error)
    finally:
        consumer.kill()
