"""The Markdown outputs: the summary (CI logs, PR comments) and the per-rule coverage page that spec/ links to."""

from __future__ import annotations

import time

from reportformat.escape import to_code_block, to_code_span, to_markdown
from reports.differential import render_summary_section
from reports.render_clients import render_client_markdown
from reports.results import (
    REPLAY_LIMIT,
    STATUS_MARK,
    Results,
    get_failure_anchor,
    get_heading_anchor,
    get_replay_command,
    get_rule_anchor,
    plural,
)
from reports.spec_rules import RULE_ID

MAX_FAILURES = 5  # unexpected failures shown in full, newest first
MAX_ROWS = 10  # rows of the cost and quarantine tables
FULL_COPY = "the `representation` column of the Parquet table `failures` (Outputs)"


class Markdown(str):
    """Markdown the renderer made itself (a link, a code span): a table cell that is not escaped again."""


def render_table(header: list[str], rows: list[list[object]]) -> list[str]:
    """A table whose cells are text from the reports (escaped, one line each) or Markdown values."""
    lines = ["| " + " | ".join(header) + " |", "|" + "---|" * len(header)]
    return lines + [
        "| " + " | ".join(cell if isinstance(cell, Markdown) else to_markdown(cell) for cell in row) + " |"
        for row in rows
    ]


def render_summary(results: Results, outputs: dict[str, str]) -> str:
    """The report in a few screens: the headline, the rule x client matrix, unexpected failures (newest first) with
    their replay command, expected refutations as a table, cost, trend, quarantine, where the outputs are."""
    return "\n".join(
        render_headline(results)
        + render_client_markdown(results.client_matrix)
        + render_failures(results)
        + render_refutations(results)
        + render_cost(results)
        + render_trend(results)
        + render_quarantine(results)
        + render_summary_section(results.differential_run)
        + ["", "## Outputs", ""]
        + [f"- {name}: {to_code_span(path, REPLAY_LIMIT)}" for name, path in outputs.items()]
    )


def format_time(seconds: float | None) -> str:
    return time.strftime("%Y-%m-%d %H:%M UTC", time.gmtime(seconds)) if seconds is not None else "?"


def render_headline(results: Results) -> list[str]:
    headline = results.get_headline()
    gaps, failing = headline["gaps"], headline["failing"]
    lines = [
        "# Conformance report",
        "",
        f"**{headline['exercised']}/{headline['rules']} spec rules exercised** · {plural(len(gaps), 'gap')} · "
        f"**{plural(headline['unexpected_failures'], 'unexpected failure')}** · "
        f"{plural(headline['expected_refutations'], 'expected refutation')} · "
        f"{plural(headline['quarantined'], 'quarantined input line')} · "
        f"{plural(len(headline['interrupted_runs']), 'interrupted run')} · {headline['seconds']:,.1f} s of test cases",
        "",
        f"Covers the whole warehouse: {plural(headline['runs'], 'run')}, started "
        f"{format_time(headline['first_started_at'])} to {format_time(headline['last_started_at'])}, "
        f"{plural(len(results.configurations), 'configuration')} "
        f"({to_markdown(', '.join(results.configurations) or 'none')}); this job ingested "
        f"{plural(len(results.ingested), 'new or changed run')}, {len(results.skipped)} unchanged.",
        "",
    ]
    if headline["interrupted_runs"]:
        runs = to_markdown(", ".join(headline["interrupted_runs"]))
        lines.append(f"- interrupted runs (Ctrl-C or a killed job: their reports stop early): {runs}")
    if failing:
        lines.append(f"- failing rules: {', '.join(failing)}")
    if gaps:
        lines.append(f"- gaps (no test case marked them): {', '.join(gaps)}")
        plain = [g for g in gaps if g in results.cited_by_tests]
        if plain:
            lines.append(f"  (cited by properties/ but without `event(...)`, e.g. plain tests: {', '.join(plain)})")
    if results.unknown_rules:
        unknown = to_markdown(", ".join(results.unknown_rules))
        lines.append(f"- rule ids marked by tests but not defined in spec/: {unknown}")
    return lines + ["- per-rule status: the coverage page (see Outputs)"]


def get_reason(row: dict) -> str:
    """The failure's own message (the exception line); Hypothesis' status reason for reports without one."""
    return row.get("message") or row["status_reason"] or ""


def render_failures(results: Results) -> list[str]:
    rows = results.unexpected_failures
    if not rows:
        return []
    lines = ["", "## Unexpected failures (newest first)", ""]
    for index, row in rows[:MAX_FAILURES]:
        lines += [
            f"### {to_code_span(row['nodeid'])} — {to_markdown(row['configuration'])}",
            "",
            f"- reason: {to_markdown(get_reason(row), 500, FULL_COPY)}",
            f"- rules: {to_markdown(', '.join(row['rule_ids'] or []) or '(none marked)')}; "
            f"run {to_code_span(row['run_id'])}; seed {to_code_span(row['seed'])}; "
            f"[in index.html](index.html#{get_failure_anchor(index)})",
            f"- replay (from the repository root): {to_code_span(get_replay_command(row), REPLAY_LIMIT)}",
            "",
            *to_code_block((row["representation"] or "(no representation)").rstrip(), "python", pointer=FULL_COPY),
        ]
    if len(rows) > MAX_FAILURES:
        lines += ["", f"… and {len(rows) - MAX_FAILURES} more: index.html and the Parquet table `failures`."]
    return lines


