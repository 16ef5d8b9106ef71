"""The differential suite. It runs inside a loopback-only network namespace (tox env ``differential-broker``):

    python -m conformance.runner.backends.loopback python -m pytest differential

Tests take the ``target`` fixture (each backend the session has) or ``rocketmq`` (the real broker only); the 5.x
tests take ``pop_backend`` (RocketMQ 5.3.3 and the model-backed 5.x server, tox env ``differential-broker-5``). Tests
marked ``rules(...)`` leave one record per rule and backend in the run's report directory (differential/rules.py):
the backend of the test's ``target`` or ``pop_backend`` parameter, else the real backend RMQSPEC_BACKEND names.
"""

from __future__ import annotations

import pytest

from conformance.runner.backends import get_backend_name
from differential.compare import Target
from differential.rules import RECORDS_NAME, make_record, write_rule_records

pytest_plugins = ("conformance.runner.backends.fixtures",)

REAL_BROKER_NAME = "broker-a"


def pytest_configure(config):
    config.addinivalue_line("markers", "rules(*ids, backends=None): the spec rules a test confirms on the backend it "
                            "ran against (or on each of `backends`, for a test that compares them)")
    config.rmqspec_rule_records = []


@pytest.fixture(params=["rocketmq-4.9.8", "model"])
def target(request) -> Target:
    """A backend to send requests to: the session's real broker, or the session's model-backed server."""
    if request.param == "model":
        server = request.getfixturevalue("model_server")
        return Target(request.param, server.broker_addr, server.settings.broker_name)
    return Target(request.param, request.getfixturevalue("rocketmq").broker_addr, REAL_BROKER_NAME)


@pytest.fixture(params=["rocketmq-5.3.3", "model"])
def pop_backend(request):
    """A 5.x backend for a POP test: the session's RocketMQ 5.3.3 (proxy and broker), or the session's model-backed
    server with the 5.3.3 profile; both answer over the same wire (pop_backend.WirePopBackend)."""
    return request.getfixturevalue("model_pop_backend" if request.param == "model" else "real_pop_backend")


def get_backend(item) -> str:
    """The backend a test ran against: its ``target`` or ``pop_backend`` parameter, else the real backend of the
    session (RMQSPEC_BACKEND, rocketmq-4.9.8 when it names none)."""
    params = item.callspec.params if hasattr(item, "callspec") else {}
    for name in ("target", "pop_backend"):
        if name in params:
            return params[name]
    backend = get_backend_name()
    return backend if backend != "model" else "rocketmq-4.9.8"


@pytest.fixture
def record_rules(request):
    """record_rules(rules, backend, agrees, detail): a record per rule for a check that decides its rules itself
    (the model oracle takes them from the model's own answer)."""

    def record(rules, backend: str, agrees: bool, detail: str = "") -> None:
        request.config.rmqspec_rule_records.extend(
            make_record(rule, backend, request.node.nodeid, agrees, detail) for rule in rules)

    return record


@pytest.hookimpl(wrapper=True)
def pytest_runtest_makereport(item, call):
    report = yield
    marker = item.get_closest_marker("rules")
    if marker and report.when == "call":
        backends = marker.kwargs.get("backends") or (get_backend(item),)
        item.config.rmqspec_rule_records.extend(
            make_record(rule, backend, item.nodeid, report.passed, report.longreprtext)
            for rule in marker.args for backend in backends)
    return report


def pytest_unconfigure(config):
    from conformance.runner.backends.fixtures import get_logs_dir

    records = getattr(config, "rmqspec_rule_records", [])
    if records:
        write_rule_records(get_logs_dir(config).parent / RECORDS_NAME, records)
