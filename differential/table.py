"""The rule x backend table of a run: for every broker rule of the spec, per backend, whether the run's tests
found the backend doing what the rule says (agrees), not (differs, with the counterexample), or did not exercise
it. Written next to the run's reports as ``differential-rules.md``.

Run: python -m differential.table [RUN_DIR]   (default: the newest run under the reports directory)
"""

from __future__ import annotations

import json
import sys
from pathlib import Path

from differential.rules import RECORDS_NAME
from reports.run_context import get_reports_dir
from reports.spec_rules import get_spec_rules

BACKENDS = ("model", "rocketmq-4.9.8")
# The rules a broker decides (what a wire request can observe): the send-back handler, the broker's half of a
# direct send, the store and its delay timer, the broker's offsets, pull answers and queue locks.
BROKER_RULES = {
    *(f"SB-{n:02d}" for n in range(1, 15)), *(f"RS-{n:02d}" for n in range(1, 8)),
    *(f"ST-{n:02d}" for n in range(1, 7)), *(f"DT-{n:02d}" for n in range(1, 10)),
    "OS-05", "PL-04", "LK-01", "LK-02", "RB-04",
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
        return f"**differs**: {first[-1][:160] if first else ''}"
    return "agrees (" + ", ".join(f"`{t}`" for t in sorted(cell["tests"])) + ")"


def render_table(records: list[dict]) -> str:
    cells = compute_cells(records)
    rules = [r for r in get_spec_rules() if r.rule_id in BROKER_RULES]
    lines = ["| rule | " + " | ".join(BACKENDS) + " |", "|---|" + "---|" * len(BACKENDS)]
    for rule in rules:
        lines.append(f"| {rule.rule_id} {rule.title} | " + " | ".join(render_cell(cells.get((rule.rule_id, b)))
                                                           for b in BACKENDS) + " |")
    extra = sorted({r for r, _ in cells} - BROKER_RULES)
    for name in extra:
        lines.append(f"| {name} | " + " | ".join(render_cell(cells.get((name, b))) for b in BACKENDS) + " |")
    return "\n".join(lines) + "\n"


def get_newest_run(reports_dir: Path) -> Path:
    runs = sorted((p for p in reports_dir.glob(f"*/{RECORDS_NAME}")), key=lambda p: p.stat().st_mtime)
    if not runs:
        raise SystemExit(f"no {RECORDS_NAME} under {reports_dir}")
    return runs[-1].parent


def main(argv: list[str]) -> None:
    run_dir = Path(argv[0]) if argv else get_newest_run(get_reports_dir())
    table = render_table(read_records(run_dir))
    (run_dir / "differential-rules.md").write_text(table, encoding="utf-8")
    print(table)


if __name__ == "__main__":
    main(sys.argv[1:])
