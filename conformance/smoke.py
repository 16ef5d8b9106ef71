"""The main job's conformance runs (`python -m conformance.smoke`; reports/__main__.py runs it with reports on, in
the suite's run): every real client — RocketMQ's Java client (the reference), rocketmq-client-cpp, ali-ons,
rocketmq-client-go —
through the same three small workloads, each on a fresh model-backed server, its verdicts recorded beside the
property suite's reports, so that the aggregate's rule x client matrix holds every client. The clients run side
by side (one thread each; every run has its own server and ports), each client's workloads in turn.

Beside them the 5.x clients (rocketmq-python-client, rocketmq-client-nodejs, RocketMQ 5.3.3's Java client in POP
mode) run one small workload each against the real RocketMQ 5.3.3 (its one start, ~15-40 s): in a child process
`python -m conformance.runner.backends.loopback python -m conformance.smoke --5x` (a loopback-only network
namespace; the same run id), where the 5.3.3 build and its run time are there; else each is recorded unavailable
with the reason.

A client that cannot run here is recorded with the reason (conformance/report.py's record_unavailable); ali-ons is
installed first (`npm ci`, conformance/runner/clients/node.py) where node and npm are; rocketmq-client-go is built
(or found in its build cache) where Debian's golang-go and golang-*-dev packages are, which only the tox env
`conformance-go` installs (conformance/runner/clients/golang.py), and is listed with that reason where they are
not. Exit status 1 when a run failed: an undeclared deviation, a declared one that did not show, a client that did
not start.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import tempfile
import time
import traceback
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

from attrs import frozen

from conformance.history.workload import Fault, MessageSpec, Workload
from conformance.report import record_unavailable
from conformance.runner.backends.rocketmq5 import RocketMQ5Session, find_build_dir, get_missing_runtime
from conformance.runner.clients import cpp, golang, java, node, node5, python5
from conformance.suite.full_run import run_and_judge
from conformance.suite.pop_suite import POP, PROXY_CONF, PUSH, SIMPLE, PopTarget, run_and_judge_pop
from runenv import run_context

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
    Client(golang.CLIENT_NAME, lambda: golang.CLIENT_VERSION, golang.get_unavailable_reason, golang.open_go_consumer),
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


# The 5.x clients: (client, version, why it cannot run or None, how to open it, its one smoke workload).
CLIENTS5 = (
    Client(python5.CLIENT_NAME, lambda: python5.CLIENT_VERSION, python5.get_unavailable_reason,
           python5.open_python5_consumer),
    Client(node5.CLIENT_NAME, node5.get_pinned_version,
           lambda: node5.install_client() or node5.get_unavailable_reason(), node5.open_node5_consumer),
    Client(java.CLIENT_NAME, lambda: java.POP_CLIENT_VERSION, java.get_pop_unavailable_reason,
           java.open_java_pop_consumer),
)
WORKLOADS5 = {python5.CLIENT_NAME: SIMPLE["lost-change-late"], node5.CLIENT_NAME: PUSH["fail-raise-slow"],
              java.CLIENT_NAME: POP["slow"]}
# The 5.x child's bound: a broker start (15-40 s), `npm ci` of the Node client in a fresh clone, three runs of ~20 s;
# 236 s in all on 2 cores at load 8, 80 s quiet.
SMOKE5_LIMIT_S = 480


def get_5x_unavailable_reason() -> str | None:
    """Why RocketMQ 5.3.3 cannot start here (no build beside the project, its run time missing), or None."""
    build = find_build_dir(Path(__file__).resolve())
    if build is None:
        return "no shared/brokers/rocketmq-5.3.3 beside the project"
    missing = get_missing_runtime(build)
    return f"RocketMQ 5.3.3's run time is missing: {', '.join(missing)}" if missing else None


def run_5x_clients() -> list[str]:
    """The 5.x clients' smoke runs in the loopback namespace child (`--5x`), or each recorded unavailable."""
    reason = get_5x_unavailable_reason()
    if reason is not None:
        for client in CLIENTS5:
            record_unavailable(client.name, client.get_version(), reason)
            print(f"{client.name}: not run: {reason}", flush=True)
        return []
    command = [sys.executable, "-m", "conformance.runner.backends.loopback", sys.executable, "-m",
               "conformance.smoke", "--5x"]
    try:
        done = subprocess.run(command, env=dict(os.environ), timeout=SMOKE5_LIMIT_S, capture_output=True, text=True)
    except subprocess.TimeoutExpired:
        return [f"the 5.x clients' runs took longer than {SMOKE5_LIMIT_S} s: stopped"]
    print(done.stdout, end="", flush=True)
    return [] if done.returncode == 0 else [f"the 5.x clients' runs failed ({done.returncode}): {done.stderr[-3000:]}"]


def run_5x_inside() -> int:
    """In the loopback namespace: one RocketMQ 5.3.3 (always stopped), each 5.x client's smoke workload judged."""
    session = RocketMQ5Session(run_context.get_reports_dir() / run_context.get_run_id() / "rocketmq5-logs",
                               proxy_conf=PROXY_CONF)
    problems: list[str] = []
    try:
        target = PopTarget(session.open())
        for client in CLIENTS5:
            problems += run_5x_client(client, target)
        target.close()
    except BaseException as error:
        problems.append(f"{type(error).__name__}: {error}")  # the broker's logs are kept
        raise
    finally:
        session.close(failed=bool(problems))
    for problem in problems:
        print(f"conformance run failed: {problem}", file=sys.stderr)
    return 1 if problems else 0


def run_5x_client(client: Client, target) -> list[str]:
    reason = client.get_unavailable_reason()
    if reason is not None:
        record_unavailable(client.name, client.get_version(), reason)
        print(f"{client.name} {client.get_version()}: not run: {reason}", flush=True)
        return []
    workload, started = WORKLOADS5[client.name], time.monotonic()
    with tempfile.TemporaryDirectory(prefix="rmqspec-smoke5-") as log_dir:
        try:
            statuses = run_and_judge_pop(target, client.open_client, workload, log_dir)
        except (AssertionError, RuntimeError, TimeoutError, OSError) as error:
            return [f"{client.name}: {workload!r}: {type(error).__name__}: {error}"]
    deviating = sorted(rule for rule, status in statuses.items() if status == "deviates")
    print(f"{client.name} {client.get_version()} ({workload.api}, RocketMQ 5.3.3): {len(workload.messages)} messages "
          f"in {time.monotonic() - started:.1f} s, deviating (declared): {' '.join(deviating) or 'none'}", flush=True)
    return []


def main() -> int:
    if sys.argv[1:] == ["--5x"]:
        return run_5x_inside()
    with ThreadPoolExecutor(len(CLIENTS) + 1, thread_name_prefix="smoke") as pool:
        five = pool.submit(run_5x_clients)  # a child process that mostly waits for revives: beside the others
        results = [*pool.map(run_client_safely, CLIENTS), five.result()]
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
