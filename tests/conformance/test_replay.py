"""The replay command a shrunk failure prints (conformance/suite/replay.py): one real run of rocketmq-client-cpp 1.2.3
on a declared counterexample, and its exit status on a problem (no client)."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

from conformance.checker.deviations import CPP, get_declared
from conformance.runner.clients.cpp import get_unavailable_reason
from conformance.suite import replay
from conformance.suite.full_run import get_counterexamples

ROOT = Path(__file__).resolve().parents[2]
# SB-09 and SY-05's counterexample: one message answered RECONSUME_LATER four times, the client's default maximum.
POISON = 'Workload((MessageSpec("m0", "TagA", 0, ("RECONSUME_LATER",) * 4),)), -1'


@pytest.mark.timeout(120)
@pytest.mark.skipif(get_unavailable_reason() is not None, reason=str(get_unavailable_reason()))
def test_a_declared_counterexample_replays_with_its_declared_causes_and_exits_0():
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    done = subprocess.run([sys.executable, "-m", "conformance.suite.replay", "--client", "cpp", POISON], cwd=ROOT,
                          env=env, capture_output=True, text=True, timeout=110)
    assert done.returncode == 0, done.stdout + done.stderr
    lines = done.stdout.splitlines()
    assert lines[0] == f"cpp on model: {POISON}"
    for rule in get_counterexamples(CPP)[POISON]:
        causes = [cause.name for cause in get_declared(rule, CPP).causes]
        shown = [line for line in lines if line.startswith(f"{rule} deviates (")]
        assert shown and any(cause in shown[0] for cause in causes), (rule, causes, done.stdout)
    assert "UNDECLARED" not in done.stdout
    assert not any(line.startswith("problem:") for line in lines)


def test_a_replay_with_a_problem_prints_it_and_exits_1(monkeypatch, capsys):
    monkeypatch.setattr(replay, "run_case", lambda *_args: None)
    monkeypatch.setattr(replay, "find_problems", lambda _run, _source: ([], ["undeclared deviation of CC-04 ..."]))
    monkeypatch.setitem(replay.CLIENTS, "cpp", (None, lambda: None))
    assert replay.main(["--client", "cpp", POISON]) == 1
    assert "problem: undeclared deviation of CC-04 ..." in capsys.readouterr().out
