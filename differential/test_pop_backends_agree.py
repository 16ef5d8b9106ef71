"""The 5.x differential: Hypothesis draws a sequence of POP, ack, changeInvisibleTime, receive, gRPC ack, change,
forward, offset and settings requests with waits across revives (differential/pop_steps.py), over subscription
groups with each retry policy and retryMaxTimes and a FIFO group; the same sequence goes in lockstep to RocketMQ
5.3.3 and to the model-backed 5.x server (differential/pop_compare.py), and every step's observation, the retry and
DLQ topics after each wait and at the end must be the same, and every retry copy must come within the revive
service's bounds after the invisible time it came back from.

A failing example is not shrunk (each replay costs seconds of revive waits on both backends): its whole sequence is
printed, and `@example` or the Hypothesis database replays it.
"""

from __future__ import annotations

import pytest
from hypothesis import HealthCheck, Phase, event, given, settings

from differential.pop_compare import (
    describe_pop_differences,
    get_coverage,
    get_lags_out_of_bounds,
    run_pop_sequence,
)
from differential.pop_probe import requires_5x
from differential.pop_steps import sequences

pytestmark = requires_5x
BOTH = ("rocketmq-5.3.3", "model")
EXAMPLES = 20  # about 2 minutes on both backends at once (benchmarks/NOTES.md)
SETTINGS = settings(max_examples=EXAMPLES, deadline=None, phases=(Phase.explicit, Phase.reuse, Phase.generate),
                    suppress_health_check=list(HealthCheck))


@pytest.fixture(scope="module")
def both_pop(real_pop_backend, model_pop_backend):
    return {"rocketmq-5.3.3": real_pop_backend, "model": model_pop_backend}


@pytest.mark.rules("PO-03", "PO-05", "PO-07", "PO-08", "PO-09", "IV-01", "IV-02", "IV-05", "PD-02", "PD-03", "PD-04",
                   "PD-05", "PD-06", "RP-03", "FF-01", "FF-02", "FF-03", "FF-04", "PG-01", backends=BOTH)
@SETTINGS
@given(sequence=sequences)
def test_model_agrees_with_rocketmq_5(both_pop, sequence):
    outcomes = run_pop_sequence(both_pop, sequence)
    for covered in sorted(get_coverage(outcomes["model"])):
        event(covered)
    assert describe_pop_differences(outcomes) == [], sequence
    assert {name: get_lags_out_of_bounds(o) for name, o in outcomes.items()} == {name: [] for name in outcomes}
