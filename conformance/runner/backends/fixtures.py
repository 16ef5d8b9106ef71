"""pytest fixtures of the real backend (``pytest_plugins = ("conformance.runner.backends.fixtures",)``).

``rocketmq``: the session's one real name server + broker, started at its first use in the loopback-only
namespace with the settings table's broker configuration, stopped and its store removed at the session's end;
its logs are copied to ``<reports dir>/<run id>/rocketmq-logs`` when a test of the session failed.
``rocketmq5``: the same for RocketMQ 5.3.3's proxy with its broker (logs to ``rocketmq5-logs``), only where
``RMQSPEC_BACKEND=rocketmq-5.3.3``; ``real_pop_backend``: the POP probes' interface to it (pop_backend.py), and
``model_pop_backend`` the same interface to the session's model-backed 5.x server.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from conformance.runner.backends.rocketmq import RocketMQ, RocketMQSession
from conformance.runner.backends.settings_table import get_real_broker_conf


def get_logs_dir(config: pytest.Config, name: str = "rocketmq-logs") -> Path:
    from runenv import run_context

    run = getattr(config, "rmqspec_run", None)
    run_id = run["run_id"] if run else run_context.get_run_id()
    return run_context.get_reports_dir() / run_id / name


def run_session(session, request: pytest.FixtureRequest, label: str):
    """Yields the started backend of `session` (open/close), its logs kept when a test of the session failed."""
    backend = session.open()
    yield backend
    kept = session.close(failed=request.session.testsfailed > 0)
    if kept is not None:
        print(f"\n{label} logs kept in {kept}")


@pytest.fixture(scope="session")
def rocketmq(request: pytest.FixtureRequest) -> RocketMQ:
    yield from run_session(RocketMQSession(get_real_broker_conf(), get_logs_dir(request.config)), request, "RocketMQ")


@pytest.fixture(scope="session")
def model_server():
    """The session's one model-backed server (conformance/runner/server/) with the settings table's model half, on
    loopback in the session's namespace; examples are isolated by fresh names, as on the real broker."""
    from conformance.runner.backends.settings_table import get_model_broker_settings
    from conformance.runner.server.runner import run_server

    with run_server(get_model_broker_settings()) as runner:
        yield runner.server


@pytest.fixture(scope="session")
def broker_backend(request: pytest.FixtureRequest):
    """The backend ``RMQSPEC_BACKEND`` names, for the client conformance runs: an object with ``namesrv_addr`` and
    ``broker_addr``. ``rocketmq-4.9.8`` is the session's real broker (the run must be inside the loopback-only
    namespace); ``model`` is the session's model-backed server."""
    from conformance.runner.backends import get_backend_name

    if get_backend_name() == "rocketmq-4.9.8":
        return request.getfixturevalue("rocketmq")
    return request.getfixturevalue("model_server")


@pytest.fixture(scope="session")
def rocketmq5(request: pytest.FixtureRequest):
    """The session's one RocketMQ 5.3.3 (proxy in local mode with its broker, and the 4.9.8 name server), started at
    its first use, stopped at the session's end (also after a failure or Ctrl-C: pytest tears session fixtures down),
    its logs kept when a test of the session failed."""
    from conformance.runner.backends import get_backend_name
    from conformance.runner.backends.rocketmq5 import RocketMQ5Session

    if get_backend_name() != "rocketmq-5.3.3":
        pytest.skip("RMQSPEC_BACKEND is not rocketmq-5.3.3")
    session = RocketMQ5Session(get_logs_dir(request.config, "rocketmq5-logs"))
    yield from run_session(session, request, "RocketMQ 5.3.3")


@pytest.fixture(scope="session")
def model_pop_backend():
    """The POP probes' backend on the session's model-backed server with the 5.3.3 profile (POP requests and the
    proxy's gRPC service, pop_backend.open_model_pop_backend), started at its first use, always stopped."""
    from conformance.runner.backends.pop_backend import open_model_pop_backend

    with open_model_pop_backend() as backend:
        yield backend


@pytest.fixture(scope="session")
def real_pop_backend(rocketmq5):
    """The POP probes' backend (pop_backend.PopBackend) on the session's RocketMQ 5.3.3."""
    from conformance.runner.backends.pop_backend import RealPopBackend

    backend = RealPopBackend(rocketmq5.broker_addr, rocketmq5.proxy_grpc_addr)
    yield backend
    backend.close()
