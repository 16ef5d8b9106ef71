"""The main job's child processes (the suite, the clients' runs): each in a process group of its own, so that on
Ctrl-C the job, not the terminal, stops it: SIGTERM first (no child prints its own traceback; the job marks the
run interrupted), SIGKILL to the whole group after STOP_GRACE_S, every process of the group gone within
STOP_LIMIT_S."""

from __future__ import annotations

import os
import signal
import subprocess
import time

STOP_GRACE_S = 1.2  # SIGTERM to SIGKILL
STOP_LIMIT_S = 2.0  # every child gone


class Interrupted(Exception):
    """The job was interrupted (Ctrl-C) while a child ran; the child's whole group is stopped."""


def run_child(command: list[str], timeout: float | None = None, **options) -> int:
    """The child's exit code (124 after `timeout` seconds, its group killed); Interrupted on Ctrl-C."""
    child = subprocess.Popen(command, start_new_session=True, **options)
    try:
        return child.wait(timeout=timeout)
    except subprocess.TimeoutExpired:
        stop_group(child, grace=0.0)
        return 124
    except KeyboardInterrupt:
        stop_group(child)
        raise Interrupted from None


def stop_group(child: subprocess.Popen, grace: float = STOP_GRACE_S) -> None:
    """SIGTERM to the child's process group, SIGKILL after `grace` seconds to whatever of it is left."""
    send(child.pid, signal.SIGTERM)
    deadline = time.monotonic() + grace
    while child.poll() is None and time.monotonic() < deadline:
        time.sleep(0.05)
    send(child.pid, signal.SIGKILL)  # the group: an adapter or worker the child started, even if the child ended
    try:
        child.wait(timeout=max(0.1, STOP_LIMIT_S - grace))
    except subprocess.TimeoutExpired:
        pass


def send(group: int, signal_number: int) -> None:
    try:
        os.killpg(group, signal_number)
    except (ProcessLookupError, PermissionError):
        pass
