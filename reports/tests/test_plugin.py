"""Report files from real pytest runs: one file per process, run metadata, seeded runs, compact passing cases."""

from __future__ import annotations

import json
import os
import subprocess
import sys

import pytest

from properties.expected import expect_violation
from reportformat.lines import compact_observation, count_steps
from reports.plugin import REFUTATION, get_expected_violation
from reports.spec_rules import ROOT
from runenv.run_context import get_seed

SUITE = """
from hypothesis import event, given, strategies as st

@given(st.integers(0, 10))
def test_passes(n):
    event("AA-01")

@given(st.integers(0, 1000))
def test_fails(n):
    event("AA-02")
    assert n < 500

def test_refutes():
    from hypothesis import find
    assert find(st.integers(0, 1000), lambda n: n >= 500) == 500
"""


@pytest.fixture(scope="module")
def report_files(tmp_path_factory) -> dict[str, list[dict]]:
    """One real run of a small suite on 2 xdist workers with reports on: file name -> parsed lines."""
    root = tmp_path_factory.mktemp("suite")
    (root / "conftest.py").write_text(
        "def pytest_configure(config):\n    from reports.plugin import register\n    register(config)\n"
    )
    (root / "test_suite.py").write_text(SUITE)
    env = {**os.environ, "PYTHONPATH": str(ROOT), "RMQSPEC_REPORTS": "1", "RMQSPEC_REPORTS_DIR": str(root / "out")}
    env |= {"RMQSPEC_RUN_ID": "run1", "RMQSPEC_HYPOTHESIS_SEED": "1234"}
    env.pop("PYTEST_XDIST_WORKER", None)  # set when this test itself runs on a worker
    command = [sys.executable, "-m", "pytest", "-p", "no:cacheprovider", "-n", "2", "-q", "test_suite.py"]
    done = subprocess.run(command, cwd=root, env=env, capture_output=True, text=True, check=False)
    assert done.returncode == 1 and "1 failed, 2 passed" in done.stdout, done.stdout + done.stderr
    files = sorted((root / "out" / "run1").glob("*.jsonl"))
    return {f.name: [json.loads(line) for line in f.read_text().splitlines()] for f in files}


def test_each_xdist_worker_writes_its_own_file_with_run_metadata(report_files):
    assert sorted(report_files) == ["local-gw0.jsonl", "local-gw1.jsonl"]
    for name, lines in report_files.items():
        first, last = lines[0], lines[-1]
        assert (first["title"], last["title"]) == ("run started", "run finished")
        run = first["content"]
        assert (run["run_id"], run["writer"], run["seed"], run["version"]) == ("run1", name[:-6], "1234", "4.9.8")
        assert run["git_commit"] and run["started_at"] <= last["content"]["finished_at"]
        assert {line["writer"] for line in lines} == {name[:-6]}


def test_passing_cases_are_compact_and_the_failure_keeps_its_counterexample(report_files):
    cases = [line for lines in report_files.values() for line in lines if line["type"] == "test_case"]
    assert all(c["representation"] is None for c in cases if c["status"] == "passed")
    failed = [c for c in cases if c["status"] == "failed" and c["nodeid"].endswith("test_fails")]
    assert failed and failed[-1]["representation"] == "test_fails(\n    n=500,\n)"
    assert {c["nodeid"].split("::")[1] for c in cases} == {"test_passes", "test_fails", "test_refutes"}


def test_a_passing_refutation_marks_its_counterexample_expected(report_files):
    cases = [line for lines in report_files.values() for line in lines if line["type"] == "test_case"]
    found = [c for c in cases if c["status"] == "failed" and c["nodeid"].endswith("test_refutes")]
    assert found and {c["expected_violation"] for c in found} == {REFUTATION}
    assert {c["expected_violation"] for c in cases if c["nodeid"].endswith("test_fails")} == {None}
    assert {rule for c in cases for rule in c["features"]} == {"AA-01", "AA-02"}


def test_runs_without_a_given_seed_explore_different_cases():
    assert get_seed({}) != get_seed({}) and get_seed({"RMQSPEC_HYPOTHESIS_SEED": "7"}) == 7


@pytest.mark.parametrize(
    "representation, timing, steps",
    [
        (
            "state = M()\nstate.inv()\nstate.go(n=1)\nstate.inv()\nstate.go(n=2)\nstate.teardown()",
            {"execute:rule:go": 0.1},
            2,
        ),
        ("test_x(n=1)", {"execute:test": 0.1}, None),
    ],
)
def test_steps_count_rule_calls_only(representation, timing, steps):
    assert count_steps(representation, timing) == steps


def test_statistics_are_dropped():
    assert compact_observation({"type": "info", "title": "Hypothesis Statistics"}, {}) is None


@pytest.mark.parametrize("violated, expected", [(True, "apache/rocketmq#6163: claim"), (False, None)])
def test_only_an_applying_expected_violation_is_recorded(pytester, violated, expected):
    def check():
        pass

    marked = expect_violation(check, "apache/rocketmq#6163", "claim", when=lambda config: violated)
    item = pytest.Function.from_parent(pytester.getmodulecol("def test_x(): pass"), name="check", callobj=marked)
    assert get_expected_violation(item) == expected


def test_a_passing_case_keeps_only_what_the_aggregate_reads():
    case = {
        "type": "test_case",
        "status": "passed",
        "representation": "test_x(n=1)",
        "arguments": {"n": 1},
        "features": {"AA-01": ""},
        "timing": {"execute:test": 0.1},
        "metadata": {"sys.argv": ["-c"] * 50, "phase": "generate", "data_status": 2},
    }
    line = compact_observation(case, {"run_id": "r"})
    assert (line["representation"], line["arguments"], line["features"]) == (None, {}, {"AA-01": ""})
    assert line["metadata"] == {"data_status": 2, "phase": "generate", "reproduction_decorator": None}
    assert compact_observation(case | {"status": "failed"}, {})["metadata"] == case["metadata"]
