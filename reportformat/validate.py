"""A report line checked against its JSON Schema by jsonschema's own validator: the writers' tests and
`python -m reportformat FILE ...` use it (the aggregate translates the schema instead, reports/line_shape.py)."""

from __future__ import annotations

from jsonschema import Draft202012Validator

from reportformat.schema import LINE_SCHEMA

VALIDATOR = Draft202012Validator(LINE_SCHEMA)


def find_problems(line: object) -> list[str]:
    """Every way `line` (a parsed JSON value) breaks the schema, as ``path: message``; empty for a good line."""
    return [
        f"{'/'.join(map(str, error.absolute_path)) or '(line)'}: {error.message}"
        for error in sorted(VALIDATOR.iter_errors(line), key=lambda error: list(map(str, error.absolute_path)))
    ]
