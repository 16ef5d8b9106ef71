"""The report page for a person (index.html): the headline first, every failure with its replay command, the heat
map, rules x configurations linked into the documentation site; one file, no network (inline CSS, the PNG as a data
URI). Other tables join through `sections` (heading, HTML) of render_html."""

from __future__ import annotations

import base64
import html
from collections.abc import Sequence
from pathlib import PurePosixPath

from reportformat.escape import INLINE_LIMIT, to_html
from reports.render_clients import render_client_section
from reports.render_markdown import format_time, get_costliest, get_reason
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
from reports.spec_rules import Rule, slugify

STYLE = """
body { font: 14px/1.45 system-ui, sans-serif; margin: 2em auto; max-width: 1250px; padding: 0 1em; color: #222; }
table { border-collapse: collapse; margin: 1em 0; } td, th { border: 1px solid #ccc; padding: 2px 8px; }
th { background: #f3f3f3; } td.n { text-align: right; } td.gap { background: #fde2e2; }
td.fail { background: #f8b4b4; font-weight: bold; }
td.ok { background: #dcf2dd; } td.na { color: #666; } p.legend { font-size: .9em; color: #444; max-width: 60em; }
pre { background: #f6f8fa; padding: 8px; overflow-x: auto; }
:target { outline: 2px solid #3178c6; } img { max-width: 100%; }
#headline { font-size: 1.25em; background: #f6f8fa; border-left: 6px solid #3178c6; padding: .6em 1em; }
#headline .bad { color: #b42318; font-weight: bold; } #headline b { font-size: 1.2em; }
nav a { margin-right: 1.2em; } code.replay { display: block; white-space: pre-wrap; background: #fff8e6; padding: 6px; }
h3 { margin-top: 1.6em; } details { margin: .5em 0; }
"""
# Where a rule's text is: the documentation site's page when it was built beside the report (`site`), else the raw
# chapter.
SPEC_LINK = "../../spec"
MAX_GAPS = 20  # gaps named in the headline; the rules table shows every one
Section = tuple[str, str]


def get_rule_link(rule: Rule, site: str | None) -> str:
    if site is None:
        return f"{SPEC_LINK}/{rule.chapter}#{get_heading_anchor(rule)}"
    return f"{site}/{PurePosixPath(rule.chapter).stem}.html#{get_heading_anchor(rule)}"


FULL_COPY = "the representation column of the Parquet table failures"


def escape(value: object) -> str:
    """HTML text of a short value from the reports (reportformat/escape.py's to_html, cut at a line's length)."""
    return to_html(value, INLINE_LIMIT)


def cell(value: object, css: str = "") -> str:
    return f'<td class="{css}">{escape(value)}</td>'


def render_coverage_grid(results: Results, site: str | None) -> list[str]:
    configs = results.configurations
    head = "".join(f"<th>{escape(c)}</th>" for c in configs)
    rows = [f"<table><tr><th>rule</th><th>title</th><th>status</th>{head}</tr>"]
    for rule in results.rules:
        status = STATUS_MARK[results.get_rule_totals(rule.rule_id)["status"]]
        link = f'<a href="{html.escape(get_rule_link(rule, site))}">{rule.rule_id}</a>'
        cells = []
        for config in configs:
            found = results.get_cell(rule.rule_id, config) or {"test_cases": 0, "failures": 0}
            css = "n fail" if found["failures"] else "n gap" if not found["test_cases"] else "n"
            cells.append(cell(found["test_cases"], css))
        anchor = get_rule_anchor(rule.rule_id)
        rows.append(f'<tr id="{anchor}"><td>{link}</td>{cell(rule.title)}{cell(status)}{"".join(cells)}</tr>')
    return rows + ["</table>"]


def render_rows(header: list[str], rows: list[list[object]]) -> list[str]:
    head = "".join(f"<th>{html.escape(h)}</th>" for h in header)
    body = ["<tr>" + "".join(cell(v, "n" if isinstance(v, int | float) else "") for v in row) + "</tr>" for row in rows]
    return [f"<table><tr>{head}</tr>", *body, "</table>"]


def figure(key: str, value: object, bad: bool = False) -> str:
    """A headline figure; `data-figure` names it for the browser test."""
    css = ' class="bad"' if bad else ""
    return f'<b data-figure="{key}"{css}>{escape(value)}</b>'


def counted(key: str, count: int, noun: str, bad: bool | None = None) -> str:
    """``<b>1</b> run``: a headline figure with its noun in the right number (bad: shown in red when not 0)."""
    return f"{figure(key, count, bool(count) if bad is None else bad)} {plural(count, noun).split(' ', 1)[1]}"


