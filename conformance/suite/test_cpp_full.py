"""The full conformance run of rocketmq-client-cpp 1.2.3 (tox env `conformance-cpp`): Hypothesis draws workloads
— messages with tags and delay levels, an outcome script per message and delivery, broker faults, a restart — and
each runs on a fresh model-backed server with a fresh group. Every rule's verdict is recorded; an undeclared
deviation, or a declared one that a run should have shown and did not, fails with the workload, the wire trace and
(RMQSPEC_SHRINK=1, as in the tox env) each problem's shrunk workload and replay command (conformance/suite/full_run.py).

Bounds: RMQSPEC_CONFORMANCE_EXAMPLES examples per test (default 8) of at most ~10 s each (conformance/runner/run.py's
quiet period and limits), so the env stays within 5 minutes on 2 cores; a failure's shrinking adds at most
conformance/suite/shrink.py's budget.
"""

from __future__ import annotations

import pytest
from hypothesis import given

from conformance.checker.deviations import CPP
from conformance.runner.clients.cpp import get_unavailable_reason, open_cpp_consumer
from conformance.runner.workloads import workloads
from conformance.suite.full_run import (
    REAL,
    SCHEDULED_KINDS,
    check_counterexample,
    get_counterexamples,
    run_and_judge,
)

pytestmark = [pytest.mark.conformance, pytest.mark.timeout(280),
              pytest.mark.skipif(get_unavailable_reason() is not None, reason=str(get_unavailable_reason()))]

def check(workload, tmp_path):
    """One run of `workload` with the client's default maxReconsumeTimes (1.2.3 has no setting), judged."""
    run_and_judge(open_cpp_consumer, workload, -1, str(tmp_path))


@REAL
@given(workloads("concurrently", scheduled=SCHEDULED_KINDS))
def test_concurrently_consumer_conforms_or_deviates_as_declared(tmp_path, workload):
    check(workload, tmp_path)


@REAL
@given(workloads("orderly", with_faults=False))
def test_orderly_consumer_conforms_or_deviates_as_declared(tmp_path, workload):
    check(workload, tmp_path)


@REAL
@given(workloads("concurrently", model="broadcasting", with_faults=False))
def test_broadcasting_consumer_conforms_or_deviates_as_declared(tmp_path, workload):
    check(workload, tmp_path)


@pytest.mark.parametrize("source", sorted(get_counterexamples(CPP)))
def test_each_declared_counterexample_shows_its_deviations(tmp_path, source):
    """The counterexamples spec/13-clients.md cites: each deviation with a `when` must show; the others (the C++
    threads decide them) are judged like any run."""
    check_counterexample(open_cpp_consumer, CPP, source, str(tmp_path), certain=False)
