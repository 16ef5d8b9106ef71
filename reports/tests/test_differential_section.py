"""The summary's rule x backend section: present exactly when a run read has differential records, one row per
broker rule of the spec, a differing cell showing its counterexample, the newest run's records chosen."""

from __future__ import annotations

import json
import os

from reports.differential import RECORDS_NAME, find_newest_records, render_summary_section
from reports.render_markdown import render_summary
from reports.tests.test_summary import make_results


def write_records(run_dir, records) -> None:
    run_dir.mkdir(parents=True)
    (run_dir / RECORDS_NAME).write_text("".join(json.dumps(r) + "\n" for r in records), encoding="utf-8")


def record(rule: str, backend: str, verdict: str = "agrees", counterexample: str | None = None) -> dict:
    return {"rule": rule, "backend": backend, "test": f"differential/test_x.py::test_{rule}[{backend}]",
            "verdict": verdict, "counterexample": counterexample}


def test_section_lists_every_broker_rule_per_backend(tmp_path):
    write_records(tmp_path / "run-1", [record("SB-01", "rocketmq-4.9.8"), record("SB-01", "model"),
                                       record("PL-04", "model", "differs", "AssertionError\nstep 3: 16 != 0")])
    text = "\n".join(render_summary_section(find_newest_records([str(tmp_path)])))
    row = {line.split(" ", 2)[1]: line for line in text.splitlines() if line.startswith("| ") and "-" in line[2:8]}
    assert "agrees (`test_SB-01`)" in row["SB-01"] and row["SB-01"].count("agrees") == 2
    assert "**differs**: step 3: 16 != 0" in row["PL-04"]
    assert row["SB-02"].count("not exercised") == 2


def test_newest_run_wins_and_no_records_no_section(tmp_path):
    write_records(tmp_path / "old", [record("SB-01", "model", "differs", "old")])
    write_records(tmp_path / "new", [record("SB-01", "model")])
    os.utime(tmp_path / "old" / RECORDS_NAME, (1, 1))
    assert find_newest_records([str(tmp_path)]).name == "new"
    assert find_newest_records([str(tmp_path / "missing")]) is None
    assert render_summary_section(None) == []
    summary = make_results([])
    assert "Broker rules x backend" not in render_summary(summary, {})
    summary.differential_run = tmp_path / "new"
    assert "## Broker rules x backend (differential, run new)" in render_summary(summary, {})
