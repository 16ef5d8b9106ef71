"""The headline's failure count is pytest's own, and every failure has its replay command: failures that are not
one Hypothesis test case each (parametrized variants, tests that fail outside any example, a setup error, a strict
xfail that passed) are counted too (with one planted bug the suite said 16 failed and the headline 8)."""

from __future__ import annotations

import os
import re
import shlex
import subprocess
import sys
import xml.etree.ElementTree as ElementTree

from reports import job, render_html, render_markdown
from reports.results import get_replay_command
from reports.spec_rules import ROOT
from reports.tests.sample import RULES

PLANTED = """
import pytest
from hypothesis import Phase, assume, given, settings, strategies as st


@pytest.mark.parametrize("k", [1, 2, 3])
def test_plain_variants(k):
    assert k == 0, f"planted {k}"


@pytest.mark.parametrize("k", [1, 2])
@settings(phases=[Phase.generate], max_examples=50)
@given(st.integers(0, 10**12))
def test_given_variants(k, n):
    assert n < 10**6


@pytest.fixture
def broken():
    raise RuntimeError("planted: setup broke")


def test_setup_error(broken):
    pass


@given(st.integers())
def test_fails_outside_any_example(n):
    assume(False)


@pytest.mark.xfail(strict=True, reason="planted: expected to fail")
def test_strict_xfail_that_passes():
    pass


def test_passes():
    pass
"""


def test_the_headline_counts_what_pytest_counts_and_each_failure_replays(spark, tmp_path):
    suite = tmp_path / "suite"
    suite.mkdir()
    (suite / "conftest.py").write_text("from reports.plugin import register\n\n\ndef pytest_configure(config):\n"
                                       "    register(config)\n")
    (suite / "test_planted.py").write_text(PLANTED)
    env = {k: v for k, v in os.environ.items() if not k.startswith(("RMQSPEC_", "PYTEST_XDIST", "HYPOTHESIS"))}
    env |= {"PYTHONPATH": str(ROOT), "RMQSPEC_REPORTS": "1", "RMQSPEC_REPORTS_DIR": str(tmp_path / "runs")}
    env |= {"RMQSPEC_RUN_ID": "f1"}
    command = [sys.executable, "-m", "pytest", "-p", "no:cacheprovider", "-n", "2", "--junitxml", "junit.xml"]
    done = subprocess.run([*command, "test_planted.py"], cwd=suite, env=env, capture_output=True, text=True,
                          timeout=240)
    assert done.returncode == 1, done.stdout + done.stderr
    totals = ElementTree.parse(suite / "junit.xml").getroot().find("testsuite").attrib
    counted_by_pytest = int(totals["failures"]) + int(totals["errors"])
    assert counted_by_pytest == 8, done.stdout  # 3 + 2 variants, the setup error, the health check, the xpass
    warehouse = str(tmp_path / "warehouse")
    job.ingest(spark, [str(tmp_path / "runs")], warehouse)
    results = job.aggregate(spark, warehouse, str(tmp_path / "tables"), last=5, rules=RULES)
    assert results.get_headline()["unexpected_failures"] == counted_by_pytest
    summary = render_markdown.render_summary(results, {})
    assert f"**{counted_by_pytest} unexpected failures**" in summary
    page = render_html.render_html(results, b"")
    failed = {row["nodeid"] for _, row in results.unexpected_failures}
    assert len(failed) == counted_by_pytest
    for _, row in results.unexpected_failures:
        assert row["seed"] and get_replay_command(row).endswith(f"cacheprovider {shlex.quote(row['nodeid'])}")
    assert len(set(re.findall(r'<code class="replay">([^<]+)</code>', page))) == counted_by_pytest
