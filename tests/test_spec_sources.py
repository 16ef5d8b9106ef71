"""Every rule's Source cites apache/rocketmq by permalink at a profile's tag or a full commit, with a line range.

The permalinks are resolved against a real copy of RocketMQ by ``tox run -e spec-permalinks`` (it needs one);
here the form is checked, and the checker itself is shown each kind of bad citation.
"""

from __future__ import annotations

import pytest

from reports.spec_rules import get_spec_rules
from tests.spec_permalinks import PROFILE_TAGS, get_source_problems, get_sources

SOURCES = get_sources()
BASE = "https://github.com/apache/rocketmq/blob"
FILE = "broker/src/main/java/org/apache/rocketmq/broker/processor/SendMessageProcessor.java"


def test_every_rule_has_a_source():
    assert sorted(rule.rule_id for rule in get_spec_rules() if not SOURCES.get(rule.rule_id)) == []


@pytest.mark.parametrize("rule_id", sorted(SOURCES))
def test_source_stands_alone(rule_id):
    assert get_source_problems(SOURCES[rule_id]) == []


def test_profile_tags_are_the_releases():
    assert PROFILE_TAGS == {"rocketmq-all-4.9.1", "rocketmq-all-4.9.8", "rocketmq-all-5.0.0", "rocketmq-all-5.3.3"}


@pytest.mark.parametrize(
    "source, problem",
    [
        ("SMP 4.9.8 `asyncConsumerSendMsgBack` L126-L133", "no permalink"),
        (f"`SendMessageProcessor` {BASE}/rocketmq-all-4.9.8/{FILE}#L126-L133; SMS 4.9.8 L58", "'SMS'"),
        (f"the DLQ branch {BASE}/rocketmq-all-4.9.8/{FILE}#L191-L198 (reference §4.2)", "'§'"),
        (f"the DLQ branch {BASE}/rocketmq-all-4.9.7/{FILE}#L191-L198", "'rocketmq-all-4.9.7' is neither"),
        (f"the DLQ branch {BASE}/develop/{FILE}#L191-L198", "'develop' is neither"),
        (f"the DLQ branch {BASE}/8fc57f1468d1/{FILE}#L191-L198", "'8fc57f1468d1' is neither"),
        (f"the DLQ branch {BASE}/rocketmq-all-4.9.8/{FILE}", "no line anchor"),
        (f"the DLQ branch {BASE}/rocketmq-all-4.9.8/{FILE}#L191-198", "no line anchor"),
        (f"the DLQ branch {BASE}/rocketmq-all-4.9.8/{FILE}#L0", "no line anchor"),
        (f"the DLQ branch {BASE}/rocketmq-all-4.9.8/{FILE}#L198-L191", "ends before it starts"),
    ],
)
def test_a_bad_citation_is_named(source, problem):
    assert any(problem in found for found in get_source_problems(source))


@pytest.mark.parametrize(
    "source",
    [
        f"rule CC-01 and PQ-04: the DLQ branch [4.9.8 L191-L198]({BASE}/rocketmq-all-4.9.8/{FILE}#L191-L198)",
        f"one line {BASE}/rocketmq-all-5.3.3/{FILE}#L209 and develop "
        f"{BASE}/8fc57f1468d182eea11c01e089c0250d647dc5f3/{FILE}#L209-L209",
    ],
)
def test_a_good_citation_passes(source):
    assert get_source_problems(source) == []
