"""Nothing hangs: every test of the suite runs under pytest-timeout's watchdog (issue 15)."""

import tomllib

from reports.spec_rules import ROOT

SLEEPER = """
import time

def test_sleeps():
    time.sleep(30)
"""


def test_the_suite_sets_a_watchdog():
    options = tomllib.loads((ROOT / "pyproject.toml").read_text(encoding="utf-8"))["tool"]["pytest"]["ini_options"]
    assert 0 < options["timeout"] <= 600


def test_the_watchdog_ends_the_process_with_every_stack():
    options = tomllib.loads((ROOT / "pyproject.toml").read_text(encoding="utf-8"))["tool"]["pytest"]["ini_options"]
    assert options["timeout_method"] == "thread"


def test_a_hanging_test_fails_with_its_stack(pytester):
    pytester.makepyfile(SLEEPER)
    result = pytester.runpytest_subprocess("-p", "no:cacheprovider", "-o", "timeout=1", "-o", "timeout_method=thread",
                                           timeout=60)
    assert result.ret != 0
    result.stdout.fnmatch_lines(["*Timeout*", "*time.sleep(30)*"])
