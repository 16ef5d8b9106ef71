"""PyPI rocketmq-python-client 5.1.2 on both 5.x backends (RMQSPEC_BACKEND, pop_fixtures.py): RocketMQ 5.3.3's proxy
(rocketmq-5.3.3, tox env conformance-python5) and the model-backed server's proxy (model, tox env
conformance-python5-model): every SimpleConsumer and push-listener workload of pop_suite.py, judged against the 5.x
rules (conformance/checker/pop_verdicts.py) with the client's declared deviations
(conformance/checker/deviations5.py), which must hold on both."""

from __future__ import annotations

import pytest

from conformance.runner.clients import python5
from conformance.suite.pop_suite import get_outcomes, get_params, require_client, run_and_judge_pop

pytest_plugins = ("conformance.suite.pop_fixtures",)
pytestmark = [pytest.mark.conformance, pytest.mark.timeout(300)]


@pytest.mark.parametrize(("workload", "rule"), get_params("simple", "push"))
def test_python5_client_conforms_or_deviates_as_declared(pop_target, workload, rule, tmp_path):
    require_client(python5.get_unavailable_reason())
    statuses = run_and_judge_pop(pop_target, python5.open_python5_consumer, workload, str(tmp_path))
    assert statuses.get(rule) in get_outcomes(workload), (rule, statuses)
