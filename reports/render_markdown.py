"""The Markdown outputs: the summary (CI logs, PR comments) and the per-rule coverage page that spec/ links to."""

from __future__ import annotations

from reports.results import GAP, STATUS_MARK, Results, get_heading_anchor, get_rule_anchor

MAX_LISTED = 20


def render_table(header: list[str], rows: list[list[object]]) -> list[str]:
    lines = ["| " + " | ".join(header) + " |", "|" + "---|" * len(header)]
    lines += [
        "| " + " | ".join(str(cell).replace("|", "\\|").replace("\n", " ") for cell in row) + " |" for row in rows
    ]
    return lines


def render_summary(results: Results, outputs: dict[str, str]) -> str:
    """The report in a few screens: totals, gaps, failures with seed and replay, cost, trend, quarantine, outputs."""
    return "\n".join(
        render_totals(results)
        + render_failures(results)
        + render_rules(results)
        + render_cost(results)
        + render_trend(results)
        + render_quarantine(results)
        + ["", "## Outputs", ""]
        + [f"- {name}: `{path}`" for name, path in outputs.items()]
    )


def render_totals(results: Results) -> list[str]:
    totals = [results.get_rule_totals(rule.rule_id) for rule in results.rules]
    exercised = sum(1 for t in totals if t["test_cases"])
    gaps = [rule.rule_id for rule, t in zip(results.rules, totals, strict=True) if t["status"] == GAP]
    lines = [
        "# Conformance report",
        "",
        f"- runs: {len(results.trend)} shown; ingested now: {len(results.ingested)}, unchanged: {len(results.skipped)}",
        f"- configurations: {len(results.configurations)} ({', '.join(results.configurations) or 'none'})",
        f"- spec rules exercised: **{exercised}/{len(results.rules)}**",
        f"- failing tests: **{len(results.unexpected_failures)}** unexpected, "
        f"{len(results.expected_failures)} expected",
        f"- quarantined input lines: **{sum(results.quarantine_by_reason.values())}**",
    ]
    if gaps:
        plain = [g for g in gaps if g in results.cited_by_tests]
        lines.append(f"- gaps (no Hypothesis test case marked them): {', '.join(gaps)}")
        if plain:
            lines.append(f"  (cited by properties/ but without `event(...)`, e.g. plain tests: {', '.join(plain)})")
    if results.unknown_rules:
        lines.append(f"- rule ids marked by tests but not defined in spec/: {', '.join(results.unknown_rules)}")
    return lines


def render_failures(results: Results) -> list[str]:
    lines: list[str] = []
    for title, rows in (("Failures", results.unexpected_failures), ("Expected failures", results.expected_failures)):
        if not rows:
            continue
        lines += ["", f"## {title}", ""]
        for row in rows[:MAX_LISTED]:
            lines += [
                f"### `{row['nodeid']}` — {row['configuration']}",
                "",
                f"- rules: {', '.join(row['rule_ids']) or '(none marked)'}; "
                f"run `{row['run_id']}`; seed `{row['seed']}`",
                f"- reason: {row['status_reason']}",
            ]
            if row["expected_violation"]:
                lines.append(f"- expected: {row['expected_violation']}")
            lines += [
                f"- replay: `RMQSPEC_HYPOTHESIS_SEED={row['seed']} {get_config_env(row['configuration'])}"
                f" python -m pytest '{row['nodeid']}'`",
                "",
                "```python",
                (row["representation"] or "(no representation)").rstrip(),
                "```",
            ]
            if row["reproduction_decorator"]:
                lines += ["", f"or add `{row['reproduction_decorator']}` to the test."]
    return lines


def get_config_env(configuration: str) -> str:
    names = ("RMQSPEC_VERSION", "RMQSPEC_MESSAGE_MODEL", "RMQSPEC_CONSUME_MODE", "RMQSPEC_RETRY_PRESET")
    values = configuration.split("/")
    return " ".join(f"{n}={v}" for n, v in zip(names, values, strict=False)) if len(values) == 4 else ""


def render_rules(results: Results) -> list[str]:
    rows = []
    for rule in results.rules:
        t = results.get_rule_totals(rule.rule_id)
        failures = f"{t['failures']}" + (f" (+{t['expected_failures']} expected)" if t["expected_failures"] else "")
        configs = f"{t['configurations']}/{t['of']}"
        rows.append([rule.rule_id, STATUS_MARK[t["status"]], t["test_cases"], t["steps"], configs, failures])
    header = ["rule", "status", "test cases", "steps", "configurations", "failing tests"]
    return ["", "## Rules", ""] + render_table(header, rows)


def render_cost(results: Results) -> list[str]:
    machines: dict[str, float] = {}
    for row in results.machine_cost:
        machines[row["machine"]] = machines.get(row["machine"], 0.0) + row["seconds"]
    slow = sorted(machines.items(), key=lambda item: -item[1])[:10]
    rules = sorted(results.rule_cost, key=lambda row: -row["attributed_seconds"])[:10]
    lines = ["", "## Cost", "", "Slowest tests / machines (seconds of test-case time):", ""]
    lines += render_table(["test", "seconds"], [[name, f"{secs:.3f}"] for name, secs in slow])
    lines += ["", "Costliest rules (case time shared among the rules each case marked):", ""]
    lines += render_table(
        ["rule", "seconds", "test cases"],
        [[r["rule_id"], f"{r['attributed_seconds']:.3f}", r["test_cases"]] for r in rules],
    )
    return lines


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
    rows = [[q["file"], q["line"], q["reason"], (q["text"] or "")[:60]] for q in results.quarantine[:MAX_LISTED]]
    return lines + render_table(["file", "line", "reason", "text"], rows)


def render_coverage_page(results: Results, spec_link: str = "../../spec") -> str:
    """Per-rule status, grouped by chapter; each row has the anchor ``#<rule id in lower case>``."""
    lines = [
        "# Coverage of the spec rules",
        "",
        "Generated by `python -m reports` from the run reports; status over all configurations seen "
        f"({', '.join(results.configurations) or 'none'}).",
    ]
    for chapter in sorted({rule.chapter for rule in results.rules}):
        lines += ["", f"## [{chapter}]({spec_link}/{chapter})", ""]
        rows = []
        for rule in (r for r in results.rules if r.chapter == chapter):
            t = results.get_rule_totals(rule.rule_id)
            anchor = f'<a id="{get_rule_anchor(rule.rule_id)}"></a>'
            link = f"[{rule.rule_id}]({spec_link}/{chapter}#{get_heading_anchor(rule)})"
            configs = f"{t['configurations']}/{t['of']}"
            rows.append(
                [f"{anchor}{link}", rule.title, STATUS_MARK[t["status"]], t["test_cases"], configs, t["failures"]]
            )
        lines += render_table(["rule", "title", "status", "test cases", "configurations", "failing tests"], rows)
    return "\n".join(lines) + "\n"
