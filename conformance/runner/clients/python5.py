"""The driver of PyPI rocketmq-python-client 5.1.2 (apache/rocketmq-clients' Python client: gRPC to the 5.x proxy):
a SimpleConsumer or a PushConsumer in `python -m conformance.runner.clients.python5_adapter`, adapter protocol v2.

The package shares the `rocketmq` directory with PyPI rocketmq 0.4.4 (the C++ client's binding, cpp.py): both are
in the dev extra and import side by side (`rocketmq.v5` and `rocketmq.client`). The client writes its log under
$HOME/logs/rocketmq_python: HOME is the run's log directory, so each run keeps its own.
"""

from __future__ import annotations

import sys
from importlib import metadata, util

from conformance.runner.clients import driver
from conformance.runner.clients.driver import AdapterConsumer, OutcomeScript, StartRequest

CLIENT_NAME = "rocketmq-python-client"
CLIENT_VERSION = "5.1.2"
ADAPTER_MODULE = "conformance.runner.clients.python5_adapter"


def get_unavailable_reason() -> str | None:
    """Why this machine cannot run the client (the package is missing or another version), or None."""
    if util.find_spec("rocketmq") is None or util.find_spec("rocketmq.v5") is None:
        return f"PyPI {CLIENT_NAME} {CLIENT_VERSION} is not installed (pip install -e '.[dev]')"
    installed = metadata.version(CLIENT_NAME)
    if installed != CLIENT_VERSION:
        return f"PyPI {CLIENT_NAME} {installed} is installed; the harness pins {CLIENT_VERSION}"
    return None


def find_adapter_processes(parent: int | None = None) -> list[int]:
    return driver.find_adapter_processes(ADAPTER_MODULE.encode(), parent)


class Python5Consumer(AdapterConsumer):
    """rocketmq-python-client's SimpleConsumer or PushConsumer in its adapter process."""

    client_name = CLIENT_NAME
    ready_timeout_s = 40.0  # a SimpleConsumer is ready after its first answered receive (start-up errors retried)

    def get_argv(self) -> list[str]:
        return [sys.executable, "-m", ADAPTER_MODULE]

    def get_env(self) -> dict[str, str]:
        env = {**super().get_env(), "PYTHONUNBUFFERED": "1"}
        return {**env, "HOME": self.log_dir} if self.log_dir else env


def open_python5_consumer(request: StartRequest, script: OutcomeScript, log_dir: str | None) -> Python5Consumer:
    return Python5Consumer(request, script, log_dir=log_dir)
