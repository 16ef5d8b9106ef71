"""Report files from real pytest runs: one file per process, run metadata, seeded runs, compact passing cases."""

from __future__ import annotations

import json

import pytest

from reports.schema import compact_observation, count_steps
from reports.spec_rules import ROOT

SUITE = """
from hypothesis import event, given, strategies as st

@given(st.integers(0, 10))
def test_passes(n):
    event("AA-01")

@given(st.integers(0, 1000))
def test_fails(n):
    event("AA-02")
    assert n < 500
"""


def run_suite(pytester, monkeypatch, *args: str, seed: str = "") -> dict[str, list[dict]]:
    reports = pytester.path / "out"
    for name, value in {"RMQSPEC_REPORTS": "1", "RMQSPEC_REPORTS_DIR": str(reports), "RMQSPEC_RUN_ID": "run1"}.items():
        monkeypatch.setenv(name, value)
    monkeypatch.setenv("RMQSPEC_HYPOTHESIS_SEED", seed)
    monkeypatch.setenv("PYTHONPATH", str(ROOT))
    monkeypatch.delenv("PYTEST_XDIST_WORKER", raising=False)  # set when this test itself runs on a worker
    pytester.makeconftest(
        "def pytest_configure(config):\n    from reports.plugin import register\n    register(config)\n"
    )
    pytester.makepyfile(test_suite=SUITE)
    pytester.runpytest_subprocess("-p", "no:cacheprovider", *args).assert_outcomes(passed=1, failed=1)
    files = sorted((reports / "run1").glob("*.jsonl"))
    return {f.name: [json.loads(line) for line in f.read_text().splitlines()] for f in files}


def test_each_xdist_worker_writes_its_own_file_with_run_metadata(pytester, monkeypatch):
    files = run_suite(pytester, monkeypatch, "-n", "2", seed="1234")
    assert sorted(files) == ["local-gw0.jsonl", "local-gw1.jsonl"]
    for name, lines in files.items():
        first, last = lines[0], lines[-1]
        assert (first["title"], last["title"]) == ("run started", "run finished")
        run = first["content"]
        assert (run["run_id"], run["writer"], run["seed"], run["version"]) == ("run1", name[:-6], "1234", "4.9.8")
        assert run["git_commit"] and run["started_at"] <= last["content"]["finished_at"]
        assert {line["writer"] for line in lines} == {name[:-6]}


def test_passing_cases_are_compact_and_the_failure_keeps_its_counterexample(pytester, monkeypatch):
    (lines,) = run_suite(pytester, monkeypatch).values()
    cases = [line for line in lines if line["type"] == "test_case"]
    assert all(c["representation"] is None for c in cases if c["status"] == "passed")
    failed = [c for c in cases if c["status"] == "failed"]
    assert failed and failed[-1]["representation"] == "test_fails(\n    n=500,\n)"
    assert {c["nodeid"].split("::")[1] for c in cases} == {"test_passes", "test_fails"}
    assert {rule for c in cases for rule in c["features"]} == {"AA-01", "AA-02"}


def test_runs_without_a_given_seed_explore_different_cases(pytester, monkeypatch):
    seeds = {run_suite(pytester, monkeypatch)["local-main.jsonl"][0]["content"]["seed"] for _ in range(2)}
    assert len(seeds) == 2


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
    from properties.expected import expect_violation
    from reports.plugin import get_expected_violation

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
