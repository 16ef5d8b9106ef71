"""The driver of rocketmq-client-cpp 1.2.3 (PyPI `rocketmq` 0.4.4): one push consumer in an adapter process.

The library runs in `conformance.runner.clients.cpp_adapter`, a subprocess speaking adapter protocol v1 (JSON lines), so
a crash or a hanging shutdown of the C++ threads cannot take the harness with it; conformance/runner/clients/driver.py
is the harness's side of it (start, answer each delivery from the outcome script, stop or kill)."""

from __future__ import annotations

import sys
from importlib import metadata

from conformance.history.records import Delivery
from conformance.runner.clients import driver
from conformance.runner.clients.driver import AdapterConsumer, OutcomeScript, StartRequest

__all__ = ["CLIENT_NAME", "CLIENT_VERSION", "CppConsumer", "Delivery", "OutcomeScript", "StartRequest",
           "find_adapter_processes", "get_unavailable_reason", "open_cpp_consumer"]

CLIENT_NAME = "rocketmq-client-cpp"
CLIENT_VERSION = "1.2.3"
BINDING_VERSION = "0.4.4"
ADAPTER_MODULE = "conformance.runner.clients.cpp_adapter"


def find_adapter_processes(parent: int | None = None) -> list[int]:
    """Pids of C++ adapter processes whose parent is `parent` (default: this process)."""
    return driver.find_adapter_processes(ADAPTER_MODULE.encode(), parent)


def get_unavailable_reason() -> str | None:
    """Why this platform cannot run the client (no wheel of `rocketmq` 0.4.4), or None."""
    if not sys.platform.startswith("linux"):
        return f"PyPI rocketmq {BINDING_VERSION} ships a manylinux wheel only; this is {sys.platform}"
    try:  # by its distribution: the 5.x gRPC client (rocketmq-python-client) installs a `rocketmq` module too
        installed = metadata.version("rocketmq")
    except metadata.PackageNotFoundError:
        return f"PyPI rocketmq {BINDING_VERSION} is not installed (pip install -e '.[dev]')"
    return None if installed == BINDING_VERSION else f"PyPI rocketmq {installed} is installed, not {BINDING_VERSION}"


class CppConsumer(AdapterConsumer):
    """rocketmq-client-cpp's push consumer in `python -m conformance.runner.clients.cpp_adapter`."""

    client_name = CLIENT_NAME

    def get_argv(self) -> list[str]:
        return [sys.executable, "-m", ADAPTER_MODULE]

    def get_env(self) -> dict[str, str]:
        return {**super().get_env(), "PYTHONUNBUFFERED": "1"}


def open_cpp_consumer(request: StartRequest, script: OutcomeScript, log_dir: str | None) -> CppConsumer:
    """The glue's way to make this client's consumer (conformance/runner/run.py's OpenClient)."""
    return CppConsumer(request, script, log_dir=log_dir)
