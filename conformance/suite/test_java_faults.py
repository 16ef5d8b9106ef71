"""The reference under every fault kind (tox envs `conformance-java-faults`, on the model-backed server, and
`conformance-java-faults-real`, on RocketMQ 4.9.8's own broker): RocketMQ's Java client 4.9.8 runs CLUSTERING
concurrently workloads that carry request faults (a send-back answered with an error or never answered, the broker
not writeable, the fallback's first attempt refused, a pull error) and a schedule of process faults (the broker
read-only, killed and restarted, the name server stopped, the client restarted or killed), on the backend
RMQSPEC_BACKEND names. Each fault kind has its own explicit example first; then RMQSPEC_CONFORMANCE_EXAMPLES drawn
workloads (20 in the tox envs) draw from all of them. The reference declares no deviation: any deviation fails,
shrunk, with its replay command (RMQSPEC_SHRINK=1).
"""

from __future__ import annotations

import pytest
from hypothesis import example, given

from conformance.history.workload import (
    ALL_CONCURRENTLY_STATUSES,
    FAULT_KINDS,
    SCHEDULED_FAULT_KINDS,
    AfterDelivery,
    Fault,
    MessageSpec,
    ScheduledFault,
    Workload,
)
from conformance.runner.backends import get_backend_name
from conformance.runner.backends.fixtures import rocketmq  # noqa: F401 - the session's real broker, when asked
from conformance.runner.backends.model import open_model_backend
from conformance.runner.backends.real_run import open_real_backend
from conformance.runner.clients.java import get_unavailable_reason, open_java_consumer
from conformance.runner.workloads import workloads
from conformance.suite.full_run import CLIENT_MAX_RECONSUME_TIMES, REAL, run_and_judge

pytestmark = [pytest.mark.conformance, pytest.mark.timeout(900),
              pytest.mark.skipif(get_unavailable_reason() is not None, reason=str(get_unavailable_reason()))]

# m0 fails once with the fault on the send-back after its first delivery (a pull fault: the first pull); m1 succeeds.
FAILING = (MessageSpec("m0", "TagA", 0, ("RECONSUME_LATER",)), MessageSpec("m1", "TagB"))


def with_request_fault(kind: str) -> Workload:
    return Workload(FAILING, (Fault(kind, "m0", 0),))


def with_scheduled_fault(kind: str) -> Workload:
    return Workload(FAILING, schedule=(ScheduledFault(kind, AfterDelivery("m0", 0), 2000),))


def add_examples(test):
    """One explicit example per fault kind, before the drawn ones: every kind is run, whatever the draw."""
    for kind in FAULT_KINDS:
        test = example(workload=with_request_fault(kind), client_max=-1)(test)
    for kind in SCHEDULED_FAULT_KINDS:
        test = example(workload=with_scheduled_fault(kind), client_max=-1)(test)
    return test


@pytest.fixture
def backend(request):
    """(open_backend, fresh_topic) of the backend RMQSPEC_BACKEND names: the real broker is the session's one (a
    fresh topic per run: it keeps its topics)."""
    if get_backend_name() == "rocketmq-4.9.8":
        broker = request.getfixturevalue("rocketmq")
        return (lambda settings, workload: open_real_backend(broker, settings, workload)), True
    return open_model_backend, False


@REAL
@add_examples
@given(workload=workloads("concurrently", statuses=ALL_CONCURRENTLY_STATUSES, scheduled=SCHEDULED_FAULT_KINDS),
       client_max=CLIENT_MAX_RECONSUME_TIMES)
def test_the_reference_conforms_under_every_fault_kind(tmp_path, backend, workload, client_max):
    open_backend, fresh_topic = backend
    run_and_judge(open_java_consumer, workload, client_max, str(tmp_path), "jfault", open_backend, fresh_topic)


def test_every_fault_kind_has_its_example():
    kinds = {f.kind for w in map(with_request_fault, FAULT_KINDS) for f in w.faults}
    kinds |= {s.kind for w in map(with_scheduled_fault, SCHEDULED_FAULT_KINDS) for s in w.schedule}
    assert kinds == set(FAULT_KINDS) | set(SCHEDULED_FAULT_KINDS)
