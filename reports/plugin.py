"""pytest plugin: a given seed applies to every test; with RMQSPEC_REPORTS=1 every process writes its own report
file of Hypothesis observations.

One file per xdist worker (or the single pytest process) per run: ``<reports dir>/<run id>/<writer>.jsonl``,
opened for writing by that process only, so there is never a second writer on a file. The controller chooses the
run id and the Hypothesis seed once and hands them to the workers; every test of the run uses that seed, so a
failure is replayed with ``RMQSPEC_HYPOTHESIS_SEED=<seed>`` (or ``--hypothesis-seed``), the same Hypothesis profile
and the same configuration, with or without reports.
"""

from __future__ import annotations

import json
import os
import time

import pytest
from hypothesis import settings

# Hypothesis' observability interface lives in hypothesis.internal.observability, where its documentation
# ("Observability") places add_observability_callback, remove_observability_callback and
# OBSERVABILITY_COLLECT_COVERAGE: that is the public API. Coverage is turned off through the attribute, not its
# environment variable, because the variable also registers Hypothesis' own file writer (.hypothesis/observed/),
# a second copy of every observation.
from hypothesis.internal import observability

# Unavoidably internal: the observation is a dataclass whose arguments hold any Python value, and to_jsonable is the
# only function that turns it into the JSON form Hypothesis itself writes (its file writer calls it); no public
# function does, and dataclasses.asdict would deep-copy arbitrary test values.
from hypothesis.strategies._internal.utils import to_jsonable

from reportformat import lines as report_format
from runenv import run_context

SEEDED_SUFFIX = "+seeded"
# A test that passes although Hypothesis recorded a failing case asserted that counterexample (hypothesis.find,
# or pytest.raises around a machine): a refutation of a claim RocketMQ does not keep, not a failure of the suite.
# The claim is the test's docstring (its first paragraph).
REFUTATION = "refutation"
MAX_CLAIM = 300


class ReportWriter:
    """Writes one process's observations; `current` is the test being run (for nodeid and expected outcome)."""

    def __init__(self, path, run: dict):
        self.format, self.to_jsonable = report_format, to_jsonable
        self.run = run
        self.current: dict = {"nodeid": None, "expected_violation": None}
        self.claim = ""
        self.held: list[dict] = []  # the current test's failing cases, written once its outcome is known
        path.parent.mkdir(parents=True, exist_ok=True)
        self.file = open(path, "w", encoding="utf-8")  # noqa: SIM115 - closed in pytest_unconfigure
        self.write(report_format.make_run_line(report_format.RUN_STARTED, run, time.time()))

    def write(self, line: dict) -> None:
        self.file.write(json.dumps(line, default=str) + "\n")

    def __call__(self, observation, _thread_id=None) -> None:
        stamp = {"run_id": self.run["run_id"], "writer": self.run["writer"], **self.current}
        line = self.format.compact_observation(self.to_jsonable(observation, avoid_realization=False), stamp)
        if line is not None and line.get("status") == "failed" and stamp["nodeid"] is not None:
            self.held.append(line)
        elif line is not None:
            self.write(line)

    def release(self, test_passed: bool) -> bool:
        """Write the held failing cases of the test that just ran; a passing test's are refutations. Whether any
        was written (a failed test's own counterexample)."""
        for line in self.held:
            if test_passed and not line.get("expected_violation"):
                line["expected_violation"] = f"{REFUTATION}: {self.claim}" if self.claim else REFUTATION
            self.write(line)
        written, self.held = bool(self.held), []
        return written

    def write_outcome(self, report) -> None:
        """A test pytest counts as failed (or in error) that no failing Hypothesis case stands for: a plain or
        parametrized test, a failure outside any example (a fixture, a health check, a strict xfail that passed).
        One failed case of its own, so that the summary counts what pytest counts, with a replay command."""
        crash = getattr(report.longrepr, "reprcrash", None)
        text = report.longreprtext or ""
        message = crash.message if crash else (text.strip().splitlines() or [""])[-1]
        line = report_format.make_outcome_line(report.nodeid, report.when, message, text, report.duration, time.time())
        self.write(line | {"run_id": self.run["run_id"], "writer": self.run["writer"]})

    def close(self, interrupted: bool = False) -> None:
        self.release(test_passed=False)
        finished = {**self.run, "finished_at": time.time(), "interrupted": interrupted}
        self.write(self.format.make_run_line(self.format.RUN_FINISHED, finished, finished["finished_at"]))
        self.file.close()


def get_run_settings(config) -> tuple[str, int]:
    """Run id and seed: chosen by the controller, received by xdist workers."""
    shared = getattr(config, "workerinput", None)
    if shared is not None and "rmqspec_run_id" in shared:
        return shared["rmqspec_run_id"], shared["rmqspec_seed"]
    return run_context.get_run_id(), run_context.get_seed(explicit=config.getoption("hypothesis_seed", None))


