"""Bad settings and bad command lines: one line naming what is wrong, before anything runs or is written."""

from __future__ import annotations

import os
import subprocess
import sys

import pytest

from reports.spec_rules import ROOT

BAD_SETTINGS = [
    ("RMQSPEC_VERSION", "9.9", "4.9.8"),
    ("RMQSPEC_MESSAGE_MODEL", "cluster", "broadcasting"),
    ("RMQSPEC_CONSUME_MODE", "ordered", "orderly"),
    ("RMQSPEC_RETRY_PRESET", "loose", "tight"),
    ("RMQSPEC_HYPOTHESIS_PROFILE", "quick", "deep"),
    ("RMQSPEC_REPORTS", "maybe", "yes"),
    ("RMQSPEC_RUN_ID", "2026-01-21T19:56:01", "letters, digits"),
    ("RMQSPEC_HYPOTHESIS_SEED", "seven", "integer"),
    ("RMQSPEC_JAVA_CLIENT_CLASSPATH", "/no/rocketmq-client.jar", "DefaultMQPushConsumer"),
]


def run(command: list[str], tmp_path, **environ) -> subprocess.CompletedProcess:
    env = {key: value for key, value in os.environ.items() if not key.startswith(("RMQSPEC_", "PYTEST_XDIST"))}
    env |= {"RMQSPEC_REPORTS_DIR": str(tmp_path / "runs"), **environ}
    return subprocess.run(command, cwd=ROOT, env=env, capture_output=True, text=True, timeout=120, check=False)


def get_lines(done: subprocess.CompletedProcess) -> list[str]:
    return [line for line in (done.stdout + done.stderr).splitlines() if line.strip()]


@pytest.mark.parametrize("variable, value, valid", BAD_SETTINGS, ids=[v for v, _, _ in BAD_SETTINGS])
def test_a_bad_setting_stops_the_session_with_one_line(tmp_path, variable, value, valid):
    """Even with -q and a module that builds no Config (tests/test_readme.py), at session start."""
    command = [sys.executable, "-m", "pytest", "-q", "-p", "no:xdist", "-p", "no:cacheprovider", "tests/test_readme.py"]
    done = run(command, tmp_path, **{variable: value})
    assert done.returncode == 4, done.stdout + done.stderr
    (line,) = get_lines(done)
    assert variable in line and repr(value) in line and valid in line
    assert not (tmp_path / "runs").exists()


def test_the_main_job_stops_before_aggregating_on_a_bad_setting(tmp_path):
    done = run([sys.executable, "-m", "reports"], tmp_path, RMQSPEC_CONSUME_MODE="ordered")
    assert done.returncode == 4
    assert "RMQSPEC_CONSUME_MODE='ordered'" in done.stdout + done.stderr
    assert "Spark aggregate" not in done.stdout and "Conformance report" not in done.stdout
    assert not (tmp_path / "runs").exists()


def test_a_bad_run_id_is_refused_by_the_main_job_with_one_line(tmp_path):
    done = run([sys.executable, "-m", "reports"], tmp_path, RMQSPEC_RUN_ID="2026-01-21 19:56")
    assert done.returncode == 2
    (line,) = get_lines(done)
    assert "RMQSPEC_RUN_ID='2026-01-21 19:56'" in line


@pytest.mark.parametrize("command", [["--help"], ["run", "--help"], ["aggregate", "--help"]])
def test_help_is_the_jobs_own_and_runs_nothing(tmp_path, command):
    done = run([sys.executable, "-m", "reports", *command], tmp_path)
    assert done.returncode == 0 and "exit codes:" in done.stdout and "pytest" not in done.stdout.split("\n")[0]
    assert "Conformance report" not in done.stdout and not (tmp_path / "runs").exists()


def test_the_aggregates_help_shows_its_defaults(tmp_path):
    done = run([sys.executable, "-m", "reports", "aggregate", "--help"], tmp_path)
    assert "runs shown in the trend (default: 20)" in " ".join(done.stdout.split())


@pytest.mark.parametrize(
    "command, named",
    [
        (["help"], "invalid choice: 'help'"),
        (["aggregate", "--last", "-1"], "--last: '-1'"),
        (["aggregate", "--last", "0"], "--last: '0'"),
        (["aggregate", "--bogus"], "--bogus"),
        (["--bogus"], "--bogus"),
        (["aggregate", "--", "-k", "x"], "only `run` takes them"),
        (["aggregate", "--lock-timeout", "-5"], "--lock-timeout: '-5'"),
        (["aggregate", "--lock-timeout", "nan"], "--lock-timeout: 'nan'"),
        (["aggregate", "/does/not/exist"], "input path does not exist: /does/not/exist"),
        (["aggregate", ".", "--tables", "/does/not/tables"], "--tables='/does/not/tables'"),
    ],
)
def test_a_bad_command_line_is_refused_with_one_line_before_anything_is_written(tmp_path, command, named):
    out = tmp_path / "out"
    extra = ["--out", str(out), "--warehouse", str(tmp_path / "warehouse")] if command[0] == "aggregate" else []
    done = run([sys.executable, "-m", "reports", *command, *extra], tmp_path)
    assert done.returncode == 2
    (line,) = get_lines(done)
    assert named in line
    assert not any(tmp_path.iterdir())


@pytest.mark.parametrize("below", ["a-file/runs", "no/such/parent/runs"])
def test_a_reports_dir_that_cannot_be_one_stops_the_session_with_one_line(tmp_path, below):
    """Below a file (pytest said INTERNALERROR in ~177 lines) or under a directory that does not exist (it was
    created silently): one line, exit 4, nothing created."""
    (tmp_path / "a-file").write_text("x")
    command = [sys.executable, "-m", "pytest", "-q", "-p", "no:xdist", "tests/test_readme.py"]
    done = run(command, tmp_path, RMQSPEC_REPORTS="1", RMQSPEC_REPORTS_DIR=str(tmp_path / below))
    assert done.returncode == 4, done.stdout + done.stderr
    (line,) = get_lines(done)
    assert f"RMQSPEC_REPORTS_DIR={str(tmp_path / below)!r}" in line and "a directory" in line
    assert sorted(p.name for p in tmp_path.iterdir()) == ["a-file"]


def test_the_main_job_refuses_a_reports_dir_below_a_file_before_the_suite(tmp_path):
    (tmp_path / "a-file").write_text("x")
    done = run([sys.executable, "-m", "reports"], tmp_path, RMQSPEC_REPORTS_DIR=str(tmp_path / "a-file" / "runs"))
    assert done.returncode == 2
    (line,) = get_lines(done)
    assert "RMQSPEC_REPORTS_DIR=" in line and "property suite" not in done.stdout
