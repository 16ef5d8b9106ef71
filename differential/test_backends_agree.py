"""The differential itself: Hypothesis draws a request sequence (differential/steps.py), the same sequence goes to
the real broker and to the model-backed server under fresh names, and what each answered, parked and stored must
be the same; each backend's delayed messages must come out on time."""

from __future__ import annotations

import pytest
from hypothesis import given, settings

from differential.compare import Target, describe_differences, get_late_or_early, run_sequence
from differential.conftest import REAL_BROKER_NAME
from differential.steps import sequences


@pytest.fixture(scope="module")
def both(rocketmq, model_server) -> list[Target]:
    return [Target("rocketmq-4.9.8", rocketmq.broker_addr, REAL_BROKER_NAME),
            Target("model", model_server.broker_addr, model_server.settings.broker_name)]


@settings(max_examples=25, deadline=None)
@given(sequence=sequences)
def test_model_agrees_with_real_broker(both, sequence):
    outcomes = run_sequence(both, sequence)
    assert describe_differences(*outcomes.items()) == []
    assert [get_late_or_early(o) for o in outcomes.values()] == [[], []]
