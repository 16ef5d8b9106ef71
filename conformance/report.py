"""Rule x client records of conformance runs, beside the property suite's report files.

With RMQSPEC_REPORTS=1 every verdict becomes one JSON line in
`<RMQSPEC_REPORTS_DIR>/<run id>/conformance-<writer>.jsonl` (one file per pytest process, as reports/ does):

    {"type": "conformance_verdict", "run_id": ..., "client": {"name", "version", "binding"}, "rule": "SB-09",
     "status": "conforms" | "deviates" | "not applicable", "detail": ..., "declared": bool,
     "counterexample": <shrunk workload repr, deviations only>, "trace": [<wire requests>, deviations only]}

The step also calls Hypothesis `event(rule, "<client name> <version> <status>")`, so the OpenPBTStats lines the
property reports already hold carry the rule id as their feature and the client and status as its payload.

`python -m conformance.report [RUN_DIR ...]` prints the rule x client matrix of the verdict records under the given
run directories (default: every run under RMQSPEC_REPORTS_DIR): one row per client, labelled "<name> <version>"
and "(reference)" for the client the model is (RocketMQ 4.9.8's Java client), one column per rule; a cell is the
worst status any run gave (deviates, then conforms, then not applicable) with the number of verdicts.
"""

from __future__ import annotations

import argparse
import json
import sys
import threading
from collections import Counter, defaultdict
from pathlib import Path

from hypothesis import currently_in_test_context, event

from conformance.deviations import get_declared
from conformance.predict import JAVA_CLIENT
from reports import run_context

LOCK = threading.Lock()


def get_report_path():
    directory = run_context.get_reports_dir() / run_context.get_run_id()
    return directory / f"conformance-{run_context.get_writer_name()}.jsonl"


def to_record(verdict) -> dict:
    return {"type": "conformance_verdict", "run_id": run_context.get_run_id(), "client": verdict.client,
            "rule": verdict.rule, "status": verdict.status, "detail": verdict.detail,
            "declared": get_declared(verdict.rule, verdict.client_key) is not None,
            "counterexample": verdict.counterexample, "trace": list(verdict.trace)}


def record_verdicts(verdicts) -> None:
    """Mark each verdict as a Hypothesis event and, when reports are on, append its record."""
    for verdict in verdicts:
        if verdict.status != "not applicable":
            if currently_in_test_context():  # a plain test (the smoke test) has no Hypothesis context to mark
                event(verdict.rule, f"{verdict.client['name']} {verdict.client['version']} {verdict.status}")
    if not run_context.is_reporting():
        return
    path = get_report_path()
    path.parent.mkdir(parents=True, exist_ok=True)
    lines = "".join(json.dumps(to_record(v), sort_keys=True) + "\n" for v in verdicts)
    with LOCK, path.open("a", encoding="utf-8") as out:
        out.write(lines)


# A cell shows the worst status any verdict of the rule x client had.
STATUS_ORDER = ("deviates", "conforms", "not applicable")
SHORT = {"deviates": "deviates", "conforms": "conforms", "not applicable": "n/a"}


def get_client_label(client: dict) -> str:
    """"<name> <version>", marked "(reference)" for the client the model is (predict.JAVA_CLIENT)."""
    label = f"{client.get('name')} {client.get('version')}"
    if (client.get("name"), client.get("version")) == (JAVA_CLIENT["name"], JAVA_CLIENT["version"]):
        label += " (reference)"
    return label


def read_verdict_records(run_dirs: list[Path]) -> list[dict]:
    records = []
    for run_dir in run_dirs:
        for path in sorted(run_dir.glob("conformance-*.jsonl")):
            for line in path.read_text(encoding="utf-8").splitlines():
                record = json.loads(line) if line.strip() else {}
                if record.get("type") == "conformance_verdict":
                    records.append(record)
    return records


def compute_matrix(records: list[dict]) -> dict[str, dict[str, Counter]]:
    """client label -> rule -> how many verdicts of each status."""
    matrix: dict[str, dict[str, Counter]] = defaultdict(lambda: defaultdict(Counter))
    for record in records:
        matrix[get_client_label(record["client"])][record["rule"]][record["status"]] += 1
    return matrix


def format_cell(counts: Counter) -> str:
    if not counts:
        return ""
    worst = next(status for status in STATUS_ORDER if counts[status])
    return f"{SHORT[worst]} ({counts[worst]})"


def render_matrix(matrix: dict[str, dict[str, Counter]]) -> str:
    """The rule x client matrix as a Markdown table: a row per client, a column per rule."""
    rules = sorted({rule for by_rule in matrix.values() for rule in by_rule})
    lines = ["| client | " + " | ".join(rules) + " |", "|---|" + "---|" * len(rules)]
    for label in sorted(matrix):
        lines.append(f"| {label} | " + " | ".join(format_cell(matrix[label].get(rule, Counter())) for rule in rules)
                     + " |")
    return "\n".join(lines) + "\n"


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m conformance.report", description="the rule x client matrix")
    parser.add_argument("run_dirs", nargs="*", type=Path, help="run directories (default: every run)")
    args = parser.parse_args(argv)
    run_dirs = args.run_dirs or sorted(p for p in run_context.get_reports_dir().glob("*") if p.is_dir())
    missing = [str(p) for p in run_dirs if not p.is_dir()]
    if missing:
        print(f"no such run directory: {', '.join(missing)}", file=sys.stderr)
        return 2
    records = read_verdict_records(run_dirs)
    if not records:
        print("no conformance verdicts in " + ", ".join(map(str, run_dirs)), file=sys.stderr)
        return 1
    print(render_matrix(compute_matrix(records)), end="")
    return 0


if __name__ == "__main__":
    sys.exit(main())
