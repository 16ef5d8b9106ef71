"""The comparison itself: one backend against itself under two sets of fresh names must show no difference, so a
difference between two backends is theirs, not the normalisation's."""

from __future__ import annotations

from hypothesis import given, settings

from differential.compare import Target, describe_differences, get_late_or_early, run_sequence
from differential.steps import sequences


@settings(max_examples=15, deadline=None)
@given(sequence=sequences)
def test_real_broker_agrees_with_itself(rocketmq, sequence):
    target = Target("rocketmq", rocketmq.broker_addr, "broker-a")
    twin = Target("rocketmq-again", rocketmq.broker_addr, "broker-a")
    outcomes = run_sequence([target, twin], sequence)
    assert describe_differences(*outcomes.items()) == []
    assert [get_late_or_early(o) for o in outcomes.values()] == [[], []]
