"""CI's lanes (.ci/lane): every env runs, each within its time limit, and the lane names the ones that failed."""

import os
import subprocess
import time

from reports.spec_rules import ROOT

FAKE_TOX = """#!/usr/bin/env bash
# A stand-in for `tox run -e ENV`: ENV says what it does.
case $3 in
  ok*|conformance-cpp) echo "ran $3 seed=${RMQSPEC_HYPOTHESIS_SEED:-none}" ;;
  fails) echo "ran fails"; exit 1 ;;
  hangs) exec sleep 600 ;;
esac
"""


def run_lane(tmp_path, *envs, limit="2"):
    tox = tmp_path / "tox"
    tox.write_text(FAKE_TOX)
    tox.chmod(0o755)
    env = {**os.environ, "TOX": str(tox), "RMQSPEC_CI_ENV_LIMIT_S": limit}
    started = time.monotonic()
    done = subprocess.run([str(ROOT / ".ci" / "lane"), "L", *envs], capture_output=True, text=True, env=env,
                          timeout=60)
    return done, time.monotonic() - started


def test_a_hanging_env_is_stopped_at_its_limit_and_the_lane_goes_on(tmp_path):
    done, took_s = run_lane(tmp_path, "ok-1", "hangs", "fails", "ok-2")
    lines = done.stdout.splitlines()
    assert done.returncode == 1 and took_s < 30
    assert "[L] == hangs stopped at its time limit (2 s, RMQSPEC_CI_ENV_LIMIT_S)" in lines
    assert "[L] ran ok-2 seed=none" in lines
    assert lines[-1] == "[L] == failed: hangs fails"


def test_a_lane_whose_envs_all_pass_passes_and_cpp_has_its_seed(tmp_path):
    done, _ = run_lane(tmp_path, "ok-1", "conformance-cpp")
    assert done.returncode == 0 and "failed" not in done.stdout
    assert done.stdout.splitlines() == ["[L] == tox run -e ok-1", "[L] ran ok-1 seed=none",
                                        "[L] == tox run -e conformance-cpp", "[L] ran conformance-cpp seed=20261127"]


def test_a_bad_limit_is_one_line_naming_the_variable(tmp_path):
    done, _ = run_lane(tmp_path, "ok-1", limit="soon")
    assert done.returncode == 2
    assert done.stdout == "RMQSPEC_CI_ENV_LIMIT_S=soon: expected a whole number of seconds > 0\n"
