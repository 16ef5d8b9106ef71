"""The full conformance run of ali-ons 3.12.0 (tox env `conformance-node`): Hypothesis draws the workloads every
client gets — messages with tags and delay levels, an outcome script per message and delivery (NULL included: a
Node listener can return it), broker faults, a restart — and the client's own maxReconsumeTimes, each on a fresh
model-backed server with a fresh group. ali-ons has no orderly consumer, so the families are CLUSTERING and
BROADCASTING concurrently. Every rule's verdict is recorded; an undeclared deviation, or a declared one
(conformance/deviations.py) that a run should have shown and did not, fails with the workload and the wire trace.

The counterexamples spec/13-clients.md cites (COUNTEREXAMPLES, smallest workloads that show each deviation) run
as plain tests and must deviate.

Bounds: RMQSPEC_CONFORMANCE_EXAMPLES examples per family (default 8) of usually 3-8 s (conformance/run.py's quiet
period, 6 s after a failed send-back), so the env stays within 5 minutes on 2 cores; no shrinking
(conformance/suite/full_run.py).
"""

from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st

from conformance.clients.node import get_unavailable_reason, open_node_consumer
from conformance.suite.full_run import CLIENT_MAX_RECONSUME_TIMES, REAL, run_and_judge
from conformance.workload import ALL_CONCURRENTLY_STATUSES, Fault, MessageSpec, Workload, workloads

pytestmark = [pytest.mark.conformance, pytest.mark.timeout(280),
              pytest.mark.skipif(get_unavailable_reason() is not None, reason=str(get_unavailable_reason()))]

FAMILIES = {
    "clustering": workloads("concurrently", statuses=ALL_CONCURRENTLY_STATUSES),
    "broadcasting": workloads("concurrently", model="broadcasting", with_faults=False,
                              statuses=ALL_CONCURRENTLY_STATUSES),
}
# The counterexamples of spec/13-clients.md: (workload, the client's maxReconsumeTimes).
COUNTEREXAMPLES = {
    "CC-04": (Workload((MessageSpec("m0", "TagA", 0, ("NULL",)),)), -1),
    "CC-06": (Workload((MessageSpec("m0", "TagA", 0, ("RECONSUME_LATER", "RECONSUME_LATER")),)), -1),
    "SY-06": (Workload((MessageSpec("m0", "TagA", 0, ("EXCEPTION",) * 2),), (Fault("send_back_error", "m0", 0),)), 1),
    "CC-07": (Workload((MessageSpec("m0", "TagA", 0, ("EXCEPTION",) * 4),),
                       (Fault("broker_not_writeable", "m0", 0), Fault("broker_not_writeable", "m0", 1))), 1),
}


@pytest.mark.parametrize("family", sorted(FAMILIES))
@REAL
@given(data=st.data())
def test_ali_ons_conforms_or_deviates_as_declared(tmp_path, family, data):
    workload = data.draw(FAMILIES[family], label="workload")
    client_max = data.draw(CLIENT_MAX_RECONSUME_TIMES, label="maxReconsumeTimes")
    run_and_judge(open_node_consumer, workload, client_max, str(tmp_path), "nfull")


@pytest.mark.parametrize("rule", sorted(COUNTEREXAMPLES))
def test_the_chapters_counterexample_shows_the_declared_deviation(tmp_path, rule):
    workload, client_max = COUNTEREXAMPLES[rule]
    _run, verdicts = run_and_judge(open_node_consumer, workload, client_max, str(tmp_path), "ncx")
    assert verdicts[rule] == "deviates", verdicts
