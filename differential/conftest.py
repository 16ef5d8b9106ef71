"""The differential suite. It runs inside a loopback-only network namespace (tox env ``differential-broker``):

    python -m conformance.runner.backends.loopback python -m pytest differential

Tests take the ``target`` fixture (each backend the session has) or ``rocketmq`` (the real broker only). Tests
marked ``rules(...)`` leave one record per rule and backend in the run's report directory (differential/rules.py).
"""

from __future__ import annotations

import pytest

from differential.compare import Target
from differential.rules import RECORDS_NAME, make_record, write_rule_records

pytest_plugins = ("conformance.runner.backends.fixtures",)

REAL_BROKER_NAME = "broker-a"


def pytest_configure(config):
    config.addinivalue_line("markers", "rules(*ids): the spec rules a test confirms on the backend it ran against")
    config.rmqspec_rule_records = []


@pytest.fixture(params=["rocketmq-4.9.8", "model"])
def target(request) -> Target:
    """A backend to send requests to: the session's real broker, or the session's model-backed server."""
    if request.param == "model":
        server = request.getfixturevalue("model_server")
        return Target(request.param, server.broker_addr, server.settings.broker_name)
    return Target(request.param, request.getfixturevalue("rocketmq").broker_addr, REAL_BROKER_NAME)


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
        backend = getattr(item, "callspec", None)
        backend = backend.params.get("target", "rocketmq-4.9.8") if backend else "rocketmq-4.9.8"
        item.config.rmqspec_rule_records.extend(
            make_record(rule, backend, item.nodeid, report.passed, report.longreprtext) for rule in marker.args)
    return report


def pytest_unconfigure(config):
    from conformance.runner.backends.fixtures import get_logs_dir

    records = getattr(config, "rmqspec_rule_records", [])
    if records:
        write_rule_records(get_logs_dir(config).parent / RECORDS_NAME, records)
