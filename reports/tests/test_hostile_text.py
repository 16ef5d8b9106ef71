"""Text from report files is input an attacker may write: markup, terminal control bytes, bidirectional overrides
and very long lines, drawn into every text field of every record kind, must leave every output medium as plain
text. The HTML page and the Markdown outputs (rendered to HTML as the documentation site and a code host render
them) must have the same elements and attributes as with harmless text in the same places; the terminal's text
holds no hidden character; no line is unbounded."""

from __future__ import annotations

import json
import tempfile
from html.parser import HTMLParser
from pathlib import Path

import markdown
from hypothesis import given, settings
from hypothesis import strategies as st

from reportformat.escape import HIDDEN, to_code_span, to_markdown, to_terminal
from reports.differential import RECORDS_NAME
from reports.render_html import render_html
from reports.render_markdown import render_coverage_page, render_summary
from reports.results import Results
from reports.site_rules import render_rule_status
from reports.spec_rules import RULE_ID
from reports.tests.sample import RULES

PAYLOADS = [
    "<script>alert(1)</script>",
    '<img src=x onerror="alert(1)">',
    "</td></tr></table><h1>",
    "\x1b[2J\x1b[31m",
    "\x07\x00\x9b",
    "\u202eevil\u202c",
    "\u2066\u2069\u200f\u061c\ufeff",
    "```",
    "~~~",
    "`",
    "| x |",
    "*_[a](javascript:alert(1))_*",
    "{: onclick=alert(1)}",
    '" onmouseover="alert(1)',
    "&lt;b&gt;",
    "\r\n# heading\n- item\n",
    "!!! note\n    x",
    "A" * 6000,
]
hostile = st.lists(st.one_of(st.sampled_from(PAYLOADS), st.text(min_size=1)), min_size=1, max_size=4).map("".join)
# The site's Markdown extensions (mkdocs.yml), without syntax colouring (its spans follow the code's text).
EXTENSIONS = ["toc", "admonition", "attr_list", "tables", "pymdownx.details", "pymdownx.highlight",
              "pymdownx.superfences", "md_in_html"]
NO_COLOURING = {"pymdownx.highlight": {"use_pygments": False}}
MAX_LINE = 4000  # a replay command of cut words, the longest block text (2,000 characters) with its cut note


class Elements(HTMLParser):
    """The elements and attribute names of a page, in order; and the longest text between two tags."""

    def __init__(self, text: str):
        super().__init__(convert_charrefs=True)
        self.found: list[tuple[str, tuple[str, ...]]] = []
        self.feed(text)

    def handle_starttag(self, tag, attrs):
        self.found.append((tag, tuple(sorted(name for name, _ in attrs))))

    def handle_endtag(self, tag):
        self.found.append(("/" + tag, ()))


class Harmless(dict):
    """Plain text in place of each hostile text: equal texts stay equal and different ones different (a client is
    a column, a configuration a row), and the rule ids they name are kept (a claim that names a rule is shown
    beside it)."""

    def __call__(self, text: str) -> str:
        return self.setdefault(text, " ".join([f"x{len(self)}", *RULE_ID.findall(text)]))


def make_rows(text) -> dict:
    """One row of every table the renderers read, every text field from `text` (a function of the field name):
    run lines give configuration, run id, seed, profile, commit; test cases give node id, messages,
    counterexample, claim; verdicts give client name and version, rule, status, detail, counterexample; the
    quarantine gives file, reason and line text."""
    config = text("configuration")
    failure = {
        "run_id": text("run_id"), "started_at": 1.0, "configuration": config,
        "hypothesis_profile": text("profile"), "seed": text("seed"), "nodeid": text("nodeid"),
        "status_reason": text("status_reason"), "message": text("message"), "expected_violation": None,
        "representation": text("representation"), "reproduction_decorator": text("decorator"), "steps": 3,
        "rule_ids": ["AA-01"],
    }
    coverage = [
        {"rule_id": r.rule_id, "chapter": r.chapter, "configuration": config, "test_cases": n, "steps": 1,
         "runs": 1, "failures": 1 if r.rule_id == "AA-01" else 0, "expected_failures": 0}
        for r, n in zip(RULES, (3, 2, 0), strict=True)
    ]
    verdict = {"client_name": text("client_name"), "client_version": text("client_version"), "rule_id": "AA-01",
               "status": "deviates", "detail": text("detail"), "verdicts": 1, "runs": 1,
               "counterexample": text("counterexample")}
    unavailable = verdict | {"client_name": text("other_client"), "rule_id": None, "status": "unavailable"}
    return {
        "coverage": coverage,
        "failures": [failure, failure | {"expected_violation": text("claim"), "nodeid": text("refuted")}],
        "machine_cost": [{"machine": text("machine"), "timing_key": text("timing"), "seconds": 1.5, "test_cases": 2}],
        "rule_cost": [{"rule_id": "AA-01", "test_cases": 2, "seconds": 1.0, "attributed_seconds": 0.5}],
        "trend": [{"run_id": text("trend_run"), "git_commit": text("commit"), "configurations": 1, "test_cases": 3,
                   "rules_exercised": 2, "failures": 1, "expected_failures": 1, "writers": 2, "writers_finished": 1}],
        "quarantine": [{"file": text("file"), "line": 2, "reason": text("reason"), "text": text("line_text")}],
        "quarantine_by_reason": {text("reason"): 1},
        "client_matrix": [verdict, unavailable],
        "unknown_rules": [text("unknown_rule")],
    }


