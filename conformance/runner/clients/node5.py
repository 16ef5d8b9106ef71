"""The driver of npm rocketmq-client-nodejs (apache/rocketmq-clients' Node.js client: gRPC to the 5.x proxy, at the
version conformance/runner/clients/node5/package-lock.json pins): a SimpleConsumer or a PushConsumer in
`node conformance/runner/clients/node5/adapter.js`, adapter protocol v2.

Installed by `npm ci` into node5/node_modules as node.py installs ali-ons (the main job's smoke step does it where
node and npm are); the client writes its log under $HOME, the run's log directory.
"""

from __future__ import annotations

import json
import shutil
from pathlib import Path

from conformance.runner.clients import driver, node
from conformance.runner.clients.driver import AdapterConsumer, OutcomeScript, StartRequest

CLIENT_NAME = "rocketmq-client-nodejs"
PACKAGE_DIR = Path(__file__).with_name("node5")
ADAPTER = PACKAGE_DIR / "adapter.js"


def get_pinned_version() -> str:
    lock = json.loads((PACKAGE_DIR / "package-lock.json").read_text(encoding="utf-8"))
    return lock["packages"][f"node_modules/{CLIENT_NAME}"]["version"]


def get_unavailable_reason() -> str | None:
    return node.get_unavailable_reason(PACKAGE_DIR, CLIENT_NAME)


def install_client() -> str | None:
    """`npm ci` of the pinned client where node and npm are and it is not installed; None, or why not."""
    return node.install_client(package_dir=PACKAGE_DIR, package=CLIENT_NAME)


def find_adapter_processes(parent: int | None = None) -> list[int]:
    return driver.find_adapter_processes(str(ADAPTER).encode(), parent)


class Node5Consumer(AdapterConsumer):
    """rocketmq-client-nodejs' SimpleConsumer or PushConsumer in `node adapter.js`."""

    client_name = CLIENT_NAME
    ready_timeout_s = 40.0  # a SimpleConsumer is ready after its first answered receive

    def get_argv(self) -> list[str]:
        return [shutil.which("node") or "node", str(ADAPTER)]

    def get_env(self) -> dict[str, str]:
        env = super().get_env()
        return {**env, "HOME": self.log_dir} if self.log_dir else env


def open_node5_consumer(request: StartRequest, script: OutcomeScript, log_dir: str | None) -> Node5Consumer:
    return Node5Consumer(request, script, log_dir=log_dir)
