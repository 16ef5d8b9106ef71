"""The driver of ali-ons (npm, the Node.js RocketMQ client at the version
conformance/runner/clients/node/package-lock.json pins): one Consumer in `node
conformance/runner/clients/node/adapter.js`, speaking adapter protocol v1 (JSON lines).

The client is installed into conformance/runner/clients/node/node_modules by `npm ci` (`install_client`: the main job
runs it when `node` and `npm` are on PATH and the installed copy is missing or differs from the lock file). The identity
the adapter reports ("ali-ons", version) is read from the installed package.json, so the matrix names what ran.
"""

from __future__ import annotations

import json
import shutil
import subprocess
import time
from pathlib import Path

from conformance.runner.clients import driver
from conformance.runner.clients.driver import AdapterConsumer, OutcomeScript, StartRequest

CLIENT_NAME = "ali-ons"
PACKAGE_DIR = Path(__file__).with_name("node")
ADAPTER = PACKAGE_DIR / "adapter.js"
INSTALLED = PACKAGE_DIR / "node_modules" / "ali-ons" / "package.json"
INSTALL_LIMIT_S = 300
# npm's codes for a registry it could not reach; such a failure is tried again after each wait (s).
NETWORK_ERRORS = ("EAI_AGAIN", "ENOTFOUND", "ETIMEDOUT", "ECONNRESET", "ECONNREFUSED", "ENETUNREACH")
NETWORK_RETRY_WAITS_S = (15.0, 45.0)
_FAILED_INSTALLS: dict[Path, str] = {}


def is_installed(package_dir: Path = PACKAGE_DIR, package: str = CLIENT_NAME) -> bool:
    """`package` is in package_dir's node_modules, and what npm installed there is what package-lock.json pins."""
    installed_lock = package_dir / "node_modules" / ".package-lock.json"
    if not (package_dir / "node_modules" / package / "package.json").is_file() or not installed_lock.is_file():
        return False
    pinned = {k: v for k, v in json.loads((package_dir / "package-lock.json").read_text())["packages"].items() if k}
    installed = {k: v.get("version") for k, v in json.loads(installed_lock.read_text())["packages"].items()}
    # An optional package (another platform's native build) is pinned but installed only where it fits.
    required = {k: v.get("version") for k, v in pinned.items() if not v.get("optional")}
    return all(installed.get(k) == version for k, version in required.items()) and \
        all(pinned.get(k, {}).get("version") == version for k, version in installed.items())


def get_unavailable_reason(package_dir: Path = PACKAGE_DIR, package: str = CLIENT_NAME) -> str | None:
    """Why this machine cannot run the Node client `package` (no node, not installed), or None."""
    if shutil.which("node") is None:
        return f"no `node` on PATH: {package}'s adapter needs Node.js (20)"
    if not is_installed(package_dir, package):
        return f"{package} is not installed as {package_dir}/package-lock.json pins it: run " \
               f"`npm ci --prefix {package_dir}` (the main job `python -m reports` does)"
    return None


def install_client(timeout_s: float = INSTALL_LIMIT_S, package_dir: Path = PACKAGE_DIR,
                   package: str = CLIENT_NAME) -> str | None:
    """`npm ci` the pinned client when node and npm are there and node_modules does not match the lock file;
    None when it is installed afterwards, else why not (one line). One failed install per package and process: the
    next call answers with its reason at once (14 tests each waiting out npm's own retries took 33 minutes of CI)."""
    if shutil.which("node") is None or shutil.which("npm") is None:
        return "no `node` or `npm` on PATH"
    if is_installed(package_dir, package):
        return None
    if package_dir in _FAILED_INSTALLS:
        return f"{_FAILED_INSTALLS[package_dir]} (this process's earlier attempt; not tried again)"
    reason = run_npm_ci(package_dir, timeout_s)
    if reason is None and not is_installed(package_dir, package):
        reason = "npm ci left node_modules unlike package-lock.json"
    if reason is not None:
        _FAILED_INSTALLS[package_dir] = reason
    return reason


def run_npm_ci(package_dir: Path, timeout_s: float) -> str | None:
    """`npm ci` within timeout_s in all, tried again after NETWORK_RETRY_WAITS_S where it failed to reach the
    registry (NETWORK_ERRORS); None, or the last failure in one bounded line."""
    deadline = time.monotonic() + timeout_s
    waits = list(NETWORK_RETRY_WAITS_S)
    while True:
        try:
            done = subprocess.run(["npm", "ci", "--no-audit", "--no-fund", "--prefer-offline", "--prefix",
                                   str(package_dir)], capture_output=True, text=True,
                                  timeout=max(1.0, deadline - time.monotonic()))
        except subprocess.TimeoutExpired:
            return f"npm ci did not finish within {timeout_s:.0f} s"
        if done.returncode == 0:
            return None
        if not waits or not any(code in done.stderr for code in NETWORK_ERRORS) or \
                time.monotonic() + waits[0] >= deadline:
            return f"npm ci failed ({done.returncode}): {done.stderr.strip()[-500:]}"
        time.sleep(waits.pop(0))


def get_client_version() -> str:
    return json.loads(INSTALLED.read_text())["version"]


def find_adapter_processes(parent: int | None = None) -> list[int]:
    """Pids of Node adapter processes whose parent is `parent` (default: this process)."""
    return driver.find_adapter_processes(str(ADAPTER).encode(), parent)


class NodeConsumer(AdapterConsumer):
    """ali-ons' Consumer in `node adapter.js`."""

    client_name = CLIENT_NAME

    def get_argv(self) -> list[str]:
        return ["node", str(ADAPTER)]


def open_node_consumer(request: StartRequest, script: OutcomeScript, log_dir: str | None) -> NodeConsumer:
    """The glue's way to make this client's consumer (conformance/runner/run.py's OpenClient)."""
    return NodeConsumer(request, script, log_dir=log_dir)