def write_differential_run(directory: Path, text) -> Path:
    """A run directory with a differential record and a conformance verdict record, their texts from `text`."""
    run = directory / "run"
    run.mkdir(parents=True)
    differential = {"rule": text("d_rule"), "backend": "model", "test": text("d_test"), "verdict": "differs",
                    "counterexample": text("d_counterexample")}
    (run / RECORDS_NAME).write_text(json.dumps(differential) + "\n", encoding="utf-8")
    verdict = {"type": "conformance_verdict", "client": {"name": text("v_name"), "version": text("v_version")},
               "rule": text("v_rule"), "status": text("v_status"), "backend": "model"}
    (run / "conformance-x.jsonl").write_text(json.dumps(verdict) + "\n", encoding="utf-8")
    return run


def render_every_medium(text) -> dict[str, str]:
    """The summary (printed to a terminal, and Markdown), the coverage page and each rule's site block (Markdown),
    and the HTML page, every text field from `text`."""
    rows = make_rows(text)
    with tempfile.TemporaryDirectory() as directory:
        results = Results(rules=RULES, runs_covered={"runs": 1}, cited_by_tests=set(), **rows)
        results.differential_run = write_differential_run(Path(directory), text)
        site_blocks = "\n\n".join("\n".join(render_rule_status(r.rule_id, results)) for r in RULES)
        return {
            "summary": render_summary(results, {"coverage page": text("output_path")}),
            "coverage": render_coverage_page(results),
            "site": site_blocks,
            "html": render_html(results, b"\x89PNG", site="site"),
        }


def to_html_page(text: str) -> str:
    return markdown.markdown(text, extensions=EXTENSIONS, extension_configs=NO_COLOURING)


@settings(deadline=None)
@given(st.data())
def test_hostile_text_in_every_field_leaves_every_medium_as_plain_text(data):
    drawn: dict[str, str] = {}

    def text(field: str) -> str:
        if field not in drawn:
            drawn[field] = data.draw(hostile, label=field)
        return drawn[field]

    found = render_every_medium(text)
    harmless = Harmless()
    expected = render_every_medium(lambda field: harmless(text(field)))
    assert HIDDEN.search(found["summary"]) is None  # what the job prints to the terminal
    assert Elements(found["html"]).found == Elements(expected["html"]).found
    pages = [found["html"]]
    for medium in ("summary", "coverage", "site"):
        pages.append(to_html_page(found[medium]))
        assert Elements(pages[-1]).found == Elements(to_html_page(expected[medium])).found, medium
        assert max(map(len, found[medium].splitlines())) <= MAX_LINE, medium
    for page in pages:
        assert "<script>alert" not in page and "\u202e" not in page and "\x1b" not in page


def test_each_medium_shows_the_text_itself():
    """Escaped, not lost: what a reader sees is the text, with the hidden characters named."""
    text = '<b>"x"</b> *y* \x1b[31m \u202e'
    assert to_terminal(text) == '<b>"x"</b> *y* \\x1b[31m \\u202e'
    rendered = to_html_page(to_markdown(text))
    assert rendered == "<p>&lt;b&gt;\"x\"&lt;/b&gt; *y* \\x1b[31m \\u202e</p>"
    assert to_html_page(to_code_span("a `b` c")) == "<p><code>a `b` c</code></p>"
    long = to_terminal("A" * 5000, limit=100, pointer="the table")
    assert long.startswith("A" * 100 + " …") and "5,000" in long and "the table" in long
    harmless = Harmless()
    assert [harmless("about AA-01 <b>"), harmless("<i>"), harmless("about AA-01 <b>")] == ["x0 AA-01", "x1", "x0 AA-01"]
