"""The documentation site: every chapter staged with its rules' coverage and counterexamples, links out of spec/
served by the site, and mkdocs' strict build failing on a broken link (tox env docs, the main job)."""

from __future__ import annotations

import html
import re
import shutil
from html.parser import HTMLParser

import pytest

from reports.results import Results, get_heading_anchor, get_replay_command
from reports.spec_rules import ROOT, get_spec_rules

site = pytest.importorskip("reports.site")
if not site.is_mkdocs_installed():  # the README's set-up installs it ('dev' includes 'docs')
    pytest.skip("mkdocs-material is not installed: pip install -e '.[docs]'", allow_module_level=True)
Abort = pytest.importorskip("mkdocs.exceptions").Abort

CONFIGS = ["4.9.8/clustering/concurrently/default", "5.0.0/clustering/orderly/tight"]
REFUTED, FAILING_TEST = "OR-15", "properties/test_x.py::test_refuted[5.0.0]"


def make_results() -> Results:
    """Every spec rule: 7 test cases in the first configuration, the first rule of each chapter a gap in the
    second; one expected refutation of OR-15 whose case marked other rules too."""
    rules = get_spec_rules()
    firsts = {rule.chapter: rule.rule_id for rule in reversed(rules)}
    coverage = [
        {"rule_id": r.rule_id, "chapter": r.chapter, "configuration": c, "steps": 0, "runs": 1, "failures": 0}
        | {"test_cases": 0 if (c == CONFIGS[1] and r.rule_id in firsts.values()) else 7, "expected_failures": 0}
        for r in rules
        for c in CONFIGS
    ]
    failure = {
        "run_id": "r1",
        "started_at": 1.0,
        "configuration": CONFIGS[1],
        "hypothesis_profile": "ci",
        "seed": "1234",
        "nodeid": FAILING_TEST,
        "status_reason": "",
        "message": "AssertionError: poison <message> cycles",
        "expected_violation": f"refutation: {REFUTED} refuted on 5.0.0 (#6163): %RETRY%<group> forever",
        "representation": "state = Machine()\nstate.fail(times=17)\n```\nstate.teardown()",
        "reproduction_decorator": None,
        "steps": 2,
        "rule_ids": ["SY-01", REFUTED],
    }
    return Results(rules, coverage, [failure], [], [], [], [], [], {}, runs_covered={"runs": 1})


class Ids(HTMLParser):
    def __init__(self):
        super().__init__()
        self.ids, self.links = set(), []

    def handle_starttag(self, tag, attrs):
        found = dict(attrs)
        if "id" in found:
            self.ids.add(found["id"])
        if tag == "a" and found.get("href"):
            self.links.append(found["href"])


def parse(path) -> Ids:
    parser = Ids()
    parser.feed(path.read_text(encoding="utf-8"))
    return parser


@pytest.fixture(scope="module")
def built(tmp_path_factory):
    out = tmp_path_factory.mktemp("site-out")
    results = make_results()
    return results, site.write_site(results, out, heat_map=b"\x89PNG fake")


def test_every_chapter_is_a_page_with_every_rule_heading_and_its_coverage(built):
    results, root = built
    for rule in results.rules:
        page = root / rule.chapter.replace(".md", ".html")
        text = page.read_text(encoding="utf-8")
        assert get_heading_anchor(rule) in parse(page).ids, rule.rule_id
        assert f"{rule.rule_id} coverage:" in text
    first = results.rules[0]
    page = (root / first.chapter.replace(".md", ".html")).read_text(encoding="utf-8")
    assert f"{first.rule_id} coverage: partial · 1/2 configurations · 7 test cases" in page
    assert f"no test case marked {first.rule_id}): {CONFIGS[1]}." in page


def test_a_counterexample_is_shown_under_the_rule_its_claim_names_with_its_replay_command(built):
    results, root = built
    row = results.failures[0]
    orderly = (root / "12-orderly.html").read_text(encoding="utf-8")
    section = orderly.split(f'id="{get_heading_anchor(next(r for r in results.rules if r.rule_id == REFUTED))}"')[1]
    text = html.unescape(re.sub(r"<[^>]+>", "", section.split("<h3", 1)[0]))
    assert "Counterexample (expected refutation): test_refuted[5.0.0]" in text
    assert "%RETRY%<group> forever" in text and "state.fail(times=17)" in text and "poison <message>" in text
    assert get_replay_command(row) in text
    # SY-01 was marked by the failing case too, but the refutation is not about it.
    assert "test_refuted" not in (root / "11-guarantees.html").read_text(encoding="utf-8")


def test_links_out_of_spec_are_pages_of_the_site_and_no_link_is_broken(built):
    _, root = built
    checked = 0
    for page in sorted(set(root.rglob("*.html")) - {root / "404.html"}):  # 404.html is for a server, from its root
        for href in parse(page).links:
            if re.match(r"[a-z]+:", href) or href.startswith("#"):
                continue
            path, _, fragment = href.partition("#")
            target = (page.parent / path).resolve()
            assert target.exists(), f"{page.relative_to(root)} links {href}"
            if fragment and target.suffix == ".html":
                assert fragment in parse(target).ids, f"{page.relative_to(root)} links {href}"
            checked += 1
    assert checked > 500
    # A Model line leads to the function: its page has an anchor of the name where the definition starts.
    assert "source/model/client/concurrently.py.html#compute_ack_index" in parse(root / "08-concurrently.html").links
    concurrently = root / "source" / "model" / "client" / "concurrently.py.html"
    after = concurrently.read_text(encoding="utf-8").split('id="compute_ack_index"', 1)[1]
    assert "compute_ack_index" in re.sub(r"<[^>]+>", "", after)[:300]
    assert "08-concurrently.html" in {h.split("#")[0] for h in parse(root / "index.html").links}
    assert "../model/" not in (root / "08-concurrently.html").read_text(encoding="utf-8")


def test_the_nav_lists_every_chapter():
    config = (ROOT / "mkdocs.yml").read_text(encoding="utf-8")
    nav = re.findall(r"^  - (?:.*: )?(\S+\.md)$", config, flags=re.M)
    assert nav == ["index.md", *sorted(p.name for p in (ROOT / "spec").glob("[0-9]*.md")), "coverage.md"]


def test_a_broken_link_in_a_chapter_fails_the_strict_build(tmp_path, caplog):
    spec = tmp_path / "spec"
    shutil.copytree(ROOT / "spec", spec)
    chapter = spec / "03-store.md"
    broken = "\nSee [nowhere](../model/nowhere.py) and [no heading](04-delay-timer.md#no-such-rule).\n"
    chapter.write_text(chapter.read_text(encoding="utf-8") + broken)
    site.stage_site(None, tmp_path / "stage", spec=spec)
    with pytest.raises(Abort, match="Aborted with 2 warnings in strict mode"):
        site.build_site(tmp_path / "stage", tmp_path / "site")
    assert "'../model/nowhere.py'" in caplog.text and "03-store.md" in caplog.text
    assert "does not contain an anchor '#no-such-rule'" in caplog.text
