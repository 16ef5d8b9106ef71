"""Suite-wide wiring: Hypothesis settings profiles, the suite configuration, Markdown examples in spec/.

Profiles (choose with RMQSPEC_HYPOTHESIS_PROFILE):
- ``fast``: the default of the test command; small budgets, a few minutes for the whole suite on 2 cores.
- ``ci``: Hypothesis' built-in CI behaviour (derandomized, no example database, blobs printed) at fast budgets;
  chosen automatically when CI=true.
- ``deep``: large budgets for tox environments and nightly runs.
- ``mutation``: ``fast`` without shrinking, derandomized and without an example database, for mutmut (tox env
  ``mutation``): a mutant is killed by the first failing example, so shrinking it only costs time; every run of a
  test draws the same examples, so a test that did not execute a statement unmutated does not execute it mutated
  (benchmarks/mutation_lines.py).
"""

from __future__ import annotations

import functools
import json
import os
from pathlib import Path

import pytest
from hypothesis import HealthCheck, Phase, settings
from sybil import Sybil
from sybil.parsers.markdown import PythonCodeBlockParser

from conformance.runner.clients import java as java_client
from properties.suite import check_environment, get_suite_config
from reports.plugin import register
from runenv import run_context

FAST = {"max_examples": 20, "stateful_step_count": 30, "deadline": None}
DEEP = {"max_examples": 400, "stateful_step_count": 100, "deadline": None}
QUIET = [HealthCheck.too_slow, HealthCheck.data_too_large]

# Each profile names its parent: without one, Hypothesis takes the profile loaded now, and mutmut runs pytest twice in
# one process (its stats, then the clean run), so `fast` would inherit the first session's `mutation` profile.
DEFAULT = settings.get_profile("default")
settings.register_profile("fast", DEFAULT, suppress_health_check=QUIET, **FAST)
settings.register_profile("ci", settings.get_profile("ci"), suppress_health_check=QUIET, **FAST)
settings.register_profile("deep", DEFAULT, suppress_health_check=QUIET, **DEEP)
settings.register_profile("mutation", settings.get_profile("fast"), report_multiple_bugs=False, derandomize=True,
                          database=None, phases=[phase for phase in Phase if phase not in (Phase.shrink,
                                                                                         Phase.explain)])
PROFILES = ("fast", "ci", "deep", "mutation")


def get_hypothesis_profile_name() -> str:
    """RMQSPEC_HYPOTHESIS_PROFILE wins; otherwise ``ci`` under CI and ``fast`` elsewhere."""
    explicit = os.environ.get("RMQSPEC_HYPOTHESIS_PROFILE")
    if explicit:
        return explicit
    return "ci" if os.environ.get("CI", "").lower() in ("1", "true", "yes") else "fast"


def check_hypothesis_profile() -> None:
    name = get_hypothesis_profile_name()
    if name not in PROFILES:
        raise run_context.SettingError("RMQSPEC_HYPOTHESIS_PROFILE", name, f"one of {', '.join(PROFILES)}")


if get_hypothesis_profile_name() in PROFILES:  # a bad name is reported by pytest_configure, as one line
    settings.load_profile(get_hypothesis_profile_name())

MUTMUT_KILLS = "mutmut-kills.tsv"  # in mutants/, mutmut's working directory: read by benchmarks/mutation_cost.py


def pytest_runtest_logreport(report):
    """Under mutmut (a mutant's run stops at its first failure), the test that killed the mutant."""
    mutant = os.environ.get("MUTANT_UNDER_TEST", "")
    if report.failed and "__mutmut_" in mutant:
        with open(MUTMUT_KILLS, "a", encoding="utf-8") as kills:
            kills.write(f"{mutant}\t{report.nodeid}\t{report.when}\t{report.duration:.3f}\n")


MUTMUT_LINES = "mutmut-lines.json"  # in mutants/: benchmarks/mutation_lines.py, kept current by mutation_scores --all


MUTMUT_STATS = "mutmut-stats.json"  # in mutants/: each test's duration in mutmut's clean stats run
MUTANT_TEST_LIMIT = (10.0, 10.0)  # under mutmut a test fails after max(10 s, 10 x its clean duration)


@functools.cache
def read_json(name: str) -> dict:
    path = Path(name)
    return json.loads(path.read_text()) if path.is_file() else {}


def get_mutant_tests(mutant: str) -> set[str] | None:
    """The tests benchmarks/mutation_lines.py found executing the mutant's statement; None if it was not mapped."""
    line_map = read_json(MUTMUT_LINES)
    indices = line_map.get("mutants", {}).get(mutant)
    return None if indices is None else {line_map["tests"][i] for i in indices}


def pytest_collection_modifyitems(config, items):
    """Under mutmut, a mutant's run keeps the tests that executed its mutated statement (benchmarks/
    mutation_lines.py): the others cannot tell it from the original; one executed by no test keeps one test. Each
    test kept fails after 10 times its clean duration (10 s at least): a mutant that loops is caught by the test,
    where mutmut's own limit, 30 times the time of all the function's tests, would let it run for minutes."""
    mutant = os.environ.get("MUTANT_UNDER_TEST", "")
    if "__mutmut_" not in mutant or not items:
        return
    wanted = get_mutant_tests(mutant)
    if wanted is not None:
        kept = [item for item in items if item.nodeid in wanted] or items[:1]
        kept_ids = {item.nodeid for item in kept}
        config.hook.pytest_deselected(items=[item for item in items if item.nodeid not in kept_ids])
        items[:] = kept
    durations = read_json(MUTMUT_STATS).get("duration_by_test", {})
    floor, factor = MUTANT_TEST_LIMIT
    for item in items:
        # The thread method ends the child (exit 1: killed). A signal would raise in the test, and Hypothesis would
        # take it for a failure and replay the example to report it: looping again, with no alarm left.
        item.add_marker(pytest.mark.timeout(max(floor, factor * durations.get(item.nodeid, floor)), method="thread"))


pytest_plugins = ("pytester",)  # tests/test_expected_outcomes.py runs small suites in-process

# A chapter's examples share one namespace: the test command distributes by file (--dist loadfile), so one
# worker runs a whole chapter in order (and the one Spark test module starts one JVM).
pytest_collect_file = Sybil(parsers=[PythonCodeBlockParser()], patterns=["*.md"], path="spec").pytest()


def pytest_report_header(config):
    return [f"hypothesis profile: {get_hypothesis_profile_name()}", f"suite configuration: {get_suite_config()!r}"]


@pytest.hookimpl(tryfirst=True)  # before Hypothesis' plugin, which applies the seed that register() sets
def pytest_configure(config):
    try:  # every RMQSPEC_* setting, before anything runs: one line naming the variable, value and valid values
        check_environment()
        check_hypothesis_profile()
        run_context.check_environment()
        java_client.check_environment()
    except ValueError as error:
        raise pytest.UsageError(str(error)) from None
    # RMQSPEC_HYPOTHESIS_SEED for every test; report files of Hypothesis observations when RMQSPEC_REPORTS=1.
    register(config)