def get_refuted_rule(row: dict) -> str:
    """The rules the case marked, else the rule ids its claim names."""
    return ", ".join(row["rule_ids"] or []) or ", ".join(dict.fromkeys(RULE_ID.findall(row["expected_violation"])))


def render_refutations(results: Results) -> list[str]:
    """Expected failures: the claims RocketMQ does not keep, one row each."""
    rows = [
        [
            get_refuted_rule(row) or "—",
            row["expected_violation"].removeprefix("refutation: "),
            row["steps"] if row.get("steps") is not None else "—",
            Markdown(f"[{to_markdown(row['nodeid'].rsplit('::', 1)[-1])}](index.html#{get_failure_anchor(index)})"),
        ]
        for index, row in results.expected_failures
    ]
    if not rows:
        return []
    header = ["rule", "claim refuted", "shrunk steps", "counterexample"]
    return ["", "## Expected refutations", ""] + render_table(header, rows)


def get_costliest(results: Results, limit: int = MAX_ROWS) -> tuple[list[tuple[str, float]], list[dict]]:
    """(the slowest tests and machines with their seconds, the costliest rules), each at most `limit`."""
    machines: dict[str, float] = {}
    for row in results.machine_cost:
        machines[row["machine"]] = machines.get(row["machine"], 0.0) + row["seconds"]
    slow = sorted(machines.items(), key=lambda item: -item[1])[:limit]
    return slow, sorted(results.rule_cost, key=lambda row: -row["attributed_seconds"])[:limit]


def render_cost(results: Results) -> list[str]:
    slow, rules = get_costliest(results)
    slow_rows = [[name, f"{secs:.3f}"] for name, secs in slow]
    rule_rows = [[r["rule_id"], f"{r['attributed_seconds']:.3f}", r["test_cases"]] for r in rules]
    lines = ["", "## Cost", ""]
    lines += render_table(["slowest tests / machines", "seconds"], slow_rows)
    lines += ["", "Costliest rules (case time shared among the rules each case marked):", ""]
    return lines + render_table(["rule", "seconds", "test cases"], rule_rows)


def render_trend(results: Results) -> list[str]:
    header = ["run", "commit", "configurations", "test cases", "rules", "failing", "expected", "killed writers"]
    rows = [
        [
            r["run_id"],
            (r["git_commit"] or "")[:10],
            r["configurations"],
            r["test_cases"],
            r["rules_exercised"],
            r["failures"],
            r["expected_failures"],
            r["writers"] - r["writers_finished"],
        ]
        for r in results.trend
    ]
    return ["", "## Trend (latest first)", ""] + render_table(header, rows)


def render_quarantine(results: Results) -> list[str]:
    if not results.quarantine_by_reason:
        return []
    lines = ["", "## Quarantined input", ""]
    lines += render_table(["reason", "lines"], sorted(results.quarantine_by_reason.items()))
    lines += ["", "First quarantined lines:", ""]
    rows = [[q["file"], q["line"], q["reason"], (q["text"] or "")[:60]] for q in results.quarantine[:MAX_ROWS]]
    return lines + render_table(["file", "line", "reason", "text"], rows)


def render_coverage_page(results: Results, spec_link: str = "../../spec") -> str:
    """Per-rule status, grouped by chapter; each row has the anchor ``#<rule id in lower case>``."""
    lines = [
        "# Coverage of the spec rules",
        "",
        "Generated by `python -m reports` from the run reports; status over all configurations seen "
        f"({to_markdown(', '.join(results.configurations) or 'none')}).",
    ]
    for chapter in sorted({rule.chapter for rule in results.rules}):
        lines += ["", f"## [{chapter}]({spec_link}/{chapter})", ""]
        rows = []
        for rule in (r for r in results.rules if r.chapter == chapter):
            t = results.get_rule_totals(rule.rule_id)
            anchor = f'<a id="{get_rule_anchor(rule.rule_id)}"></a>'
            link = f"[{rule.rule_id}]({spec_link}/{chapter}#{get_heading_anchor(rule)})"
            configs = f"{t['configurations']}/{t['of']}"
            cells = [Markdown(f"{anchor}{link}"), Markdown(rule.title), STATUS_MARK[t["status"]], t["test_cases"]]
            rows.append([*cells, configs, t["failures"]])
        lines += render_table(["rule", "title", "status", "test cases", "configurations", "failing tests"], rows)
    return "\n".join(lines) + "\n"
