"""The full conformance run of ali-ons 3.12.0 (tox env `conformance-node`): Hypothesis draws the workloads every
client gets — messages with tags and delay levels, an outcome script per message and delivery (NULL included: a
Node listener can return it), broker faults, a restart — and the client's own maxReconsumeTimes, each on a fresh
model-backed server with a fresh group. ali-ons has no orderly consumer, so the families are CLUSTERING and
BROADCASTING concurrently. Every rule's verdict is recorded; an undeclared deviation, or a declared one
(conformance/checker/deviations.py) that a run should have shown and did not, fails with the workload and the wire
trace.

The counterexamples spec/13-clients.md cites (conformance/checker/deviations.py's COUNTEREXAMPLES) run as plain tests
and must show the deviations they are declared for.

Bounds: RMQSPEC_CONFORMANCE_EXAMPLES examples per family (default 8) of usually 3-8 s (conformance/runner/run.py's quiet
period, 6 s after a failed send-back), so the env stays within 5 minutes on 2 cores; a failure is shrunk by
re-running the client within conformance/suite/shrink.py's budget (RMQSPEC_SHRINK=1, conformance/suite/full_run.py).
"""

from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st

from conformance.checker.deviations import ALI_ONS
from conformance.history.workload import ALL_CONCURRENTLY_STATUSES
from conformance.runner.clients.node import get_unavailable_reason, open_node_consumer
from conformance.runner.workloads import workloads
from conformance.suite.full_run import (
    CLIENT_MAX_RECONSUME_TIMES,
    REAL,
    SCHEDULED_KINDS,
    check_counterexample,
    get_counterexamples,
    run_and_judge,
)

pytestmark = [pytest.mark.conformance, pytest.mark.timeout(280),
              pytest.mark.skipif(get_unavailable_reason() is not None, reason=str(get_unavailable_reason()))]

FAMILIES = {
    "clustering": workloads("concurrently", statuses=ALL_CONCURRENTLY_STATUSES, scheduled=SCHEDULED_KINDS),
    "broadcasting": workloads("concurrently", model="broadcasting", with_faults=False,
                              statuses=ALL_CONCURRENTLY_STATUSES),
}


@pytest.mark.parametrize("family", sorted(FAMILIES))
@REAL
@given(data=st.data())
def test_ali_ons_conforms_or_deviates_as_declared(tmp_path, family, data):
    workload = data.draw(FAMILIES[family], label="workload")
    client_max = data.draw(CLIENT_MAX_RECONSUME_TIMES, label="maxReconsumeTimes")
    run_and_judge(open_node_consumer, workload, client_max, str(tmp_path), "nfull")


@pytest.mark.parametrize("source", sorted(get_counterexamples(ALI_ONS)))
def test_each_declared_counterexample_shows_its_deviations(tmp_path, source):
    """ali-ons is single-threaded and deterministic here: every rule a counterexample is declared for deviates."""
    check_counterexample(open_node_consumer, ALI_ONS, source, str(tmp_path))
