"""npm rocketmq-client-nodejs (the version node5/package-lock.json pins) against the real RocketMQ 5.3.3 proxy
(RMQSPEC_BACKEND=rocketmq-5.3.3, tox env conformance-node5): every SimpleConsumer and push-listener workload of
pop_suite.py, judged against the 5.x rules with the client's declared deviations
(conformance/checker/deviations5.py)."""

from __future__ import annotations

import pytest

from conformance.runner.clients import node5
from conformance.suite.pop_suite import get_outcomes, get_params, require_client, run_and_judge_pop

pytest_plugins = ("conformance.suite.pop_fixtures",)
pytestmark = [pytest.mark.conformance, pytest.mark.timeout(300)]


@pytest.mark.parametrize(("workload", "rule"), get_params("simple", "push"))
def test_node5_client_conforms_or_deviates_as_declared(pop_target, workload, rule, tmp_path):
    require_client(node5.install_client() or node5.get_unavailable_reason())
    statuses = run_and_judge_pop(pop_target, node5.open_node5_consumer, workload, str(tmp_path))
    assert statuses.get(rule) in get_outcomes(workload), (rule, statuses)
