"""The report page and the documentation site in a real browser (Debian's chromium, headless, file://): the
headline figures the page shows are the aggregate's own Parquet tables' figures, no link of the page or of the site
pages it leads to is broken, and screenshots are saved beside the page (reports/out/browser/).

Not part of the default test command (its file name is not `test_*.py`: the default run cannot install a browser):
`tox run -e browser` installs chromium and runs this file. Run directly without chromium or mkdocs-material, every
test fails naming what is missing."""

from __future__ import annotations

import re
import shutil

import pytest

from reports import job
from reports.browser import Browser, dump_dom, find_chromium, take_screenshot
from reports.site import SITE, is_mkdocs_installed
from reports.spec_rules import ROOT
from reports.tests.sample import BASELINE, CONFORMANCE, TIGHT, case, meta, write_lines

CHROMIUM = find_chromium()


@pytest.fixture(autouse=True)
def require_browser_and_site_builder():
    assert CHROMIUM is not None, "chromium is not on PATH (apt-get install chromium; tox run -e browser installs it)"
    assert is_mkdocs_installed(), "mkdocs-material is not installed (pip install -e '.[docs]')"

OUT = ROOT / "reports" / "out" / "browser"
CLAIM = "refutation: OR-15 refuted on 5.0.0 (#6163): a poison message keeps cycling through %RETRY%<group>"


def write_runs(root):
    """Two configurations of one run, real rule ids: passing cases, an expected refutation, an unexpected failure;
    clients' verdicts (the sample's)."""
    run = root / "runs" / "b1"
    run.mkdir(parents=True)
    for writer, config, cases in (
        (
            "local-gw0",
            BASELINE,
            [("test_a", "passed", ["SB-04", "CC-03"], None), ("test_b", "failed", ["CC-03"], None)],
        ),
        ("local-gw1", TIGHT, [("test_a", "passed", ["SB-04"], None), ("test_c", "failed", ["OR-15", "SY-01"], CLAIM)]),
    ):
        lines = [meta("run started", "b1", writer, config)]
        for name, status, rules, claim in cases:
            extra = {"run_id": "b1", "representation": f"{name}(x=1)", "expected_violation": claim}
            lines.append(case(writer, f"p.py::{name}", status, rules, 0.5, **extra))
        write_lines(run / f"{writer}.jsonl", lines + [meta("run finished", "b1", writer, config, finished=110.0)])
    write_lines(run / "conformance-local-main.jsonl", [line | {"run_id": "b1"} for line in CONFORMANCE])
    return root / "runs"


def get_table_headline(spark, tables: str) -> dict[str, str]:
    """The headline figures, computed here from the aggregate's Parquet tables (not from the renderers' Results)."""
    coverage = spark.read.parquet(f"{tables}/coverage").where("chapter IS NOT NULL")
    rules = coverage.groupBy("rule_id").agg({"test_cases": "sum"}).collect()
    exercised = sum(1 for row in rules if row["sum(test_cases)"])
    failures = spark.read.parquet(f"{tables}/failures")
    seconds = spark.read.parquet(f"{tables}/machine_cost").agg({"seconds": "sum"}).first()[0] or 0.0
    return {
        "exercised": str(exercised),
        "rules": str(len(rules)),
        "gaps": str(len(rules) - exercised),
        "unexpected-failures": str(failures.where("expected_violation IS NULL").count()),
        "expected-refutations": str(failures.where("expected_violation IS NOT NULL").count()),
        "seconds": f"{seconds:,.1f}",
        "runs": str(spark.read.parquet(f"{tables}/runs_covered").first()["runs"]),
        "configurations": str(coverage.select("configuration").distinct().count()),
    }


@pytest.fixture(scope="module")
def report(spark, tmp_path_factory):
    """The aggregate of the runs above over the real spec, written as the main job writes it, in OUT."""
    root = tmp_path_factory.mktemp("browser")
    runs, warehouse, tables = write_runs(root), str(root / "warehouse"), str(root / "tables")
    job.ingest(spark, [str(runs)], warehouse)
    results = job.aggregate(spark, warehouse, tables, last=5)
    shutil.rmtree(OUT, ignore_errors=True)
    job.write_site(results, OUT, tables)
    return {"tables": tables, "page": OUT / "index.html", "site": OUT / SITE}


def test_the_page_shows_the_headline_of_the_aggregates_own_tables(spark, report):
    dom = Browser(CHROMIUM).load(report["page"])
    shown = dict(dom.figures)
    expected = get_table_headline(spark, report["tables"])
    assert {key: shown[key] for key in expected} == expected
    assert expected["unexpected-failures"] == "1" and expected["expected-refutations"] == "1"
    assert take_screenshot(CHROMIUM, report["page"], OUT / "screenshots" / "report.png").stat().st_size > 10_000


def test_no_link_of_the_page_or_of_the_site_pages_it_leads_to_is_broken(report):
    browser = Browser(CHROMIUM)
    broken, remote = browser.find_broken_links(report["page"])
    assert broken == [] and remote == []  # self-contained: nothing from the network
    site_pages = sorted(p for p in browser.doms if report["site"] in p.parents)
    assert {p.name for p in site_pages} >= {"index.html", "coverage.html", "08-concurrently.html", "12-orderly.html"}
    for page in site_pages:
        broken, _ = browser.find_broken_links(page, follow=False)
        assert broken == [], page.name
    screenshot = take_screenshot(CHROMIUM, report["site"] / "12-orderly.html", OUT / "screenshots" / "site.png")
    assert screenshot.stat().st_size > 10_000


PROBE = """<script>
const matrix = document.getElementById("clients").getBoundingClientRect();
document.body.dataset.matrixTop = Math.round(matrix.top);
document.body.dataset.screen = window.innerHeight;
</script></body>"""
# Emoji and dingbats that Debian's headless chromium drew as empty boxes (✅ ❌ ⚠️ ◐).
NOT_EVERYWHERE = re.compile("[\u2600-\u27bf\u25d0-\u25ff\U0001f000-\U0001faff\ufe0f]")


def test_the_first_screen_shows_the_client_matrix_anchored_in_the_navigation_with_a_legend(report, tmp_path):
    """At 1280 x 800 the rule x client matrix starts on the first screen; the navigation links to it; a legend says
    what each cell means; no symbol needs a font the browser may lack; counts have the right plural."""
    page = report["page"].read_text(encoding="utf-8")
    probe = report["page"].with_name("first-screen-probe.html")
    probe.write_text(page.replace("</body>", PROBE, 1), encoding="utf-8")
    dom = dump_dom(CHROMIUM, probe, "--window-size=1280,800")
    probe.unlink()
    found = dict(re.findall(r'data-(matrix-top|screen)="(\d+)"', dom))
    assert 0 < int(found["matrix-top"]) < int(found["screen"]) <= 800, found
    links = Browser(CHROMIUM).load(report["page"])
    assert "#clients" in links.links[: links.links.index("#failures")]  # in the navigation, first
    assert 'class="legend"' in dom and "n/a: the client lacks the feature" in dom
    assert NOT_EVERYWHERE.findall(dom) == []
    text = re.sub(r"<[^>]+>", "", dom)
    assert "Covers 1 run," in text and not re.search(r"\b1 (runs|gaps|configurations|cases)\b", text)
    take_screenshot(CHROMIUM, report["page"], OUT / "screenshots" / "first-screen.png", size="1280,800")
