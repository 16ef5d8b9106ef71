"""Adapter protocol v1's JSON Schema (conformance/runner/clients/adapter-protocol.schema.json) applied to what a client
driver exchanged with its adapter: every line either way must be one of the protocol's messages.

`jsonschema` is a development dependency (the dev extra): only tests validate transcripts.
"""

from __future__ import annotations

import json
from collections.abc import Iterable
from functools import cache
from pathlib import Path

from conformance.runner.clients.driver import AdapterConsumer, OutcomeScript, StartRequest

SCHEMA_PATH = Path(__file__).resolve().parent / "adapter-protocol.schema.json"


@cache
def get_validator():
    from jsonschema import Draft202012Validator

    schema = json.loads(SCHEMA_PATH.read_text(encoding="utf-8"))
    Draft202012Validator.check_schema(schema)
    return Draft202012Validator(schema)


def get_protocol_problems(lines: Iterable[dict]) -> list[str]:
    """One line per protocol line the schema rejects: its type and the first reason."""
    from jsonschema.exceptions import best_match

    problems = []
    for number, line in enumerate(lines, 1):
        error = best_match(get_validator().iter_errors(line))
        if error is not None:
            problems.append(f"line {number} ({line.get('type')!r}): {error.message} at {list(error.absolute_path)}")
    return problems


def get_transcript_problems(consumers: Iterable[AdapterConsumer]) -> list[str]:
    """The schema's complaints about every line of every consumer's transcript."""
    return get_protocol_problems(line for consumer in consumers for _direction, line in consumer.transcript)


def recording(open_client, into: list):
    """An OpenClient that also keeps each consumer it makes in `into` (for its transcript)."""

    def open_recorded(request: StartRequest, script: OutcomeScript, log_dir: str | None) -> AdapterConsumer:
        consumer = open_client(request, script, log_dir)
        into.append(consumer)
        return consumer

    return open_recorded
