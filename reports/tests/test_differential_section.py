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
    assert "agrees (test\\_SB-01)" in row["SB-01"] and row["SB-01"].count("agrees") == 2
    assert "**differs**: step 3: 16 != 0" in row["PL-04"]
    assert row["SB-02"].count("not exercised") == 3  # model, rocketmq-4.9.8, rocketmq-5.3.3


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


def verdict_record(rule: str, backend: str, status: str, name: str = "rocketmq-client-cpp") -> dict:
    return {"type": "conformance_verdict", "client": {"name": name, "version": "1.2.3"}, "rule": rule,
            "status": status, "backend": backend, "detail": "", "cause": "", "keys": []}


def test_client_verdicts_per_backend_are_the_runs_verdict_records_and_nothing_else(tmp_path):
    """The clients' table is read from the conformance verdict records alone: a loss the checker recorded as a
    deviation on the real broker shows as one, a rule whose statuses differ between the backends says so, and a
    record without a differential backend (a smoke run) or a rule not judged adds no row."""
    write_records(tmp_path / "run", [record("SB-01", "model")])
    records = [verdict_record("SY-10", "rocketmq-4.9.8", "deviates"), verdict_record("SY-10", "model", "conforms"),
               verdict_record("SB-09", "model", "deviates"), verdict_record("SB-09", "rocketmq-4.9.8", "deviates"),
               verdict_record("CC-05", "", "deviates"), verdict_record("CT-01", "model", "not applicable")]
    (tmp_path / "run" / "conformance-main.jsonl").write_text("".join(json.dumps(r) + "\n" for r in records))
    text = "\n".join(render_summary_section(tmp_path / "run"))
    rows = {line.split(" | ")[1]: line for line in text.splitlines() if line.startswith("| rocketmq-client-cpp")}
    assert rows["SY-10"] == "| rocketmq-client-cpp 1.2.3 | SY-10 | conforms | deviates |  | differs |"
    assert rows["SB-09"] == "| rocketmq-client-cpp 1.2.3 | SB-09 | deviates | deviates |  | yes |"
    assert set(rows) == {"SY-10", "SB-09"}


def test_a_5x_clients_verdicts_compare_the_model_with_rocketmq_5(tmp_path):
    """A 5.x client runs on the model-backed server and RocketMQ 5.3.3: its row compares those two columns."""
    write_records(tmp_path / "run", [record("SB-01", "model")])
    records = [verdict_record("RP-03", "model", "deviates", "rocketmq-python-client"),
               verdict_record("RP-03", "rocketmq-5.3.3", "deviates", "rocketmq-python-client"),
               verdict_record("PG-02", "model", "conforms", "rocketmq-python-client"),
               verdict_record("PG-02", "rocketmq-5.3.3", "deviates", "rocketmq-python-client")]
    (tmp_path / "run" / "conformance-main.jsonl").write_text("".join(json.dumps(r) + "\n" for r in records))
    text = "\n".join(render_summary_section(tmp_path / "run"))
    rows = {line.split(" | ")[1]: line for line in text.splitlines() if line.startswith("| rocketmq-python-client")}
    assert rows["RP-03"] == "| rocketmq-python-client 1.2.3 | RP-03 | deviates |  | deviates | yes |"
    assert rows["PG-02"] == "| rocketmq-python-client 1.2.3 | PG-02 | conforms |  | deviates | differs |"
