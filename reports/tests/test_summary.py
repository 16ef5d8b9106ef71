"""The summary people read: the headline first, failures newest first with their own message, refutations as a
table, and text from the reports never sent raw (control bytes) nor whole (long counterexamples)."""

from __future__ import annotations

from reportformat.lines import get_exception_message
from reports.render_html import render_html
from reports.render_markdown import MAX_FAILURES, render_summary
from reports.results import Results
from reports.tests.sample import BASELINE_LABEL, RULES

ANSI = "\x1b[2J\x1b[31mred\x07"


def failure(number: int, expected: str | None = None, **extra) -> dict:
    row = {
        "run_id": f"r{number}",
        "started_at": 1000.0 + number,
        "configuration": BASELINE_LABEL,
        "hypothesis_profile": "fast",
        "seed": str(number),
        "nodeid": f"p.py::test_{number}",
        "status_reason": "Found at /x/hypothesis/core.py:2503",
        "message": f"AssertionError: claim {number} broken",
        "expected_violation": expected,
        "representation": f"test_{number}(n={number})",
        "reproduction_decorator": None,
        "steps": 4,
        "rule_ids": ["AA-01"],
    }
    return row | extra


def make_results(failures: list[dict]) -> Results:
    coverage = [
        {"rule_id": r.rule_id, "chapter": r.chapter, "configuration": BASELINE_LABEL, "test_cases": n}
        | {"steps": 0, "runs": 1, "failures": 0, "expected_failures": 0}
        for r, n in zip(RULES, (3, 2, 0), strict=True)
    ]
    return Results(
        rules=RULES,
        coverage=coverage,
        failures=failures,
        machine_cost=[{"machine": "p.py::test_1", "timing_key": "execute:test", "seconds": 2.5, "test_cases": 3}],
        rule_cost=[],
        trend=[],
        unknown_rules=[],
        quarantine=[],
        quarantine_by_reason={},
        runs_covered={"runs": 9, "first_started_at": 1000.0, "last_started_at": 1009.0},
    )


def test_the_headline_comes_first_and_says_what_it_covers():
    lines = render_summary(make_results([failure(1)]), {}).splitlines()
    assert lines[0] == "# Conformance report"
    headline = "\n".join(lines[:6])
    assert "**2/3 spec rules exercised** · 1 gap · **1 unexpected failure**" in headline
    assert "2.5 s of test cases" in headline and "Covers the whole warehouse: 9 runs" in headline
    assert lines.index("## Unexpected failures (newest first)") < 12


def test_unexpected_failures_are_newest_first_with_n_more_and_their_own_message():
    rows = [failure(n) for n in range(MAX_FAILURES + 3, 0, -1)]  # the aggregate orders them newest first
    summary = render_summary(make_results(rows), {})
    shown = [line for line in summary.splitlines() if line.startswith("### ")]
    assert [line.split("`")[1] for line in shown] == [f"p.py::test_{n}" for n in range(MAX_FAILURES + 3, 3, -1)]
    assert "… and 3 more" in summary
    assert f"- reason: AssertionError: claim {MAX_FAILURES + 3} broken" in summary
    assert "hypothesis/core.py" not in summary


def test_expected_refutations_are_one_table_row_each():
    claim = "refutation: OS-05 (refutation of the folklore): the committed offset never decreases"
    rows = [failure(2, expected=claim, rule_ids=[], steps=None), failure(1, expected="apache/rocketmq#6163: x")]
    summary = render_summary(make_results(rows), {})
    table = summary.split("## Expected refutations", 1)[1].split("\n## ", 1)[0].strip().splitlines()
    assert table[0] == "| rule | claim refuted | shrunk steps | counterexample |"
    assert table[2].startswith("| OS-05 | OS-05 (refutation of the folklore): the committed offset never decreases |")
    assert table[3] == "| AA-01 | apache/rocketmq#6163: x | 4 | [test\\_1](index.html#failure-2) |"
    assert "test_2(n=2)" not in summary  # the counterexample is in index.html, not in the summary


def test_control_bytes_are_escaped_and_long_text_is_cut_everywhere():
    huge = "state.step()\n" * 100_000 + "state.teardown()"
    rows = [failure(1, nodeid=f"p.py::test_{ANSI}", message=f"AssertionError: {ANSI}", representation=ANSI + huge)]
    results = make_results(rows)
    summary, page = render_summary(results, {}), render_html(results, b"")
    for text in (summary, page):
        assert "\x1b" not in text and "\x07" not in text and "\\x1b[31mred\\x07" in text
        assert len(text) < 20_000 and f"cut at 2,000 of {len(ANSI + huge):,} characters" in text
        assert "the whole text: the representation column of the Parquet table" in text.replace("`", "")


def test_the_reason_is_the_exception_line_not_where_hypothesis_found_it():
    traceback = (
        "Traceback (most recent call last):\n"
        '  File "/x/hypothesis/core.py", line 1015, in test\n'
        "    result = self.test(*args, **kwargs)\n"
        "             ^^^^^^^^^^\n"
        '  File "/p/test_orderly_system.py", line 132, in check\n'
        '    assert not overlapping, f"OR-14: {mq}"\n'
        "AssertionError: OR-14: c1 runs q1\n"
        "assert not [2]\n"
    )
    assert get_exception_message(traceback) == "AssertionError: OR-14: c1 runs q1\nassert not [2]"
    assert get_exception_message("") is None
