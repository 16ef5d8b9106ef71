"""Drawn workloads for the 5.x clients against the real RocketMQ 5.3.3 (RMQSPEC_BACKEND=rocketmq-5.3.3, tox env
conformance-5-drawn, outside CI): per client and consumer API, RMQSPEC_POP_EXAMPLES workloads drawn by
conformance/suite/pop_draw.py, each run judged against the 5.x rules with the client's declared deviations; a
problem (an undeclared or vanished deviation, an adapter error) fails with the smallest workload that still shows
it (RMQSPEC_SHRINK=1). `-k python5`, `-k node5`, `-k java5-pop` run one client."""

from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st

from conformance.runner.clients import java, node5, python5
from conformance.suite.pop_draw import DRAWN, pop_workloads, run_drawn
from conformance.suite.pop_suite import require_client

pytest_plugins = ("conformance.suite.pop_fixtures",)
pytestmark = [pytest.mark.conformance, pytest.mark.timeout(3600)]

# Client -> (how to open one, why this machine cannot run it, the APIs it has).
CLIENTS5 = {
    "python5": (python5.open_python5_consumer, python5.get_unavailable_reason, ("simple", "push")),
    "node5": (node5.open_node5_consumer, lambda: node5.install_client() or node5.get_unavailable_reason(),
              ("simple", "push")),
    "java5-pop": (java.open_java_pop_consumer, java.get_pop_unavailable_reason, ("pop",)),
}


@pytest.mark.parametrize(("client", "api"), [(c, api) for c, (_, _, apis) in CLIENTS5.items() for api in apis])
@DRAWN
@given(data=st.data())
def test_drawn_workloads_conform_or_deviate_as_declared(pop_target, client, api, data, tmp_path):
    open_client, get_reason, _apis = CLIENTS5[client]
    require_client(get_reason())
    workload = data.draw(pop_workloads(api), label="workload")
    statuses = run_drawn(pop_target, open_client, workload, str(tmp_path))
    assert statuses, workload  # a judged run has a verdict per rule
