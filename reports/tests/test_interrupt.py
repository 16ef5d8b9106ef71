"""Ctrl-C anywhere in the main job: one line, every child process stopped within 2 s, the run marked interrupted
in its reports and in the summary."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time

from reportformat.lines import RUN_INTERRUPTED, make_run_line
from reports import job
from reports.__main__ import INTERRUPTED_FILE
from reports.render_markdown import render_summary
from reports.spec_rules import ROOT
from reports.tests.sample import BASELINE, RULES, case, meta, write_lines
from reports.tests.test_cli import get_lines

PARENT = """
import subprocess, sys, time
from reports.children import Interrupted, run_child
# A child that ignores SIGINT and starts a grandchild (an adapter) that ignores it too.
code = "import os, signal, subprocess, sys, time; signal.signal(signal.SIGINT, signal.SIG_IGN); " \\
       "child = subprocess.Popen([sys.executable, '-c', 'import signal, time; " \\
       "signal.signal(signal.SIGINT, signal.SIG_IGN); time.sleep(60)']); print(child.pid, flush=True); time.sleep(60)"
try:
    run_child([sys.executable, "-c", code])
except Interrupted:
    print("interrupted", flush=True)
"""


def is_running(pid: int) -> bool:
    try:
        with open(f"/proc/{pid}/stat") as stat:
            return stat.read().split()[2] != "Z"
    except FileNotFoundError:
        return False


def test_ctrl_c_stops_the_childs_whole_group_within_two_seconds():
    parent = subprocess.Popen([sys.executable, "-c", PARENT], cwd=ROOT, stdout=subprocess.PIPE, text=True,
                              env={**os.environ, "PYTHONPATH": str(ROOT)})
    grandchild = int(parent.stdout.readline())
    assert is_running(grandchild)
    parent.send_signal(signal.SIGINT)
    started = time.monotonic()
    assert parent.stdout.readline().strip() == "interrupted"
    parent.wait(timeout=10)
    assert time.monotonic() - started < 2.5  # the 2 s of the job, and this test's own reading
    assert not is_running(grandchild)


def test_ctrl_c_in_the_suite_is_one_line_and_marks_the_run_interrupted(tmp_path):
    env = {k: v for k, v in os.environ.items() if not k.startswith(("RMQSPEC_", "PYTEST_XDIST"))}
    env |= {"RMQSPEC_REPORTS_DIR": str(tmp_path / "runs"), "RMQSPEC_RUN_ID": "i1", "PYTHONUNBUFFERED": "1"}
    command = [sys.executable, "-m", "reports", "run", "--", "-n", "1", "-k", "orderly", "-p", "no:cacheprovider"]
    job = subprocess.Popen(command, cwd=ROOT, env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    deadline = time.monotonic() + 120
    while not list((tmp_path / "runs" / "i1").glob("local-gw*.jsonl")) and time.monotonic() < deadline:
        time.sleep(0.2)
    time.sleep(1.0)
    job.send_signal(signal.SIGINT)
    out, err = job.communicate(timeout=30)
    assert job.returncode == 130, out + err
    assert get_lines(subprocess.CompletedProcess([], 0, "", err)) == [
        "main job: interrupted (Ctrl-C) in the property suite; run i1 is marked interrupted; every child process "
        "stopped"
    ]
    (marker,) = [json.loads(line) for line in (tmp_path / "runs" / "i1" / "interrupted-main.jsonl").open()]
    assert (marker["title"], marker["content"]["interrupted"], marker["step"]) == ("run interrupted", True,
                                                                                  "the property suite")
    assert "Traceback" not in out + err and "KeyboardInterrupt" not in out + err


def test_the_summary_names_an_interrupted_run(spark, tmp_path):
    run = tmp_path / "runs" / "i2"
    run.mkdir(parents=True)
    write_lines(run / "local-gw0.jsonl", [meta("run started", "i2", "local-gw0", BASELINE),
                                          case("local-gw0", "p.py::t", "passed", ["AA-01"], 0.1) | {"run_id": "i2"}])
    marker = {"run_id": "i2", "writer": "interrupted-main", "finished_at": 5.0, "interrupted": True}
    write_lines(run / INTERRUPTED_FILE, [make_run_line(RUN_INTERRUPTED, marker, 5.0)])
    job.ingest(spark, [str(tmp_path / "runs")], str(tmp_path / "warehouse"))
    results = job.aggregate(spark, str(tmp_path / "warehouse"), str(tmp_path / "tables"), last=5, rules=RULES)
    assert results.get_headline()["interrupted_runs"] == ["i2"] and results.trend[0]["interrupted"] is True
    summary = render_summary(results, {})
    assert "1 interrupted run ·" in summary and "- interrupted runs (Ctrl-C or a killed job" in summary
    assert sum(results.quarantine_by_reason.values()) == 0
