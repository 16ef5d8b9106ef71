"""Who, what and where of one run: run id, git commit, tox env, suite configuration, Hypothesis profile and seed.

The switch and locations (all environment variables, so tox envs, xdist workers and CI behave alike):

- ``RMQSPEC_REPORTS=1`` turns reports on (``python -m reports`` sets it);
- ``RMQSPEC_REPORTS_DIR`` is where run directories go (default ``reports/runs``; git-ignored);
- ``RMQSPEC_RUN_ID`` names the run (default: UTC time + process id); tox sets one id for all its envs;
- ``RMQSPEC_HYPOTHESIS_SEED`` replays a recorded seed (default: a fresh seed per run, so successive CI runs
  explore different cases even though Hypothesis' own ``ci`` profile derandomizes).
"""

from __future__ import annotations

import os
import secrets
import subprocess
import time
from pathlib import Path

from reports.spec_rules import ROOT

DEFAULT_REPORTS_DIR = ROOT / "reports" / "runs"


def is_reporting(environ=os.environ) -> bool:
    return environ.get("RMQSPEC_REPORTS", "").lower() in ("1", "true", "yes")


def get_reports_dir(environ=os.environ) -> Path:
    return Path(environ.get("RMQSPEC_REPORTS_DIR") or DEFAULT_REPORTS_DIR)


def compute_run_id(now: float | None = None) -> str:
    """Sortable and unique enough for one machine: ``20260121T195601Z-12345``."""
    stamp = time.strftime("%Y%m%dT%H%M%SZ", time.gmtime(time.time() if now is None else now))
    return f"{stamp}-{os.getpid()}"


def get_run_id(environ=os.environ) -> str:
    return environ.get("RMQSPEC_RUN_ID") or compute_run_id()


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
    """The suite configuration as plain names (the same Config the machines run, see properties/suite.py)."""
    from properties.suite import get_suite_config

    config = get_suite_config(environ)
    return {
        "version": config.profile.name,
        "message_model": config.message_model.name.lower(),
        "consume_mode": config.consume_mode.name.lower(),
        "retry_preset": environ.get("RMQSPEC_RETRY_PRESET", "default"),
    }


def get_writer_name(environ=os.environ) -> str:
    """Unique per writing process within a run: tox env (or ``local``) and xdist worker (or ``main``)."""
    return f"{environ.get('TOX_ENV_NAME') or 'local'}-{environ.get('PYTEST_XDIST_WORKER') or 'main'}"
