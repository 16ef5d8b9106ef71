"""The JSON Schema of a report line (report-line.schema.json beside this module), loaded once, and what its checks
are as plain data, for the engines that translate them (reports/line_shape.py into Spark's, the DuckDB baseline into
SQL). Validating a line with jsonschema is reportformat/validate.py's (this module needs no jsonschema: the tox envs
that only aggregate do not install it)."""

from __future__ import annotations

import json
from pathlib import Path

SCHEMA_PATH = Path(__file__).with_name("report-line.schema.json")
LINE_SCHEMA: dict = json.loads(SCHEMA_PATH.read_text(encoding="utf-8"))


def get_kinds() -> list[str]:
    """The record kinds (the values of ``type``)."""
    return LINE_SCHEMA["properties"]["type"]["enum"]


def get_kind_rules() -> dict[str, dict]:
    """Per record kind, what its ``then`` branch adds: ``required`` fields and per-field constraints."""
    rules = {}
    for branch in LINE_SCHEMA["allOf"]:
        kind = branch["if"]["properties"]["type"]["const"]
        rules[kind] = branch["then"]
    return rules


# JSON types as the checks name them; a JSON Schema "number" admits an integer too.
TYPE_ORDER = ("string", "integer", "number", "boolean", "array", "object", "null")


def get_types(node: dict) -> tuple[str, ...]:
    """The JSON types a schema node admits (an enum or const of strings: string)."""
    if "enum" in node or "const" in node:
        return ("string",)
    found = node.get("type", ())
    found = (found,) if isinstance(found, str) else tuple(found)
    return found + ("integer",) if "number" in found and "integer" not in found else found


def describe_types(types: tuple[str, ...]) -> str:
    """``string or null``: how a reason names what a field may be."""
    shown = [name for name in TYPE_ORDER if name in types and not (name == "integer" and "number" in types)]
    named = (name if name == "null" else f"an {name}" if name[0] in "aeiou" else f"a {name}" for name in shown)
    return " or ".join(named)


def get_field_types() -> dict[str, tuple[str, ...]]:
    """Each top-level field the schema names, with the JSON types it admits (in every kind of line)."""
    return {name: get_types(node) for name, node in LINE_SCHEMA["properties"].items()}


def describe_kind(kind: str) -> str:
    """``a test_case line``, ``an info line``."""
    return f"{'an' if kind[0] in 'aeiou' else 'a'} {kind} line"


def get_value_types() -> dict[str, tuple[str, ...]]:
    """Each top-level object field whose values the schema types (``timing``: numbers), with those types."""
    return {
        name: get_types(node["additionalProperties"])
        for name, node in LINE_SCHEMA["properties"].items()
        if isinstance(node.get("additionalProperties"), dict)
    }


def get_kind_checks() -> list[tuple[str, str, tuple[str, ...] | None]]:
    """(kind, field, the values it may take or None) of what each kind of line requires: a required field is
    present and not null; a field with an enum or const takes one of its values."""
    checks = []
    for kind, rules in get_kind_rules().items():
        checks += [(kind, field, None) for field in rules.get("required", ())]
        for field, node in rules.get("properties", {}).items():
            values = node.get("enum") or ([node["const"]] if "const" in node else None)
            if values:
                checks.append((kind, field, tuple(values)))
    return checks
