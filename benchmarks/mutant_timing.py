"""A pytest plugin the planted-bug runner loads into each mutant's run (`-p mutant_timing`).

It writes one JSON object to the file named by RMQSPEC_MUTANT_RESULT when the session ends: the first failing
test's node id, the seconds from the first test's start to that failure (collection and interpreter start are
left out: they are the same for every mutant), the number of steps of the shrunk counterexample, and the count of
tests run.
"""

from __future__ import annotations

import json
import os
import re
import time

STEP = re.compile(r"^(?:E\s+)?\s*state\.(?!teardown\b)\w+\(", re.M)
FALSIFYING = re.compile(r"Falsifying example")

_state: dict = {"started": None, "first_failure": None, "seconds": None, "steps": None, "tests": 0}


def count_steps(text: str) -> int | None:
    """Steps of the shrunk counterexample in a failure's text: the machine's rule calls (`state.rule(...)`), or 1
    for a falsifying example of a @given test; None when the failure printed no counterexample."""
    steps = len(STEP.findall(text))
    if steps:
        return steps
    return 1 if FALSIFYING.search(text) else None


def pytest_runtest_logstart(nodeid, location):
    if _state["started"] is None:
        _state["started"] = time.monotonic()


def pytest_runtest_logreport(report):
    if report.when == "call":
        _state["tests"] += 1
    if report.failed and _state["first_failure"] is None:
        _state["first_failure"] = report.nodeid
        _state["seconds"] = round(time.monotonic() - (_state["started"] or time.monotonic()), 3)
        _state["steps"] = count_steps(report.longreprtext + "\n".join(text for _, text in report.sections))


def pytest_sessionfinish(session, exitstatus):
    target = os.environ.get("RMQSPEC_MUTANT_RESULT")
    if target:
        result = {key: value for key, value in _state.items() if key != "started"}
        with open(target, "w", encoding="utf-8") as out:
            json.dump({**result, "exit": int(exitstatus)}, out)
