"""The main job's conformance runs (`python -m conformance.smoke`; reports/__main__.py runs it with reports on, in
the suite's run): every real client — RocketMQ's Java client (the reference), rocketmq-client-cpp, ali-ons —
through the same three small workloads, each on a fresh model-backed server, its verdicts recorded beside the
property suite's reports, so that the aggregate's rule x client matrix holds every client. The clients run side
by side (one thread each; every run has its own server and ports), each client's workloads in turn.

A client that cannot run here is recorded with the reason (conformance/report.py's record_unavailable); ali-ons is
installed first (`npm ci`, conformance/runner/clients/node.py) where node and npm are. Exit status 1 when a run failed:
an undeclared deviation, a declared one that did not show, a client that did not start.
"""

from __future__ import annotations

import json
import sys
import tempfile
import time
import traceback
from concurrent.futures import ThreadPoolExecutor

from attrs import frozen

from conformance.history.workload import Fault, MessageSpec, Workload
from conformance.report import record_unavailable
from conformance.runner.clients import cpp, java, node
from conformance.suite.full_run import run_and_judge

# (workload, the client's maxReconsumeTimes): produce -> fail -> retry -> DLQ; a retry answered RECONSUME_LATER
# beside a message that succeeds; a refused send-back and the client's fallback.
WORKLOADS = (
    (Workload((MessageSpec("m0", "TagA", 0, ("EXCEPTION",) * 4),)), 2),
    (Workload((MessageSpec("m0", "TagA", 0, ("RECONSUME_LATER",) * 2), MessageSpec("m1", "TagB"))), -1),
    (Workload((MessageSpec("m0", "TagA", 0, ("EXCEPTION",) * 2),), (Fault("send_back_error", "m0", 0),)), 1),
)


@frozen
class Client:
    name: str
    get_version: object  # () -> str
    get_unavailable_reason: object  # () -> str | None
    open_client: object  # conformance.runner.run.OpenClient


def get_node_version() -> str:
    lock = json.loads((node.PACKAGE_DIR / "package-lock.json").read_text(encoding="utf-8"))
    return lock["packages"]["node_modules/ali-ons"]["version"]


def get_node_unavailable_reason() -> str | None:
    return node.install_client() or node.get_unavailable_reason()


CLIENTS = (
    Client(java.CLIENT_NAME, lambda: "4.9.8", java.get_unavailable_reason, java.open_java_consumer),
    Client(cpp.CLIENT_NAME, lambda: cpp.CLIENT_VERSION, cpp.get_unavailable_reason, cpp.open_cpp_consumer),
    Client(node.CLIENT_NAME, get_node_version, get_node_unavailable_reason, node.open_node_consumer),
)


def run_client(client: Client) -> list[str]:
    """Every workload through `client`; the problems (empty: all judged as declared)."""
    reason = client.get_unavailable_reason()
    if reason is not None:
        record_unavailable(client.name, client.get_version(), reason)
        print(f"{client.name}: not run: {reason}", flush=True)
        return []
    problems = []
    for workload, client_max in WORKLOADS:
        started = time.monotonic()
        with tempfile.TemporaryDirectory(prefix="rmqspec-smoke-") as log_dir:
            try:
                _run, verdicts = run_and_judge(client.open_client, workload, client_max, log_dir, "smoke")
            except (AssertionError, RuntimeError, TimeoutError) as error:
                problems.append(f"{client.name}: {workload!r}, maxReconsumeTimes={client_max}: {error}")
                continue
        deviating = sorted(rule for rule, status in verdicts.items() if status == "deviates")
        print(f"{client.name}: {len(workload.messages)} messages in {time.monotonic() - started:.1f} s, "
              f"deviating (declared): {' '.join(deviating) or 'none'}", flush=True)
    return problems


def main() -> int:
    with ThreadPoolExecutor(len(CLIENTS), thread_name_prefix="smoke") as pool:
        results = list(pool.map(run_client_safely, CLIENTS))
    problems = [problem for found in results for problem in found]
    for problem in problems:
        print(f"conformance run failed: {problem}", file=sys.stderr)
    return 1 if problems else 0


def run_client_safely(client: Client) -> list[str]:
    try:
        return run_client(client)
    except Exception:  # noqa: BLE001 - one client's failure must not hide the others'
        return [f"{client.name}: {traceback.format_exc()}"]


if __name__ == "__main__":
    sys.exit(main())
