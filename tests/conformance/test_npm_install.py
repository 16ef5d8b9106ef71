"""Installing a pinned npm client (conformance/runner/clients/node.py): a registry it cannot reach is tried again
within the install's time limit, and a failed install is not repeated by every test of the process."""

from __future__ import annotations

import subprocess
from pathlib import Path

import pytest

from conformance.runner.clients import node

UNREACHABLE = "npm error code EAI_AGAIN\nnpm error request to https://registry.npmjs.org/ylru failed"


@pytest.fixture
def npm(monkeypatch, tmp_path):
    """A fake `npm ci` answering from `answers` in turn, recording each call; no real wait."""
    calls: list[list[str]] = []
    answers: list[tuple[int, str]] = []
    waits: list[float] = []

    def run(argv, **kwargs):
        calls.append(argv)
        code, stderr = answers.pop(0)
        if code == 0:
            make_installed(tmp_path)
        return subprocess.CompletedProcess(argv, code, "", stderr)

    monkeypatch.setattr(node.shutil, "which", lambda name: f"/usr/bin/{name}")
    monkeypatch.setattr(node.subprocess, "run", run)
    monkeypatch.setattr(node.time, "sleep", waits.append)
    monkeypatch.setattr(node, "_FAILED_INSTALLS", {})
    (tmp_path / "package-lock.json").write_text(
        '{"packages": {"": {}, "node_modules/pkg": {"version": "1.0.0"}}}')
    return calls, answers, waits, tmp_path


def make_installed(package_dir: Path) -> None:
    (package_dir / "node_modules" / "pkg").mkdir(parents=True, exist_ok=True)
    (package_dir / "node_modules" / "pkg" / "package.json").write_text('{"version": "1.0.0"}')
    (package_dir / "node_modules" / ".package-lock.json").write_text(
        '{"packages": {"node_modules/pkg": {"version": "1.0.0"}}}')


def test_a_registry_out_of_reach_for_a_moment_is_tried_again(npm):
    calls, answers, waits, package_dir = npm
    answers.extend([(1, UNREACHABLE), (0, "")])
    assert node.install_client(package_dir=package_dir, package="pkg") is None
    assert len(calls) == 2 and waits == [node.NETWORK_RETRY_WAITS_S[0]]
    assert "--prefer-offline" in calls[0]


def test_a_registry_out_of_reach_throughout_fails_after_the_waits(npm):
    calls, answers, waits, package_dir = npm
    answers.extend([(1, UNREACHABLE)] * 3)
    reason = node.install_client(package_dir=package_dir, package="pkg")
    assert reason.startswith("npm ci failed (1)") and "EAI_AGAIN" in reason
    assert len(calls) == 3 and waits == list(node.NETWORK_RETRY_WAITS_S)


def test_a_failure_that_is_not_the_network_is_not_tried_again(npm):
    calls, answers, waits, package_dir = npm
    answers.append((1, "npm error code EUSAGE\nnpm error The package-lock.json is out of sync"))
    assert "EUSAGE" in node.install_client(package_dir=package_dir, package="pkg")
    assert len(calls) == 1 and waits == []


def test_a_wait_past_the_time_limit_is_not_taken(npm):
    calls, answers, waits, package_dir = npm
    answers.extend([(1, UNREACHABLE)] * 3)
    assert "EAI_AGAIN" in node.install_client(timeout_s=10, package_dir=package_dir, package="pkg")
    assert len(calls) == 1 and waits == []


def test_the_next_call_in_the_process_answers_with_the_first_failure_at_once(npm):
    calls, answers, waits, package_dir = npm
    answers.extend([(1, UNREACHABLE)] * 3)
    first = node.install_client(package_dir=package_dir, package="pkg")
    second = node.install_client(package_dir=package_dir, package="pkg")
    assert len(calls) == 3
    assert second.startswith(first) and "not tried again" in second


def test_npm_that_does_not_finish_in_time_is_a_reason_not_an_exception(npm, monkeypatch):
    calls, answers, waits, package_dir = npm

    def run(argv, **kwargs):
        raise subprocess.TimeoutExpired(argv, kwargs["timeout"])

    monkeypatch.setattr(node.subprocess, "run", run)
    assert node.install_client(timeout_s=7, package_dir=package_dir, package="pkg") == \
        "npm ci did not finish within 7 s"


def test_an_installed_client_runs_no_npm(npm):
    calls, answers, waits, package_dir = npm
    make_installed(package_dir)
    assert node.install_client(package_dir=package_dir, package="pkg") is None
    assert calls == []
