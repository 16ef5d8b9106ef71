"""RocketMQ 5.3.3's own Java remoting client in POP mode (DefaultMQPushConsumer, client rebalance off, the broker's
defaultMessageRequestMode POP) on both 5.x backends (RMQSPEC_BACKEND, pop_fixtures.py): RocketMQ 5.3.3 (tox env
conformance-java5-pop) and the model-backed server (model, tox env conformance-java5-pop-model), pop_suite.py's POP
workloads judged against chapter 18's rules and the guarantees that apply without a proxy. The 5.x reference for the
remoting side: it declares no deviation, on either backend."""

from __future__ import annotations

import pytest

from conformance.runner.clients import java
from conformance.suite.pop_suite import get_params, require_client, run_and_judge_pop

pytest_plugins = ("conformance.suite.pop_fixtures",)
pytestmark = [pytest.mark.conformance, pytest.mark.timeout(300)]


@pytest.mark.parametrize(("workload", "rule"), get_params("pop"))
def test_java_pop_consumer_conforms(pop_target, workload, rule, tmp_path):
    require_client(java.get_pop_unavailable_reason())
    statuses = run_and_judge_pop(pop_target, java.open_java_pop_consumer, workload, str(tmp_path))
    assert "deviates" not in statuses.values() and statuses.get(rule) == "conforms", (rule, statuses)
