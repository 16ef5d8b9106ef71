"""A rule's block in the documentation site: its coverage in each configuration, gaps, expected refutations and the
counterexamples that name it, as mkdocs-material admonitions (collapsed, so the chapter still reads as prose)."""

from __future__ import annotations

from reportformat.escape import to_code_block, to_markdown
from reports.render_markdown import get_reason
from reports.results import EXERCISED, FAILING, GAP, PARTIAL, REPLAY_LIMIT, Results, get_replay_command
from reports.spec_rules import RULE_ID

KIND = {EXERCISED: "success", PARTIAL: "warning", GAP: "danger", FAILING: "failure"}
FULL_COPY = "the report page (index.html) and the representation column of the Parquet table failures"
MAX_SHOWN = 3  # counterexamples shown per rule, newest first
INDENT = "    "


def get_counterexamples(results: Results) -> dict[str, list[tuple[int, dict]]]:
    """Rule id -> (place in results.failures, row) of the failures about it, newest first, one per test and
    configuration. An expected refutation is about the rules its claim names (a failing case marks every rule
    its steps exercised); otherwise about the rules the case marked."""
    found: dict[str, list[tuple[int, dict]]] = {}
    seen = set()
    for index, row in enumerate(results.failures):
        if (row["nodeid"], row["configuration"]) in seen:
            continue
        seen.add((row["nodeid"], row["configuration"]))
        named = RULE_ID.findall(row["expected_violation"] or "")
        for rule_id in dict.fromkeys(named or row["rule_ids"] or []):
            found.setdefault(rule_id, []).append((index, row))
    return found


def indent(lines: list[str]) -> list[str]:
    return [INDENT + line if line else "" for line in lines]


def render_coverage_table(rule_id: str, results: Results) -> list[str]:
    rows = ["| configuration | test cases | steps | runs | failing tests | expected refutations |"]
    rows.append("|---|--:|--:|--:|--:|--:|")
    for config in results.configurations:
        cell = results.get_cell(rule_id, config) or {}
        figures = [cell.get(k, 0) for k in ("test_cases", "steps", "runs", "failures", "expected_failures")]
        rows.append(f"| {to_markdown(config)} | " + " | ".join(str(f) for f in figures) + " |")
    return rows


def render_counterexample(index: int, row: dict) -> list[str]:
    """A collapsed block: the claim refuted (or the failure), its message, the replay command, the shrunk steps."""
    kind = "expected refutation" if row["expected_violation"] else "unexpected failure"
    name = row["nodeid"].rsplit("::", 1)[-1]
    quote = [f"> {to_markdown(row['expected_violation'], 600, FULL_COPY)}", ""] if row["expected_violation"] else []
    body = quote + to_code_block(get_reason(row), limit=600, pointer=FULL_COPY)
    body += ["", "Replay from the repository root:", "", *to_code_block(get_replay_command(row), "bash", REPLAY_LIMIT)]
    body += ["", f"Shrunk counterexample ({to_markdown(row.get('steps') or '—')} steps):", ""]
    body += to_code_block(row["representation"] or "(no representation)", "python", pointer=FULL_COPY)
    # The title is one line of Markdown between double quotes (admonition syntax): no '"' may end it early.
    title = to_markdown(f"Counterexample ({kind}): {name} — {row['configuration']}").replace('"', "&quot;")
    return [f'??? failure "{title}"', "", *indent(body), ""]


def render_rule_status(rule_id: str, results: Results | None, counterexamples: dict | None = None) -> list[str]:
    """The rule's coverage block and its counterexamples (Markdown lines)."""
    if results is None:
        return [
            '!!! note "Coverage: no aggregate yet"',
            "",
            f"{INDENT}`python -m reports` runs the suite and writes it.",
        ]
    totals = results.get_rule_totals(rule_id)
    title = (
        f"{rule_id} coverage: {totals['status']} · {totals['configurations']}/{totals['of']} "
        f"configurations · {totals['test_cases']:,} test cases · {totals['expected_failures']} expected refutations"
    )
    body = render_coverage_table(rule_id, results)
    missing = [c for c in results.configurations if not (results.get_cell(rule_id, c) or {}).get("test_cases")]
    gaps = to_markdown(", ".join(missing) or "none")
    body += ["", f"Gaps (configurations where no test case marked {rule_id}): {gaps}."]
    lines = [f'??? {KIND[totals["status"]]} "{title}"', "", *indent(body), ""]
    examples = (get_counterexamples(results) if counterexamples is None else counterexamples).get(rule_id, [])
    for index, row in examples[:MAX_SHOWN]:
        lines += render_counterexample(index, row)
    if len(examples) > MAX_SHOWN:
        lines.append(f"{len(examples) - MAX_SHOWN} more counterexamples of {rule_id}: the report page (index.html).")
    return lines
