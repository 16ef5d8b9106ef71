"""Adapter protocol v1's JSON Schema (conformance/runner/clients/adapter-protocol.schema.json) against what the adapters
really write: a recorded transcript of each of the C++, Java and Node adapters
(tests/conformance/fixtures/adapter-*.jsonl, one produce -> fail -> retry run each; the live C++ and Node smoke runs
validate theirs too), and ADAPTER.md's example. Lines that break the protocol are rejected, so the schema is not
vacuous."""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest

from conformance.runner.clients.protocol import SCHEMA_PATH, get_protocol_problems

FIXTURES = Path(__file__).with_name("fixtures")
ADAPTER_MD = SCHEMA_PATH.with_name("ADAPTER.md")
CLIENTS = ("cpp", "java", "node")
EVERY_TYPE = {"start", "ready", "delivery", "outcome", "stop", "stopped"}


def read_transcript(client: str) -> list[dict]:
    text = (FIXTURES / f"adapter-{client}.jsonl").read_text(encoding="utf-8")
    return [json.loads(line) for line in text.splitlines() if line.strip()]


def get_example_lines() -> list[dict]:
    """The JSON objects of ADAPTER.md's example session (lines after → or ←)."""
    return [json.loads(m) for m in re.findall(r"^[→←] (\{.*\})$", ADAPTER_MD.read_text(encoding="utf-8"), re.M)]


@pytest.mark.parametrize("client", CLIENTS)
def test_every_line_a_recorded_adapter_exchanged_is_in_the_schema(client):
    lines = read_transcript(client)
    assert {line["type"] for line in lines} >= EVERY_TYPE
    assert get_protocol_problems(lines) == []


def test_the_documented_example_is_in_the_schema():
    lines = get_example_lines()
    assert len(lines) >= 8 and {line["protocol"] for line in lines if line["type"] == "ready"} == {1, 2}
    assert get_protocol_problems(lines) == []


def without(line: dict, *path: str) -> dict:
    copy = json.loads(json.dumps(line))
    target = copy
    for key in path[:-1]:
        target = target[key] if not isinstance(target, list) else target[0]
    del target[path[-1]]
    return copy


def test_lines_that_break_the_protocol_are_rejected():
    lines = {line["type"]: line for line in read_transcript("node")}
    delivery = lines["delivery"]
    broken = [
        without(delivery, "messages", "0", "commitLogOffset"),  # the harness matches send-backs by it
        {**lines["ready"], "protocol": 3},
        {**lines["outcome"], "status": "MAYBE"},
        {**delivery, "delivery": 0},
        {"type": "hello"},
        without(lines["start"], "namesrv"),
    ]
    problems = get_protocol_problems(broken)
    assert [p.split(" ")[1] for p in problems] == [str(n) for n in range(1, len(broken) + 1)], problems
