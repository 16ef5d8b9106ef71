"""The full conformance run of rocketmq-client-cpp 1.2.3 (tox env `conformance-cpp`): Hypothesis draws workloads
— messages with tags and delay levels, an outcome script per message and delivery, broker faults, a restart — and
each runs on a fresh model-backed server with a fresh group. Every rule's verdict is recorded; an undeclared
deviation, or a declared one that a run should have shown and did not, fails with the shrunk workload.

Bounds: RMQSPEC_CONFORMANCE_EXAMPLES examples per test (default 8) of at most ~10 s each (conformance/runner/run.py's
quiet period and limits), so the env stays within 5 minutes on 2 cores.
"""

from __future__ import annotations

import os

import pytest
from attrs import evolve
from hypothesis import HealthCheck, given, settings

from conformance.checker.deviations import CPP
from conformance.harness import SETTINGS, get_fresh_names, judge_run
from conformance.runner.backends.model import open_model_backend
from conformance.runner.clients.cpp import get_unavailable_reason, open_cpp_consumer
from conformance.runner.run import run_workload
from conformance.runner.workloads import workloads
from conformance.suite.full_run import SCHEDULED_KINDS, check_counterexample, get_counterexamples

pytestmark = [pytest.mark.conformance, pytest.mark.timeout(280),
              pytest.mark.skipif(get_unavailable_reason() is not None, reason=str(get_unavailable_reason()))]

EXAMPLES = int(os.environ.get("RMQSPEC_CONFORMANCE_EXAMPLES", "8"))
REAL = settings(max_examples=EXAMPLES, deadline=None, database=None,
                suppress_health_check=[HealthCheck.too_slow, HealthCheck.function_scoped_fixture])


def check(workload, tmp_path):
    group, instance = get_fresh_names("full")
    run = run_workload(open_model_backend, workload, evolve(SETTINGS, group=group), instance,
                       str(tmp_path))
    judge_run(run, repr(workload))


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
