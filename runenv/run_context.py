"""Who, what and where of one run: run id, git commit, tox env, suite configuration, Hypothesis profile and seed.

The switch and locations (all environment variables, so tox envs, xdist workers and CI behave alike):

- ``RMQSPEC_REPORTS=1`` turns reports on (``python -m reports`` sets it);
- ``RMQSPEC_REPORTS_DIR`` is where run directories go (default ``reports/runs``; git-ignored);
- ``RMQSPEC_RUN_ID`` names the run (default: UTC time + process id); tox sets one id for all its envs;
- ``RMQSPEC_HYPOTHESIS_SEED`` replays a recorded seed (default: a fresh seed per run, so successive CI runs
  explore different cases even though Hypothesis' own ``ci`` profile derandomizes);
- ``RMQSPEC_BACKEND`` names the server the harness runs against (BACKENDS; default ``model``).
"""

from __future__ import annotations

import os
import re
import secrets
import subprocess
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent

DEFAULT_REPORTS_DIR = ROOT / "reports" / "runs"
REPORTS_ON, REPORTS_OFF = ("1", "true", "yes"), ("", "0", "false", "no")
# A run id names a directory and a Parquet partition (run_id=<id>): characters that a path or Spark's partition
# values would escape (space, ':', '=', '%', '/', ...) would make the run's files and rows disagree on its name.
RUN_ID = re.compile(r"[A-Za-z0-9][A-Za-z0-9._-]{0,99}")
RUN_ID_RULE = "letters, digits, '.', '_' and '-' (up to 100, starting with a letter or digit), e.g. 20260121T195601Z-1"
# The servers the harness can run against (conformance/runner/backends/): the model-backed server, RocketMQ 4.9.8's
# broker, RocketMQ 5.3.3's proxy with its broker (the POP probes, differential/test_pop_*.py).
BACKENDS = ("model", "rocketmq-4.9.8", "rocketmq-5.3.3")
# The configuration variables of the suite (properties/suite.py checks their values) with their defaults.
CONFIGURATION_VARIABLES = {
    "version": ("RMQSPEC_VERSION", "4.9.8"),
    "message_model": ("RMQSPEC_MESSAGE_MODEL", "clustering"),
    "consume_mode": ("RMQSPEC_CONSUME_MODE", "concurrently"),
    "retry_preset": ("RMQSPEC_RETRY_PRESET", "default"),
}


class SettingError(ValueError):
    """A bad RMQSPEC_* value; its message is one line naming the variable, the value and the valid values."""

    def __init__(self, variable: str, value: str, valid: str) -> None:
        super().__init__(f"{variable}={value!r} is not valid: expected {valid}")


def check_environment(environ=os.environ) -> None:
    """The report settings of a run (reports flag, run id, seed); SettingError on the first bad one."""
    flag = environ.get("RMQSPEC_REPORTS", "")
    if flag.lower() not in REPORTS_ON + REPORTS_OFF:
        raise SettingError("RMQSPEC_REPORTS", flag, "one of 1, true, yes (on) or 0, false, no, empty (off)")
    if environ.get("RMQSPEC_RUN_ID"):
        check_run_id(environ["RMQSPEC_RUN_ID"])
    seed = environ.get("RMQSPEC_HYPOTHESIS_SEED", "")
    if seed and not seed.isdigit():
        raise SettingError("RMQSPEC_HYPOTHESIS_SEED", seed, "a non-negative integer")
    backend = environ.get("RMQSPEC_BACKEND", "model")
    if backend not in BACKENDS:
        raise SettingError("RMQSPEC_BACKEND", backend, f"one of {', '.join(BACKENDS)}")
    if environ.get("RMQSPEC_REPORTS_DIR"):
        check_directory("RMQSPEC_REPORTS_DIR", environ["RMQSPEC_REPORTS_DIR"])


def check_directory(variable: str, value: str) -> Path:
    """A directory the run writes into: an existing one, or a new one whose parent directory exists (a typo deep in
    a path is refused, not created); SettingError otherwise. Nothing is created here."""
    path = Path(value)
    valid = "a directory, or a new one in an existing directory"
    if path.is_dir():
        return path
    if path.exists() or path.is_symlink():
        raise SettingError(variable, value, valid + " (this is not a directory)")
    if not path.absolute().parent.is_dir():
        raise SettingError(variable, value, valid + " (its parent is not a directory)")
    return path


def check_run_id(run_id: str, variable: str = "RMQSPEC_RUN_ID") -> str:
    if not is_valid_run_id(run_id):
        raise SettingError(variable, run_id, RUN_ID_RULE)
    return run_id


def is_valid_run_id(name: str) -> bool:
    return RUN_ID.fullmatch(name) is not None


def is_reporting(environ=os.environ) -> bool:
    return environ.get("RMQSPEC_REPORTS", "").lower() in REPORTS_ON


def get_reports_dir(environ=os.environ) -> Path:
    return Path(environ.get("RMQSPEC_REPORTS_DIR") or DEFAULT_REPORTS_DIR)


def compute_run_id(now: float | None = None) -> str:
    """Sortable and unique enough for one machine: ``20260121T195601Z-12345``."""
    stamp = time.strftime("%Y%m%dT%H%M%SZ", time.gmtime(time.time() if now is None else now))
    return f"{stamp}-{os.getpid()}"


def get_run_id(environ=os.environ) -> str:
    """RMQSPEC_RUN_ID, checked (SettingError), or a fresh id."""
    given = environ.get("RMQSPEC_RUN_ID")
    return check_run_id(given) if given else compute_run_id()


def get_seed(environ=os.environ, explicit: object = None) -> int:
    """An explicit seed (``--hypothesis-seed`` or RMQSPEC_HYPOTHESIS_SEED) wins; otherwise a fresh one."""
    given = explicit if explicit is not None else environ.get("RMQSPEC_HYPOTHESIS_SEED")
    return int(given) if given not in (None, "") else secrets.randbits(32)


def get_git_commit() -> str:
    try:
        done = subprocess.run(["git", "rev-parse", "HEAD"], cwd=ROOT, capture_output=True, text=True, timeout=10)
    except (OSError, subprocess.SubprocessError):
        return "unknown"
    return done.stdout.strip() if done.returncode == 0 else "unknown"


def get_configuration(environ=os.environ) -> dict[str, str]:
    """The suite configuration as the RMQSPEC_* variables name it (checked at session start by the suite)."""
    return {field: environ.get(variable) or default for field, (variable, default) in CONFIGURATION_VARIABLES.items()}


def get_writer_name(environ=os.environ) -> str:
    """Unique per writing process within a run: tox env (or ``local``) and xdist worker (or ``main``)."""
    return f"{environ.get('TOX_ENV_NAME') or 'local'}-{environ.get('PYTEST_XDIST_WORKER') or 'main'}"


def get_cache_dir(environ) -> Path:
    base = environ.get("XDG_CACHE_HOME") or str(Path.home() / ".cache")
    return Path(environ.get("RMQSPEC_CACHE_DIR") or f"{base}/rmqspec")
