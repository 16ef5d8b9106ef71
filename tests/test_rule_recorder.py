"""properties/coverage.py records a model step's rule tags as coverage only when spec/ defines each one."""

import pytest

from properties.coverage import SPEC_RULE_IDS, record_rules


def test_the_spec_defines_the_rules_the_recorder_knows():
    assert {"SB-04", "RS-14", "OS-04"} <= SPEC_RULE_IDS
    assert all(rule_id == rule_id.upper() for rule_id in SPEC_RULE_IDS)


@pytest.mark.parametrize("tag", ["rs-02", "XXRS-03XX", "", "SB-99"])
def test_a_tag_that_names_no_rule_fails_with_its_name(tag):
    with pytest.raises(AssertionError, match=repr(tag)):
        record_rules(("SB-04", tag))