def seed_hypothesis(config, seed: int) -> str:
    """Every test of the run draws from `seed`, through Hypothesis' own ``--hypothesis-seed`` option (its pytest
    plugin applies it after this hook); derandomize (Hypothesis' ``ci`` profile) would ignore the seed, and a
    stored example database would replay other cases first. Returns the profile's own name."""
    config.option.hypothesis_seed = str(seed)
    name = (settings.get_current_profile_name() or "default").removesuffix(SEEDED_SUFFIX)
    settings.register_profile(name + SEEDED_SUFFIX, settings.get_profile(name), derandomize=False, database=None)
    settings.load_profile(name + SEEDED_SUFFIX)
    return name


def get_claim(item) -> str:
    """The first paragraph of the test's docstring, on one line."""
    function = getattr(item, "function", None)
    text = (getattr(function, "__doc__", None) or "").strip().split("\n\n", 1)[0]
    return " ".join(text.split())[:MAX_CLAIM]


def start_report(config) -> ReportWriter:
    run_id, seed = get_run_settings(config)
    config.rmqspec_run = {"run_id": run_id, "seed": seed}
    run = {
        "run_id": run_id,
        "writer": run_context.get_writer_name(),
        "git_commit": run_context.get_git_commit(),
        "tox_env": os.environ.get("TOX_ENV_NAME", ""),
        **run_context.get_configuration(),
        "hypothesis_profile": seed_hypothesis(config, seed),
        "seed": str(seed),
        "started_at": time.time(),
        "finished_at": None,
    }
    # Coverage tracing would slow every case down and is not reported on.
    observability.OBSERVABILITY_COLLECT_COVERAGE = False
    writer = ReportWriter(run_context.get_reports_dir() / run_id / f"{run['writer']}.jsonl", run)
    observability.add_observability_callback(writer, all_threads=True)
    return writer


def get_expected_violation(item) -> str | None:
    """The reason of a strict xfail that applies in this configuration (properties/expected.py), else None."""
    marker = item.get_closest_marker("xfail")
    if marker is None or not marker.kwargs.get("strict", item.config.getini("xfail_strict")):
        return None
    condition = marker.kwargs.get("condition", marker.args[0] if marker.args else True)
    if isinstance(condition, str) or not condition:
        return None
    return str(marker.kwargs.get("reason", "expected failure"))


class ReportPlugin:
    def __init__(self, config):
        self.is_controller = not hasattr(config, "workerinput")
        self.is_distributed = self.is_controller and bool(getattr(config.option, "numprocesses", None))
        self.writer = None if self.is_distributed else start_report(config)
        self.interrupted = False
        if self.is_distributed:
            run_id, seed = get_run_settings(config)
            config.rmqspec_run = {"run_id": run_id, "seed": seed}

    @pytest.hookimpl(optionalhook=True)
    def pytest_configure_node(self, node):
        node.workerinput["rmqspec_run_id"] = node.config.rmqspec_run["run_id"]
        node.workerinput["rmqspec_seed"] = node.config.rmqspec_run["seed"]

    @pytest.hookimpl(wrapper=True)
    def pytest_runtest_call(self, item):
        if self.writer is not None:
            self.writer.current = {"nodeid": item.nodeid, "expected_violation": get_expected_violation(item)}
            self.writer.claim = get_claim(item)
        return (yield)

    def pytest_runtest_logreport(self, report):
        if self.writer is None:
            return
        counted = report.when == "call" and self.writer.release(test_passed=report.passed)
        if report.failed and not counted:
            self.writer.write_outcome(report)

    def pytest_report_header(self, config):
        run = config.rmqspec_run
        return [f"reports: run {run['run_id']} seed {run['seed']} -> {run_context.get_reports_dir() / run['run_id']}"]

    def pytest_sessionfinish(self, session, exitstatus):
        self.interrupted = exitstatus == pytest.ExitCode.INTERRUPTED

    def pytest_unconfigure(self, config):
        if self.writer is not None:
            observability.remove_observability_callback(self.writer)
            self.writer.close(interrupted=self.interrupted)


def register(config) -> None:
    """Called from conftest.py's pytest_configure, before Hypothesis' plugin: with RMQSPEC_REPORTS on, the report
    plugin (it seeds the run); otherwise a given seed (RMQSPEC_HYPOTHESIS_SEED or --hypothesis-seed) still applies to
    every test, so that the replay command a report prints replays without reports."""
    if run_context.is_reporting():
        config.pluginmanager.register(ReportPlugin(config), "rmqspec-reports")
        return
    explicit = config.getoption("hypothesis_seed", None)
    if explicit is not None or os.environ.get("RMQSPEC_HYPOTHESIS_SEED"):
        seed_hypothesis(config, run_context.get_seed(explicit=explicit))
