"""The PNG heat map (rule x configuration, matplotlib) and the self-contained HTML page that embeds it."""

from __future__ import annotations

import base64
import html
import io

from reports.render_clients import render_client_section
from reports.results import (
    STATUS_MARK,
    Results,
    cut,
    get_configurations,
    get_failure_anchor,
    get_heading_anchor,
    get_replay_command,
    get_rule_anchor,
    index_cells,
    printable,
)
from reports.spec_rules import Rule

STYLE = """
body { font: 14px/1.4 system-ui, sans-serif; margin: 2em; color: #222; }
table { border-collapse: collapse; margin: 1em 0; } td, th { border: 1px solid #ccc; padding: 2px 8px; }
th { background: #f3f3f3; } td.n { text-align: right; } td.gap { background: #fde2e2; }
td.fail { background: #f8b4b4; font-weight: bold; } pre { background: #f6f8fa; padding: 8px; overflow-x: auto; }
:target { outline: 2px solid #3178c6; }
"""


def import_pyplot():
    """matplotlib's pyplot on the Agg backend (no display needed); imported when first used (~0.6 s)."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    return plt


def render_heat_map(spec_rules: list[Rule], coverage: list[dict]) -> bytes:
    """PNG: log-scaled test cases per rule (rows) and configuration (columns); gaps red, failing cells marked.
    Needs only the rules and their coverage (Results.rules and .coverage), so that it can be drawn before the
    other results are in."""
    import matplotlib
    import numpy as np

    plt = import_pyplot()

    rules, configs = [r.rule_id for r in spec_rules], get_configurations(coverage) or ["(no runs)"]
    cells = index_cells(coverage)
    counts = np.array([[cells.get((r, c), {}).get("test_cases", 0) for c in configs] for r in rules] or [[0]])
    width, height = max(6, 3 + 0.9 * len(configs)), 1.5 + 0.22 * max(len(rules), 1)
    figure, axes = plt.subplots(figsize=(width, height))
    # Fixed margins in inches: rule ids on the left, the colour bar's labels on the right, four-line configuration
    # labels below, the title above. tight_layout would draw the whole figure once more to measure the labels
    # (~0.3 s of the 50k-line incremental run).
    figure.subplots_adjust(left=0.75 / width, right=1 - 0.8 / width, bottom=0.75 / height, top=1 - 0.4 / height)
    cmap = matplotlib.colormaps["Greens"].with_extremes(bad="#f4a3a3")
    shown = np.ma.masked_where(counts == 0, np.log10(np.maximum(counts, 1)) + 1)
    image = axes.imshow(shown, aspect="auto", cmap=cmap, vmin=0)
    axes.set_xticks(range(len(configs)), [c.replace("/", "\n") for c in configs], fontsize=7)
    axes.set_yticks(range(len(rules)), rules, fontsize=7)
    for (row, col), _ in np.ndenumerate(counts):
        cell = cells.get((rules[row], configs[col])) if rules else None
        if cell and cell["failures"]:
            axes.text(col, row, "✗", ha="center", va="center", color="black", fontsize=8)
    figure.colorbar(image, ax=axes, label="log10(test cases) + 1 (red: gap)", shrink=0.5)
    axes.set_title("Spec rules exercised per configuration", fontsize=10)
    buffer = io.BytesIO()
    figure.savefig(buffer, format="png", dpi=110)
    plt.close(figure)
    return buffer.getvalue()


FULL_COPY = "the representation column of the Parquet table failures"


def escape(value: object) -> str:
    """HTML text of a value from the reports: control characters shown as escapes, markup escaped."""
    return html.escape(printable(value))


def cell(value: object, css: str = "") -> str:
    return f'<td class="{css}">{escape(value)}</td>'


def render_coverage_grid(results: Results, spec_link: str) -> list[str]:
    configs = results.configurations
    head = "".join(f"<th>{html.escape(c)}</th>" for c in configs)
    rows = [f"<table><tr><th>rule</th><th>status</th>{head}</tr>"]
    for rule in results.rules:
        status = STATUS_MARK[results.get_rule_totals(rule.rule_id)["status"]]
        link = f'<a href="{spec_link}/{rule.chapter}#{get_heading_anchor(rule)}">{rule.rule_id}</a>'
        cells = []
        for config in configs:
            found = results.get_cell(rule.rule_id, config) or {"test_cases": 0, "failures": 0}
            css = "n fail" if found["failures"] else "n gap" if not found["test_cases"] else "n"
            cells.append(cell(found["test_cases"], css))
        anchor = get_rule_anchor(rule.rule_id)
        rows.append(
            f'<tr id="{anchor}" title="{html.escape(rule.title)}"><td>{link}</td>{cell(status)}{"".join(cells)}</tr>'
        )
    return rows + ["</table>"]


def render_rows(header: list[str], rows: list[list[object]]) -> list[str]:
    head = "".join(f"<th>{html.escape(h)}</th>" for h in header)
    body = ["<tr>" + "".join(cell(v, "n" if isinstance(v, int | float) else "") for v in row) + "</tr>" for row in rows]
    return [f"<table><tr>{head}</tr>", *body, "</table>"]


def render_failure_blocks(results: Results) -> list[str]:
    """Every failure, newest first: unexpected ones, and expected ones with the claim they refute."""
    blocks = []
    for index, row in enumerate(results.failures):
        title = f"{row['nodeid']} — {row['configuration']}" + (" (expected)" if row["expected_violation"] else "")
        reason = row.get("message") or row["status_reason"] or ""
        blocks += [
            f'<h3 id="{get_failure_anchor(index)}">{escape(title)}</h3>',
            f"<p>rules {escape(', '.join(row['rule_ids'] or []))}; run {escape(row['run_id'])}; "
            f"seed <code>{escape(row['seed'])}</code></p>",
            f"<p>{escape(row['expected_violation'] or '')}</p>" if row["expected_violation"] else "",
            f"<pre>{html.escape(cut(reason, FULL_COPY))}</pre>",
            f"<p>replay: <code>{escape(get_replay_command(row))}</code></p>",
            f"<pre>{html.escape(cut(row['representation'], FULL_COPY))}</pre>",
        ]
    return blocks or ["<p>No failing tests.</p>"]


def render_html(results: Results, heat_map: bytes, spec_link: str = "../../spec") -> str:
    """One file, no external resources: tables, the counterexamples and the heat map as a data URI."""
    image = base64.b64encode(heat_map).decode()
    trend = [
        [r["run_id"], r["test_cases"], r["rules_exercised"], r["failures"], r["expected_failures"]]
        for r in results.trend
    ]
    quarantine = [[q["file"], q["line"], q["reason"]] for q in results.quarantine]
    parts = [
        "<!doctype html><html><head><meta charset='utf-8'><title>RocketMQ retry spec — coverage</title>",
        f"<style>{STYLE}</style></head><body><h1>Coverage of the spec rules</h1>",
        f'<img alt="rule x configuration heat map" src="data:image/png;base64,{image}">',
        "<h2>Rules x configurations (test cases)</h2>",
        *render_coverage_grid(results, spec_link),
        render_client_section(results.client_matrix),
        "<h2>Failures</h2>",
        *render_failure_blocks(results),
        "<h2>Trend</h2>",
        *render_rows(["run", "test cases", "rules", "failing", "expected"], trend),
        "<h2>Quarantined input</h2>",
        *render_rows(["file", "line", "reason"], quarantine),
        "</body></html>",
    ]
    return "\n".join(parts)
