"""Every rule of the client half has a status for every client: judged by a check, not applicable (declared per
client), or not judged with a reason (conformance/checker/rules.py) — and the table names only rules the spec has."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from conformance.checker.deviations import NOT_APPLICABLE
from conformance.checker.differential import DIFFERENTIAL_RULES, INVARIANT_RULES
from conformance.checker.rules import JUDGED, NOT_JUDGED, is_client_rule
from conformance.checker.verdicts import CHECKS

SPEC = Path(__file__).resolve().parents[2] / "spec"
HEADING = re.compile(r"^### ([A-Z]{2,3}-\d\d) ", re.MULTILINE)
SPEC_RULES = {rule for path in SPEC.glob("[0-9]*.md") for rule in HEADING.findall(path.read_text())}
CLIENTS = sorted({client for _rule, client in NOT_APPLICABLE} | {("any other client", "")})


def test_the_spec_has_client_rules_to_judge():
    assert len({r for r in SPEC_RULES if is_client_rule(r)}) > 80


def test_a_rule_is_either_judged_or_not_judged_never_both():
    assert set(JUDGED).isdisjoint(NOT_JUDGED)


def test_the_judged_rules_are_exactly_those_a_check_can_answer():
    assert set(JUDGED) == set(CHECKS) | set(INVARIANT_RULES) | set(DIFFERENTIAL_RULES)


def test_the_table_names_only_client_rules_of_the_spec():
    named = set(JUDGED) | set(NOT_JUDGED) | {rule for rule, _client in NOT_APPLICABLE}
    assert named - SPEC_RULES == set()
    assert {rule for rule in named if not is_client_rule(rule)} == set()


@pytest.mark.parametrize("client", CLIENTS, ids=str)
def test_every_client_rule_has_a_status_for_the_client(client):
    declared = {rule for rule, who in NOT_APPLICABLE if who == client}
    statused = set(JUDGED) | set(NOT_JUDGED) | declared
    assert {rule for rule in SPEC_RULES if is_client_rule(rule)} - statused == set()
