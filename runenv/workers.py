"""A pytest plugin (pyproject.toml's addopts, `-p runenv.workers`): a crashed xdist worker stops the run.

The watchdog (pytest-timeout, thread method) ends a test past its limit by ending its process; under xdist that is a
crashed worker. xdist's default then starts a replacement, and with `--dist loadfile` the crashed file's other tests
were never sent to it: both workers idle, the run waiting until CI's own limit (a CI rehearsal, 2026-11-28). With
`--max-worker-restart` left unset, this plugin sets it to 0: the run stops, naming the test that crashed.
"""

from __future__ import annotations

import pytest


@pytest.hookimpl(tryfirst=True)  # before xdist's pytest_configure, which reads the option into its session
def pytest_configure(config: pytest.Config) -> None:
    if getattr(config.option, "maxworkerrestart", "absent") is None:
        config.option.maxworkerrestart = "0"
