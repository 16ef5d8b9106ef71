"""Which broker rules a test confirms, recorded per backend for the report's rule x backend table.

A test marked ``@pytest.mark.rules("SB-01", ...)`` confirms those rules on the backend it ran against when it
passes and refutes them when it fails; ``write_rule_records`` writes one JSON line per (rule, backend, test) to
``<reports dir>/<run id>/differential-rules.ndjson``.
"""

from __future__ import annotations

import json
from pathlib import Path

from reports.differential import RECORDS_NAME

__all__ = ["RECORDS_NAME", "make_record", "read_rule_table", "write_rule_records"]


def make_record(rule: str, backend: str, test: str, passed: bool, detail: str) -> dict:
    return {"rule": rule, "backend": backend, "test": test, "verdict": "agrees" if passed else "differs",
            "counterexample": None if passed else detail[-2000:]}


def write_rule_records(path: Path, records: list[dict]) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    with open(path, "a", encoding="utf-8") as sink:
        for record in records:
            sink.write(json.dumps(record, sort_keys=True) + "\n")


def read_rule_table(path: Path) -> dict[tuple[str, str], str]:
    """(rule, backend) -> "agrees" | "differs" (differs wins when several tests touched the pair)."""
    table: dict[tuple[str, str], str] = {}
    for line in path.read_text(encoding="utf-8").splitlines():
        record = json.loads(line)
        key = (record["rule"], record["backend"])
        table[key] = "differs" if "differs" in (table.get(key), record["verdict"]) else "agrees"
    return table
