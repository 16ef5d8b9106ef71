"""`python -m reportformat FILE ...`: every line of the report files that breaks the report line's JSON Schema, as
`file:line: path: problem`; exit 1 when there is any."""

from __future__ import annotations

import json
import sys

from reportformat.one_record import describe_extra, get_first_value
from reportformat.validate import find_problems


def check_file(path: str) -> list[str]:
    problems = []
    with open(path, encoding="utf-8", errors="replace") as lines:
        for number, text in enumerate(lines, start=1):
            if not text.strip():
                continue
            try:
                found = find_problems(json.loads(text))
            except ValueError as error:
                found = [f"not JSON: {describe_json_error(text, error)}"]
            problems += [f"{path}:{number}: {problem}" for problem in found]
    return problems


def describe_json_error(text: str, error: ValueError) -> str:
    """A line that starts with an object but holds more is named as the aggregate names it (two records, text
    after the record); any other line by the JSON parser's error."""
    line = text.rstrip("\r\n")
    if (get_first_value(line) or "").startswith("{"):
        return describe_extra(line) or str(error)
    return str(error)


def main(paths: list[str]) -> int:
    problems = [problem for path in paths for problem in check_file(path)]
    for problem in problems:
        print(ascii(problem)[1:-1])
    return 1 if problems else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
