"""pytest fixtures of the 5.x client suites (test_python5_full.py, test_node5_full.py, test_java5_pop.py): the
backend RMQSPEC_BACKEND names, as the 4.x suites take it — `model` (the default) the session's model-backed 5.x
server (pop_targets.py), `rocketmq-5.3.3` the session's RocketMQ 5.3.3 (proxy in local mode with its broker, 4.9.8
name server). Both run with the proxy's longest receive hold lowered from 20 s to its 5 s minimum
(pop_suite.LONG_POLLING_MS): a revived copy does not wake a held receive (differential/FACTS-5.3.3.md), so every
redelivery would otherwise wait for the hold to end, and a run of three attempts would take a minute. Clients see
only a shorter hold; the checks' bounds read it from the run (pop_checks.get_hold_ms).
"""

from __future__ import annotations

import pytest

from conformance.runner.backends import get_backend_name
from conformance.runner.backends.fixtures import get_logs_dir, run_session
from conformance.runner.backends.rocketmq5 import RocketMQ5Session
from conformance.suite.pop_suite import PROXY_CONF, PopTarget
from conformance.suite.pop_targets import open_model_pop_target

BACKENDS5 = ("model", "rocketmq-5.3.3")


@pytest.fixture(scope="session")
def rocketmq5_clients(request: pytest.FixtureRequest):
    """The session's one RocketMQ 5.3.3 for client runs, started at first use, always stopped, logs kept on failure."""
    session = RocketMQ5Session(get_logs_dir(request.config, "rocketmq5-logs"), proxy_conf=PROXY_CONF)
    yield from run_session(session, request, "RocketMQ 5.3.3")


@pytest.fixture(scope="session")
def pop_target(request: pytest.FixtureRequest):
    """The session's 5.x deployment as the runs use it: pop_suite.PopTarget on RocketMQ 5.3.3, or
    pop_targets.ModelPopTarget on the model-backed server."""
    name = get_backend_name()
    if name not in BACKENDS5:
        pytest.skip(f"the 5.x clients run where RMQSPEC_BACKEND is one of {', '.join(BACKENDS5)} (it is {name})")
    if name == "model":
        with open_model_pop_target(PROXY_CONF) as target:
            yield target
        return
    target = PopTarget(request.getfixturevalue("rocketmq5_clients"))
    yield target
    target.close()


@pytest.fixture(autouse=True)
def server_findings(request: pytest.FixtureRequest):
    """On the model-backed server a test ends in error when the server met a request it could not answer during
    it (ModelPopTarget.get_findings): a client's run must never lean on what the model lacks."""
    target = request.getfixturevalue("pop_target") if "pop_target" in request.fixturenames else None
    seen = len(target.get_findings()) if hasattr(target, "get_findings") else None
    yield
    if seen is not None:
        found = target.get_findings()[seen:]
        assert not found, f"the model-backed server could not answer: {found[:5]}"
