"""A report line checked against its JSON Schema by jsonschema's own validator: the writers' tests and
`python -m reportformat FILE ...` use it (the aggregate translates the schema instead, reports/line_shape.py)."""

from __future__ import annotations

from jsonschema import Draft202012Validator, validators

from reportformat.schema import LINE_SCHEMA


def is_written_integer(checker, value: object) -> bool:
    """An integer as the writers write it and the aggregate reads it: 3, not 3.0 (JSON Schema admits both)."""
    return isinstance(value, int) and not isinstance(value, bool)


STRICT_INTEGERS = Draft202012Validator.TYPE_CHECKER.redefine("integer", is_written_integer)
VALIDATOR = validators.extend(Draft202012Validator, type_checker=STRICT_INTEGERS)(LINE_SCHEMA)


def find_problems(line: object) -> list[str]:
    """Every way `line` (a parsed JSON value) breaks the schema, as ``path: message``; empty for a good line."""
    return [
        f"{'/'.join(map(str, error.absolute_path)) or '(line)'}: {error.message}"
        for error in sorted(VALIDATOR.iter_errors(line), key=lambda error: list(map(str, error.absolute_path)))
    ]
