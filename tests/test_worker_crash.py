"""Nothing hangs: a worker that the watchdog (or anything) ends stops the run, reported as crashed. With xdist's
default, a replacement worker, `--dist loadfile` waited for the crashed file's other tests with both workers idle
(seen in a CI rehearsal, 2026-11-28)."""

import tomllib

from reports.spec_rules import ROOT

CRASHING = """
import os

def test_first():
    assert True

def test_crashes():
    os._exit(3)

def test_after_the_crash():
    assert True
"""


def test_a_crashed_worker_ends_the_run_naming_the_test(pytester):
    pytester.makepyfile(test_crash=CRASHING, test_other="def test_other():\n    assert True\n")
    result = pytester.runpytest_subprocess("-p", "no:cacheprovider", "-p", "runenv.workers", "-n", "2", "--dist",
                                           "loadfile", timeout=120)
    assert result.ret == 1
    result.stdout.fnmatch_lines(["*worker 'gw*' crashed while running 'test_crash.py::test_crashes'*",
                                 "*crashed and worker restarting disabled*"])


def test_the_suite_loads_the_plugin():
    options = tomllib.loads((ROOT / "pyproject.toml").read_text(encoding="utf-8"))["tool"]["pytest"]["ini_options"]
    assert "-p runenv.workers" in options["addopts"]
