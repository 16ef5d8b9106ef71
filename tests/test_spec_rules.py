"""Every rule in spec/ is implemented in model/ and checked in properties/, and nothing cites an unknown rule."""

from collections import Counter

import pytest

from reports.spec_rules import ROOT, get_cited_rule_ids, get_spec_rules

RULES = get_spec_rules()
DEFINED = {rule.rule_id for rule in RULES}


def test_spec_defines_rules():
    assert len(DEFINED) >= 10


def test_each_rule_is_defined_once():
    assert [rule_id for rule_id, n in Counter(r.rule_id for r in RULES).items() if n > 1] == []


@pytest.mark.parametrize("directory", ["model", "properties"])
def test_every_spec_rule_is_cited(directory):
    missing = sorted(DEFINED - get_cited_rule_ids(ROOT / directory).keys())
    assert missing == [], f"rules in spec/ that {directory}/ never cites"


@pytest.mark.parametrize("directory", ["model", "properties"])
def test_every_cited_rule_is_in_the_spec(directory):
    unknown = {k: sorted(v) for k, v in get_cited_rule_ids(ROOT / directory).items() if k not in DEFINED}
    assert unknown == {}, f"{directory}/ cites rules that spec/ does not define"