def render_headline(results: Results, site: str | None) -> list[str]:
    """Rules exercised / total, gaps, unexpected failures, expected refutations, quarantined lines, cost, runs."""
    h = results.get_headline()
    configs = results.configurations
    rule_links = {rule.rule_id: rule for rule in results.rules}
    shown = [f'<a href="#{get_rule_anchor(g)}">{g}</a>' for g in h["gaps"][:MAX_GAPS] if g in rule_links]
    more = len(h["gaps"]) - MAX_GAPS
    gaps = ", ".join(shown) + (f" and {more} more (the rules table)" if more > 0 else "") if shown else "none"
    parts = [
        '<section id="headline"><p>',
        f"{figure('exercised', h['exercised'])}/{figure('rules', h['rules'])} spec rules exercised · "
        f"{counted('gaps', len(h['gaps']), 'gap', bool(h['gaps']))} · "
        f"{counted('unexpected-failures', h['unexpected_failures'], 'unexpected failure')} · "
        f"{counted('expected-refutations', h['expected_refutations'], 'expected refutation', False)} · "
        f"{counted('quarantined', h['quarantined'], 'quarantined input line')} · "
        f"{counted('interrupted', len(h['interrupted_runs']), 'interrupted run')} · "
        f"{figure('seconds', format(h['seconds'], ',.1f'))} s of test cases</p>",
        f"<p>Covers {counted('runs', h['runs'], 'run', False)}, started {escape(format_time(h['first_started_at']))} "
        f"to {escape(format_time(h['last_started_at']))}, in "
        f"{counted('configurations', len(configs), 'configuration', False)} ({escape(', '.join(configs) or 'none')})."
        "</p>",
        f"<p>Gaps (no test case marked them): {gaps}.</p>",
        f"<p>Interrupted runs: {escape(', '.join(h['interrupted_runs']))}.</p>" if h["interrupted_runs"] else "",
        "</section>",
    ]
    nav = ['<a href="#clients">rules x clients</a>']
    nav += [f'<a href="{site}/index.html">the specification (documentation site)</a>'] if site else []
    nav += ['<a href="#failures">failures</a>', '<a href="#heat-map">heat map</a>', '<a href="#rules">rules</a>']
    nav += [f'<a href="{site}/coverage.html">coverage per rule</a>'] if site else []
    return parts + ["<nav>" + "".join(nav) + "</nav>"]


def render_failure(index: int, row: dict) -> list[str]:
    """One failure: what failed where, its own message, the replay command, the shrunk counterexample."""
    title = f"{row['nodeid']} — {row['configuration']}" + (" (expected)" if row["expected_violation"] else "")
    return [
        f'<h3 id="{get_failure_anchor(index)}">{escape(title)}</h3>',
        f"<p>rules {escape(', '.join(row['rule_ids'] or []) or '(none marked)')}; run {escape(row['run_id'])}; "
        f"seed <code>{escape(row['seed'])}</code></p>",
        f"<p>{escape(row['expected_violation'])}</p>" if row["expected_violation"] else "",
        f"<pre>{to_html(get_reason(row), pointer=FULL_COPY)}</pre>" if get_reason(row) else "",
        '<p>replay (from the repository root):</p><code class="replay">'
        f"{to_html(get_replay_command(row), REPLAY_LIMIT)}</code>",
        f"<details{'' if row['expected_violation'] else ' open'}><summary>shrunk counterexample "
        f"({escape(row.get('steps') or '—')} steps)</summary>"
        f"<pre>{to_html(row['representation'], pointer=FULL_COPY)}</pre></details>",
    ]


def render_failure_blocks(results: Results) -> list[str]:
    """Unexpected failures first, then the expected refutations (each newest first)."""
    blocks = ['<h2 id="failures">Unexpected failures</h2>']
    for index, row in results.unexpected_failures:
        blocks += render_failure(index, row)
    if not results.unexpected_failures:
        blocks.append("<p>No unexpected failures.</p>")
    blocks.append('<h2 id="refutations">Expected refutations (claims RocketMQ does not keep)</h2>')
    for index, row in results.expected_failures:
        blocks += render_failure(index, row)
    if not results.expected_failures:
        blocks.append("<p>No expected refutations.</p>")
    return blocks


def render_cost(results: Results) -> list[str]:
    slow, rules = get_costliest(results)
    return [
        '<h2 id="cost">Cost</h2>',
        *render_rows(["slowest tests / machines", "seconds"], [[name, round(secs, 3)] for name, secs in slow]),
        *render_rows(
            ["costliest rules", "seconds (shared among the rules a case marked)", "test cases"],
            [[r["rule_id"], round(r["attributed_seconds"], 3), r["test_cases"]] for r in rules],
        ),
    ]


def render_sections(sections: Sequence[Section]) -> list[str]:
    """Tables other parts of the project add (e.g. rules x clients): a heading and its HTML each."""
    return [f'<h2 id="{slugify(title)}">{html.escape(title)}</h2>\n{body}' for title, body in sections]


def render_html(results: Results, heat_map: bytes, site: str | None = None, sections: Sequence[Section] = ()) -> str:
    """One file, no external resources: the headline, failures with replay commands, the heat map as a data URI,
    `sections`, rules x configurations, cost, trend, quarantine. `site`: the documentation site's directory
    relative to the page (rule links go there), or None to link the raw chapters."""
    image = base64.b64encode(heat_map).decode()
    trend = [
        [r["run_id"], r["test_cases"], r["rules_exercised"], r["failures"], r["expected_failures"]]
        for r in results.trend
    ]
    quarantine = [[q["file"], q["line"], q["reason"]] for q in results.quarantine]
    parts = [
        "<!doctype html><html lang='en'><head><meta charset='utf-8'>",
        "<title>RocketMQ retry spec — conformance report</title>",
        f"<style>{STYLE}</style></head><body><h1>RocketMQ retry spec — conformance report</h1>",
        *render_headline(results, site),
        # What a client author comes for, on the first screen: the rule x client matrix.
        render_client_section(results.client_matrix),
        *render_failure_blocks(results),
        '<h2 id="heat-map">Heat map: rules x configurations</h2>',
        f'<img alt="rule x configuration heat map, a panel per chapter" src="data:image/png;base64,{image}">',
        *render_sections(sections),
        '<h2 id="rules">Rules x configurations (test cases)</h2>',
        *render_coverage_grid(results, site),
        *render_cost(results),
        '<h2 id="trend">Trend</h2>',
        *render_rows(["run", "test cases", "rules", "failing", "expected"], trend),
        '<h2 id="quarantine">Quarantined input</h2>',
        *render_rows(["file", "line", "reason"], quarantine),
        "</body></html>",
    ]
    return "\n".join(parts)
