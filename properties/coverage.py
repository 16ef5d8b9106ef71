"""The spec rules a model step says it exercised, recorded as Hypothesis events — the coverage the reports
aggregate — after checking that each is a rule spec/ defines.

The model tags its answers and observations with rule ids (`Outcome.rules`, `SendResult.rules`, an observation's
`rules`); the reports credit a rule with every test case whose events name it. A tag that names no rule (a typo, a
computed id gone wrong) would silently move coverage, so a step whose answer carries one fails here.
"""

from __future__ import annotations

from collections.abc import Iterable

from hypothesis import event

from reports.spec_rules import get_spec_rules

SPEC_RULE_IDS = frozenset(rule.rule_id for rule in get_spec_rules())


def record_rules(rule_ids: Iterable[str]) -> None:
    """Records each rule id as a Hypothesis event, once; fails naming the ids spec/ does not define."""
    rule_ids = set(rule_ids)
    unknown = sorted(map(repr, rule_ids - SPEC_RULE_IDS))
    assert not unknown, f"the model tagged its answer with rules spec/ does not define: {', '.join(unknown)}"
    for rule_id in sorted(rule_ids):
        event(rule_id)
