"""spec/13-clients.md and conformance/checker/deviations.py agree: every declared deviation appears in the chapter under
its client and rule (a `#### <client> <version> · <rule>` entry) with the same source permalink, counterexample, causes
and measured frequency, and
the chapter names no other deviation; each client's not-applicable rules are the declared ones; every judged rule is in
the chapter's table of what a conforming client must do."""

from __future__ import annotations

import re
from pathlib import Path

from conformance.checker.deviations import COUNTEREXAMPLES, DECLARED, NOT_APPLICABLE
from conformance.checker.deviations5 import COUNTEREXAMPLES5, DECLARED5, NOT_APPLICABLE5
from conformance.checker.pop_checks import POP_CHECKS
from conformance.checker.rules import JUDGED

CHAPTER = Path(__file__).resolve().parents[2] / "spec" / "13-clients.md"
ENTRY = re.compile(r"^#### (?P<name>\S+) (?P<version>\S+) · (?P<rule>[A-Z]{2,3}-\d\d)$")
SECTION = re.compile(r"^## (?P<name>\S+) (?P<version>\d\S*)")
SOURCE = re.compile(r"^- \*\*Source:\*\* \[[^\]]+\]\((?P<url>[^)]+)\)$")
COUNTEREXAMPLE = re.compile(r"^- \*\*Counterexample:\*\* (?:`(?P<source>.+)`|none recorded by a run yet)$")
CAUSES = re.compile(r"^- \*\*Causes:\*\* (?P<names>.+)$")
SHOWS_IN = re.compile(r"^- \*\*Shows in:\*\* (?P<text>.+)$")
WHEN_TEXT = "every run where it can (a declared `when`)"
NOT_APPLICABLE_LINE = re.compile(r"^- \*\*Not applicable:\*\* (?P<rules>[A-Z0-9, -]+?) — ")


def read_chapter(text: str) -> tuple[dict, dict]:
    """({(rule, (client, version)): {"source": url, "counterexample": text}}, {client: not-applicable rules})."""
    entries: dict = {}
    absent: dict = {}
    current, section = None, None
    for line in text.splitlines():
        if match := SECTION.match(line):
            section, current = (match["name"], match["version"]), None
        elif match := ENTRY.match(line):
            current = entries.setdefault((match["rule"], (match["name"], match["version"])), {})
        elif match := NOT_APPLICABLE_LINE.match(line):
            absent.setdefault(section, set()).update(r.strip() for r in match["rules"].split(","))
        elif current is not None and (match := SOURCE.match(line)):
            current["source"] = match["url"]
        elif current is not None and (match := COUNTEREXAMPLE.match(line)):
            current["counterexample"] = match["source"] or ""
        elif current is not None and (match := CAUSES.match(line)):
            current["causes"] = tuple(match["names"].split("; "))
        elif current is not None and (match := SHOWS_IN.match(line)):
            current["shows in"] = match["text"]
    return entries, absent


def get_declared_entries() -> dict:
    """Every declared deviation, of the 4.x clients and the 5.x ones (deviations5.py), as the chapter shows it."""
    counterexamples = {**COUNTEREXAMPLES, **COUNTEREXAMPLES5}
    return {(d.rule, d.client): {"source": d.source, "counterexample": counterexamples.get((d.rule, d.client), ""),
                                 "causes": tuple(cause.name for cause in d.causes),
                                 "shows in": WHEN_TEXT if d.when is not None
                                 else d.frequency or "some runs only (not yet measured)"}
            for d in (*DECLARED, *DECLARED5)}


def test_every_declared_deviation_is_in_the_chapter_and_nothing_else():
    entries, _absent = read_chapter(CHAPTER.read_text(encoding="utf-8"))
    assert entries == get_declared_entries()


def test_each_declared_deviation_names_its_counterexample_once():
    assert set(COUNTEREXAMPLES) == {(d.rule, d.client) for d in DECLARED}
    assert set(COUNTEREXAMPLES5) == {(d.rule, d.client) for d in DECLARED5}
    declared = (*DECLARED, *DECLARED5)
    assert len({(d.rule, d.client) for d in declared}) == len(declared)


def test_each_clients_not_applicable_rules_are_the_declared_ones():
    _entries, absent = read_chapter(CHAPTER.read_text(encoding="utf-8"))
    declared: dict = {}
    for rule, client in (*NOT_APPLICABLE, *NOT_APPLICABLE5):
        declared.setdefault(client, set()).add(rule)
    assert absent == declared


def test_the_chapter_lists_every_judged_rule():
    text = CHAPTER.read_text(encoding="utf-8")
    assert {rule for rule in (*JUDGED, *POP_CHECKS) if f"| [{rule}](" not in text} == set()


def test_a_changed_declaration_is_caught():
    """The reader sees a source, a counterexample and an entry that differ from the declarations."""
    text = CHAPTER.read_text(encoding="utf-8")
    declared = get_declared_entries()
    first = DECLARED[0]
    changed = [
        text.replace(first.source, first.source.replace("#L", "#L1")),
        text.replace(f"· {first.rule}\n", "· XX-99\n", 1),
        text.replace("- **Counterexample:** `", "- **Counterexample:** `x", 1),
        text.replace(f"- **Causes:** {first.causes[0].name}", "- **Causes:** any loss", 1),
        text.replace("- **Shows in:** 20 of 20", "- **Shows in:** 19 of 20", 1),
    ]
    for version in changed:
        assert read_chapter(version)[0] != declared
