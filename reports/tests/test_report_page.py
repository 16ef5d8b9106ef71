"""index.html for a person: the headline first, every failure with its replay command, rules linked into the
documentation site, other tables through `sections`, nothing loaded from the network."""

from __future__ import annotations

import re

from reports.render_html import SPEC_LINK, render_html
from reports.results import get_replay_command
from reports.tests.sample import RULES
from reports.tests.test_summary import failure, make_results


def test_the_headline_comes_before_everything_else_with_its_figures():
    results = make_results([failure(2), failure(1, expected="refutation: AA-02 is not kept")])
    page = render_html(results, b"png")
    figures = dict(re.findall(r'data-figure="([a-z-]+)"[^>]*>([^<]*)<', page))
    assert figures == {
        "exercised": "2",
        "rules": "3",
        "gaps": "1",
        "unexpected-failures": "1",
        "expected-refutations": "1",
        "quarantined": "0",
        "interrupted": "0",
        "seconds": "2.5",
        "runs": "9",
        "configurations": "1",
    }
    assert page.index('id="headline"') < page.index("<h2")
    assert 'Gaps (no test case marked them): <a href="#bb-01">BB-01</a>' in page


def test_every_failure_has_its_replay_command_and_the_unexpected_ones_come_first():
    rows = [failure(2, expected="refutation: AA-02 is not kept"), failure(1)]
    page = render_html(make_results(rows), b"")
    assert page.index("p.py::test_1") < page.index("p.py::test_2")
    for row in rows:
        assert get_replay_command(row) in page
    assert page.count('<code class="replay">') == 2


def test_rules_link_into_the_site_when_it_was_built_else_to_the_chapters():
    results = make_results([])
    with_site, without = render_html(results, b"", site="site"), render_html(results, b"")
    assert '<a href="site/01-a.html#aa-01-first">AA-01</a>' in with_site
    assert '<a href="site/index.html">' in with_site and SPEC_LINK not in with_site
    assert f'<a href="{SPEC_LINK}/01-a.md#aa-01-first">AA-01</a>' in without and "site/index.html" not in without
    assert len(RULES) == with_site.count("site/0")


def test_other_tables_join_through_sections_and_nothing_comes_from_the_network():
    page = render_html(make_results([]), b"\x89PNG", sections=[("Rules x clients", "<table id='clients'></table>")])
    assert '<h2 id="rules-x-clients">Rules x clients</h2>\n<table id=\'clients\'></table>' in page
    assert page.index("rules-x-clients") < page.index('id="rules"')
    assert re.findall(r'src="([^"]+)', page) == ["data:image/png;base64,iVBORw=="]
    assert not re.findall(r'href="[a-z]+:|<link|<script|@import|url\(', page)
