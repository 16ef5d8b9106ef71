"""The full conformance run of apache/rocketmq-client-go v2.1.2 (tox env `conformance-go`), on both 4.x backends: the
model-backed server and RocketMQ 4.9.8's own name server and broker (the session's one, in the loopback-only
namespace the env runs in; outside one the real backend's tests are skipped with the reason).

On each backend Hypothesis draws the workloads the other 4.x clients get — messages with tags and delay levels, an
outcome script per message and delivery (NULL included), request faults, a restart, and RMQSPEC_SCHEDULED_FAULTS'
process faults — with the client's own maxReconsumeTimes, in three families: CLUSTERING concurrently, CLUSTERING
orderly, BROADCASTING concurrently. Each request fault kind also runs once as an explicit example on each backend.
Every rule's verdict is recorded; an undeclared deviation, or a declared one (conformance/checker/deviations_go.py)
that a run should have shown and did not, fails with the workload and the wire trace (shrunk with RMQSPEC_SHRINK=1).

The orderly families draw no EXCEPTION: the client does not recover a panic in its orderly consume loop, so the
process dies (test_an_orderly_listener_panic_kills_the_client shows it; OR-04 is not applicable to this client).

Bounds: RMQSPEC_CONFORMANCE_EXAMPLES examples per family and backend (the env sets 4), each usually 6-12 s (the
orderly consumer's first pull waits 3 s, history/timers.py), one RocketMQ start (~15-30 s): the env stays within
10 minutes on 2 cores.
"""

from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st

from conformance.checker.deviations_go import GO
from conformance.history.workload import ALL_CONCURRENTLY_STATUSES, FAULT_KINDS, Fault, MessageSpec, Workload
from conformance.runner.backends.fixtures import rocketmq  # noqa: F401 - the session's real broker, when asked
from conformance.runner.backends.loopback import is_loopback_only
from conformance.runner.backends.model import open_model_backend
from conformance.runner.backends.real_run import open_real_backend
from conformance.runner.clients.golang import get_unavailable_reason, open_go_consumer
from conformance.runner.workloads import workloads
from conformance.suite.full_run import (
    CLIENT_MAX_RECONSUME_TIMES,
    REAL,
    SCHEDULED_KINDS,
    check_counterexample,
    get_counterexamples,
    run_and_judge,
    run_case,
)

pytestmark = [pytest.mark.conformance, pytest.mark.timeout(420),
              pytest.mark.skipif(get_unavailable_reason() is not None, reason=str(get_unavailable_reason()))]

REAL_BROKER = "rocketmq-4.9.8"
# Every orderly answer but EXCEPTION (a panic kills the process: see the module's docstring).
ORDERLY_STATUSES = ("SUCCESS", "SUSPEND_CURRENT_QUEUE_A_MOMENT", "NULL", "COMMIT", "ROLLBACK")
FAMILIES = {
    "clustering": workloads("concurrently", statuses=ALL_CONCURRENTLY_STATUSES, scheduled=SCHEDULED_KINDS),
    "orderly": workloads("orderly", with_faults=False, statuses=ORDERLY_STATUSES),
    "broadcasting": workloads("concurrently", model="broadcasting", with_faults=False,
                              statuses=ALL_CONCURRENTLY_STATUSES),
}


@pytest.fixture(params=["model", REAL_BROKER])
def backend(request):
    """(open_backend, fresh_topic): the model-backed server (a fresh one per run), or the session's RocketMQ 4.9.8 (a
    fresh topic per run: it keeps its topics), which needs the loopback-only namespace."""
    if request.param == "model":
        return open_model_backend, False
    if not is_loopback_only():
        pytest.skip("RocketMQ 4.9.8 runs only in a loopback-only network namespace: run the session through "
                    "`python -m conformance.runner.backends.loopback python -m pytest ...` (tox run -e conformance-go)")
    broker = request.getfixturevalue("rocketmq")
    return (lambda settings, workload: open_real_backend(broker, settings, workload)), True


@pytest.mark.parametrize("family", sorted(FAMILIES))
@REAL
@given(data=st.data())
def test_go_client_conforms_or_deviates_as_declared(tmp_path, backend, family, data):
    workload = data.draw(FAMILIES[family], label="workload")
    client_max = data.draw(CLIENT_MAX_RECONSUME_TIMES, label="maxReconsumeTimes")
    run_and_judge(open_go_consumer, workload, client_max, str(tmp_path), "gfull", *backend)


@pytest.mark.parametrize("kind", FAULT_KINDS)
def test_each_fault_kind_on_each_backend(tmp_path, backend, kind):
    """m0 fails once with the fault on the send-back after its first delivery (a pull fault: the first pull); m1
    succeeds: judged like any run, on both backends."""
    workload = Workload((MessageSpec("m0", "TagA", 0, ("RECONSUME_LATER",)), MessageSpec("m1", "TagB")),
                        (Fault(kind, "m0", 0),))
    run_and_judge(open_go_consumer, workload, -1, str(tmp_path), "gfault", *backend)


@pytest.mark.parametrize("source", sorted(get_counterexamples(GO)))
def test_each_declared_counterexample_shows_its_deviations(tmp_path, source):
    """The counterexamples spec/13-clients.md cites, on the model-backed server: every rule each is declared for
    deviates (one consume goroutine per message: the client is deterministic here)."""
    check_counterexample(open_go_consumer, GO, source, str(tmp_path))


def test_an_orderly_listener_panic_kills_the_client(tmp_path):
    """OR-04's case for Go: a listener that panics in the orderly consume loop takes the whole process down (Go's
    exit status 2 after the panic's trace), which the driver reports as an adapter that exited before it was
    stopped."""
    workload = Workload((MessageSpec("m0", "TagA", 0, ("EXCEPTION",)),), mode="orderly")
    with pytest.raises(RuntimeError, match="exited before it was stopped") as raised:
        run_case(open_go_consumer, workload, -1, str(tmp_path), "gpanic")
    assert "panic" in str(raised.value) and "consumeMessageOrderly" in str(raised.value)
