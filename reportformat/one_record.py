"""A report line holds one JSON record and nothing else. A JSON reader that stops after the first value (Spark's, and
Python's ``raw_decode``) would count ``{...},{...}`` or ``{...} x`` as its first record; the readers name such a line
the same way: two JSON records on one line when it holds two or more objects (or "}" then "{", a comma between them
or not), else text after the JSON record. The aggregate (reports/transform.py), the DuckDB baseline and
``python -m reportformat`` apply this."""

from __future__ import annotations

import json
import re

TWO_RECORDS = "two JSON records on one line"
TEXT_AFTER = "text after the JSON record"
# "}" then "{" with only spaces or tabs and at most one comma between: where one record ends and another begins.
TWO_RECORDS_PATTERN = r"\}[ \t]*,?[ \t]*\{"
DECODER = json.JSONDecoder()
JSON_BLANKS = " \t\r\n"  # what JSON allows between values (other spaces, such as U+00A0, are text)


def get_first_value(text: str) -> str | None:
    """The text of the first JSON value of `text` (spaces before it skipped), or None when it does not start with
    one."""
    start = len(text) - len(text.lstrip(" "))
    try:
        _, end = DECODER.raw_decode(text, start)
    except ValueError:
        return None
    return text[start:end]


def count_objects(text: str) -> int | None:
    """How many JSON objects `text` holds as an array's elements, or None when it is not a list of objects."""
    try:
        values = json.loads(f"[{text}]")
    except ValueError:
        return None
    return len(values) if all(isinstance(value, dict) for value in values) else None


def describe_extra(text: str) -> str | None:
    """Why `text`, which starts with a JSON object, is not one record: two records, text after it; None when it is
    one JSON value."""
    objects = count_objects(text)
    if objects == 1 or (objects is None and get_first_value(text) == text.strip(" ").rstrip(JSON_BLANKS)):
        return None
    if (objects or 0) >= 2 or re.search(TWO_RECORDS_PATTERN, text):
        return TWO_RECORDS
    return TEXT_AFTER
