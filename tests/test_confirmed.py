"""Every broker rule of the spec says whether RocketMQ 4.9.8 confirmed it (a `- **Confirmed:**` line), and each
test a Confirmed line names exists in differential/ and is marked with that rule."""

from __future__ import annotations

import re

from differential.table import BROKER_RULES
from reports.spec_rules import ROOT

CONFIRMED = re.compile(r"^- \*\*Confirmed:\*\*(?P<text>.*(?:\n  .*)*)", re.MULTILINE)


def get_confirmed_lines() -> dict[str, str]:
    """rule id -> the text of its Confirmed line (joined over its continuation lines)."""
    found = {}
    for path in sorted((ROOT / "spec").glob("*.md")):
        for section in re.split(r"^### ", path.read_text(encoding="utf-8"), flags=re.MULTILINE)[1:]:
            match = CONFIRMED.search(section)
            if match:
                found[section.split(" ", 1)[0]] = " ".join(match["text"].split())
    return found


def get_marked_tests() -> dict[str, set[str]]:
    """test function name -> the rule ids of its @pytest.mark.rules marker, over differential/test_*.py."""
    marked: dict[str, set[str]] = {}
    for path in (ROOT / "differential").glob("test_*.py"):
        source = path.read_text(encoding="utf-8")
        for match in re.finditer(r"@pytest\.mark\.rules\(([^)]*)\)\n(?:@[^\n]*\n)*def (\w+)", source):
            marked[f"{path.stem}::{match[2]}"] = set(re.findall(r'"([A-Z]{2}-\d\d)"', match[1]))
    return marked


def test_every_broker_rule_has_a_confirmed_line():
    assert sorted(BROKER_RULES - set(get_confirmed_lines())) == []


def test_confirmed_lines_name_tests_marked_with_their_rule():
    marked, named = get_marked_tests(), 0
    for rule, text in get_confirmed_lines().items():
        for test in re.findall(r"`(test_\w+::test_\w+)`", text):
            named += 1
            assert rule in marked.get(test, set()), f"{rule}: {test} is not marked rules({rule!r})"
    assert named >= len(BROKER_RULES) // 2  # the lines do name tests (the pattern still matches them)


def test_every_marked_test_is_named_by_its_rules_confirmed_line():
    """The other way round: a differential test marked rules(X) for a broker rule X is named in X's Confirmed
    line, so the spec never under-states what RocketMQ 4.9.8 was checked by."""
    confirmed = get_confirmed_lines()
    missing = [(rule, test) for test, rules in get_marked_tests().items() for rule in sorted(rules & BROKER_RULES)
               if f"`{test}`" not in confirmed.get(rule, "")]
    assert missing == []
