"""The rule x backend table of the differential suite (differential/): for every broker rule of the spec, per
backend, whether the run's tests found the backend doing what the rule says (agrees), not (differs, with the
counterexample), or did not exercise it. The differential tests leave one JSON line per (rule, backend, test) in
``<run dir>/differential-rules.ndjson``; the main job's summary gets this table when a run it reads has them.
"""

from __future__ import annotations

import json
from pathlib import Path

from reportformat.escape import to_markdown
from reports.spec_rules import get_spec_rules

RECORDS_NAME = "differential-rules.ndjson"  # not .jsonl: the aggregate reads *.jsonl as Hypothesis reports
# The conformance harness's verdict records of the run (conformance/report.py): the one source of the clients'
# verdicts per backend.
VERDICT_FILES = "conformance-*.jsonl"
BACKENDS = ("model", "rocketmq-4.9.8", "rocketmq-5.3.3")
# The backends a client's conformance run goes to: the client verdicts' columns (a 4.x client runs on the model and
# 4.9.8, a 5.x client on the model and 5.3.3).
CLIENT_BACKENDS = ("model", "rocketmq-4.9.8", "rocketmq-5.3.3")
# The rules a broker decides (what a wire request can observe): the send-back handler, the broker's half of a
# direct send, the store and its delay timer, the broker's offsets, pull answers and queue locks; and of 5.x the
# broker's POP road, the proxy's, FIFO by POP, send-back beside POP and what they guarantee together (chapters 14-19;
# PC-01..PC-03 are the Java POP consumer's own).
BROKER_RULES = {
    *(f"SB-{n:02d}" for n in range(1, 15)), *(f"RS-{n:02d}" for n in range(1, 8)),
    *(f"ST-{n:02d}" for n in range(1, 7)), *(f"DT-{n:02d}" for n in range(1, 10)),
    "OS-05", "PL-04", "LK-01", "LK-02", "RB-04",
    *(f"PO-{n:02d}" for n in range(1, 12)), *(f"IV-{n:02d}" for n in range(1, 9)),
    *(f"PD-{n:02d}" for n in range(1, 7)), *(f"RP-{n:02d}" for n in range(1, 5)),
    *(f"FF-{n:02d}" for n in range(1, 6)), "PC-04", *(f"PG-{n:02d}" for n in range(1, 5)),
}


def read_records(run_dir: Path) -> list[dict]:
    path = run_dir / RECORDS_NAME
    if not path.exists():
        return []
    return [json.loads(line) for line in path.read_text(encoding="utf-8").splitlines() if line.strip()]


def compute_cells(records: list[dict]) -> dict[tuple[str, str], dict]:
    """(rule, backend) -> {"verdict", "tests", "counterexample"}; one differing test makes the cell differ."""
    cells: dict[tuple[str, str], dict] = {}
    for record in records:
        cell = cells.setdefault((record["rule"], record["backend"]),
                                {"verdict": "agrees", "tests": set(), "counterexample": None})
        cell["tests"].add(record["test"].split("::")[-1].split("[")[0])
        if record["verdict"] == "differs":
            cell["verdict"], cell["counterexample"] = "differs", record["counterexample"]
    return cells


def render_cell(cell: dict | None) -> str:
    if cell is None:
        return "not exercised"
    if cell["verdict"] == "differs":
        first = (cell["counterexample"] or "").strip().splitlines()
        return f"**differs**: {to_markdown(first[-1], 160) if first else ''}"
    return "agrees (" + to_markdown(", ".join(sorted(cell["tests"]))) + ")"


def render_table(records: list[dict]) -> str:
    cells = compute_cells(records)
    rules = [r for r in get_spec_rules() if r.rule_id in BROKER_RULES]
    lines = ["| rule | " + " | ".join(BACKENDS) + " |", "|---|" + "---|" * len(BACKENDS)]
    for rule in rules:
        lines.append(f"| {rule.rule_id} {rule.title} | " + " | ".join(render_cell(cells.get((rule.rule_id, b)))
                                                           for b in BACKENDS) + " |")
    extra = sorted({r for r, _ in cells} - BROKER_RULES)
    for name in extra:
        found = " | ".join(render_cell(cells.get((name, b))) for b in BACKENDS)
        lines.append(f"| {to_markdown(name)} | {found} |")
    return "\n".join(lines) + "\n"


def find_newest_records(inputs: list[str]) -> Path | None:
    """The newest run directory with differential records among the local inputs (a run dir or a dir of runs)."""
    found = []
    for given in inputs:
        path = Path(given)
        if "://" in given or not path.is_dir():
            continue
        found += [p for p in (path / RECORDS_NAME, *path.glob(f"*/{RECORDS_NAME}")) if p.is_file()]
    return max(found, key=lambda p: p.stat().st_mtime).parent if found else None


def render_client_table(records: list[dict]) -> str:
    """Per client and rule, the statuses its verdict records give on each backend over the run's workloads
    (conformance/report.py's records, nothing else); a rule whose statuses differ between the backends it ran on
    says so."""
    rows: dict[tuple[str, str], dict] = {}
    for record in records:
        client = f"{record['client']['name']} {record['client']['version']}"
        row = rows.setdefault((client, record["rule"]), {b: set() for b in CLIENT_BACKENDS})
        row[record["backend"]].add(record["status"])
    lines = ["| client | rule | " + " | ".join(CLIENT_BACKENDS) + " | same? |",
             "|---|---|" + "---|" * (len(CLIENT_BACKENDS) + 1)]
    for (client, rule), row in sorted(rows.items()):
        ran = [statuses for statuses in row.values() if statuses]
        same = "yes" if all(statuses == ran[0] for statuses in ran) else "differs"
        statuses = " | ".join(to_markdown(", ".join(sorted(row[b]))) for b in CLIENT_BACKENDS)
        lines.append(f"| {to_markdown(client)} | {to_markdown(rule)} | {statuses} | {same} |")
    return "\n".join(lines) + "\n"


def read_client_records(run_dir: Path) -> list[dict]:
    """The run's conformance verdict records that name a backend of the differential suite (judged or deviating
    verdicts only: a rule a client lacks or no run judges says nothing about a backend)."""
    records = []
    for path in sorted(run_dir.glob(VERDICT_FILES)):
        for line in path.read_text(encoding="utf-8").splitlines():
            record = json.loads(line) if line.strip() else {}
            if record.get("type") == "conformance_verdict" and record.get("backend") in CLIENT_BACKENDS \
                    and record.get("status") not in ("not applicable", "not judged"):
                records.append(record)
    return records


def render_summary_section(run_dir: Path | None) -> list[str]:
    """The summary's rule x backend section (empty when no run read has differential records), with the clients'
    verdicts per backend when the run has them."""
    records = read_records(run_dir) if run_dir is not None else []
    if not records:
        return []
    lines = ["", f"## Broker rules x backend (differential, run {to_markdown(run_dir.name)})", "",
             render_table(records).rstrip("\n")]
    clients = read_client_records(run_dir)
    if clients:
        lines += ["", "### Client verdicts per backend", "", render_client_table(clients).rstrip("\n")]
    return lines
