"""The verdict of each fault kind, per client and backend: what a client author reads first.

    python benchmarks/bench_fault_verdicts.py [--client java|cpp|node ...] [--backend model|rocketmq-4.9.8 ...]
                                              [--kind KIND ...] [--runs N]

For each client (default: all three; one that cannot run here shows why), backend (default: the model-backed server,
and RocketMQ 4.9.8's own broker when this process runs inside the loopback-only namespace — `python -m
conformance.runner.backends.loopback python benchmarks/bench_fault_verdicts.py`, as tox env `fault-verdicts` does)
and fault kind (default: every kind a workload can carry, conformance/history/workload.py FAULT_KINDS and
SCHEDULED_FAULT_KINDS), one small workload — m0 fails once, m1 is accepted, the fault hits m0's first failure (a
scheduled one: right after m0's first delivery, for 2 s) — runs N times (default 1), each on a fresh
group, topic and instance. Each run is judged as a conformance run is (judge, then explain_deviations: the declared
causes of each deviation), nothing raises, and the table prints per kind and column: "conforms", "indefinite" (the
broker still held a message when the run ended), or the deviating rules with the declared cause of each
("UNDECLARED" where none explains it). Every cell comes from the run's verdicts, the same ones the reports record.
This is a measurement, not a test.
"""

from __future__ import annotations

import argparse
import contextlib
import sys
import tempfile
from collections.abc import Callable
from pathlib import Path

from attrs import evolve

from conformance.checker.differential import predict_run
from conformance.checker.verdicts import explain_deviations, judge
from conformance.harness import SETTINGS, get_fresh_names
from conformance.history.workload import (
    FAULT_KINDS,
    SCHEDULED_FAULT_KINDS,
    AfterDelivery,
    Fault,
    MessageSpec,
    ScheduledFault,
    Workload,
)
from conformance.runner.backends.model import open_model_backend
from conformance.runner.backends.real_run import open_real_backend
from conformance.runner.clients import cpp, java, node
from conformance.runner.run import run_workload

CLIENTS: dict[str, tuple[Callable, Callable[[], str | None]]] = {
    "java": (java.open_java_consumer, java.get_unavailable_reason),
    "cpp": (cpp.open_cpp_consumer, cpp.get_unavailable_reason),
    "node": (node.open_node_consumer, node.get_unavailable_reason),
}
BACKENDS = ("model", "rocketmq-4.9.8")
KINDS = (*FAULT_KINDS, *SCHEDULED_FAULT_KINDS)
SCHEDULED_DURATION_MS = 2000


def make_workload(kind: str) -> Workload:
    """m0 answered RECONSUME_LATER once and m1 accepted; a request fault on the send-back after m0's first delivery
    (a pull fault: on the first pull), a scheduled fault right after that delivery for SCHEDULED_DURATION_MS."""
    messages = (MessageSpec("m0", "TagA", 0, ("RECONSUME_LATER",)), MessageSpec("m1", "TagB"))
    if kind in SCHEDULED_FAULT_KINDS:
        return Workload(messages, schedule=(ScheduledFault(kind, AfterDelivery("m0", 0), SCHEDULED_DURATION_MS),))
    return Workload(messages, (Fault(kind, "m0", 0),))


def summarise(verdicts) -> str:
    """One cell: the deviating rules with their causes, else "indefinite" where some rule is, else "conforms"."""
    deviating = [f"{v.rule} ({v.cause or 'UNDECLARED'})" for v in verdicts if v.status == "deviates"]
    if deviating:
        return "; ".join(deviating)
    return "indefinite" if any(v.status == "indefinite" for v in verdicts) else "conforms"


def run_cell(open_backend, client: str, kind: str, log_dir: Path) -> str:
    """The verdict summary of one run of `kind`'s workload by `client` on the backend `open_backend` opens."""
    group, instance = get_fresh_names(f"fv{client}")
    settings = evolve(SETTINGS, group=group, topic=f"T_{group}")
    workload = make_workload(kind)
    try:
        run = run_workload(open_backend, workload, settings, instance, str(log_dir), CLIENTS[client][0])
    except (RuntimeError, OSError, ValueError) as error:
        return f"not run: {str(error)[:80]}"
    verdicts, _problems = explain_deviations(judge(run, predict_run(run), repr(workload)), run)
    return summarise(verdicts)


@contextlib.contextmanager
def open_backends(names: list[str], log_dir: Path):
    """{backend name: open_backend or the reason it cannot run}; the real broker is started once, always stopped."""
    opened: dict[str, Callable | str] = {}
    with contextlib.ExitStack() as stack:
        for name in names:
            if name == "model":
                opened[name] = open_model_backend
                continue
            try:
                from conformance.runner.backends.rocketmq import RocketMQSession
                from conformance.runner.backends.settings_table import get_real_broker_conf

                session = RocketMQSession(get_real_broker_conf(), log_dir / "rocketmq-logs")
                broker = session.open()
                stack.callback(session.close, False)
                opened[name] = lambda s, w, b=broker: open_real_backend(b, s, w)
            except Exception as error:  # noqa: BLE001 - the column says why it is empty
                opened[name] = f"unavailable: {type(error).__name__}: {str(error)[:80]}"
        yield opened


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python benchmarks/bench_fault_verdicts.py",
                                     description=__doc__.split("\n")[0])
    parser.add_argument("--client", action="append", choices=list(CLIENTS), help="default: every available client")
    parser.add_argument("--backend", action="append", choices=BACKENDS, help="default: both")
    parser.add_argument("--kind", action="append", choices=KINDS, help="default: every fault kind")
    parser.add_argument("--runs", type=int, default=1, help="runs per cell (default 1)")
    args = parser.parse_args(argv)
    clients = args.client or list(CLIENTS)
    kinds = args.kind or list(KINDS)
    with tempfile.TemporaryDirectory(prefix="fault-verdicts-") as tmp, \
            open_backends(args.backend or list(BACKENDS), Path(tmp)) as backends:
        columns = [(c, b) for c in clients for b in backends]
        print("| fault kind | " + " | ".join(f"{c} on {b}" for c, b in columns) + " |")
        print("|---|" + "---|" * len(columns))
        for kind in kinds:
            cells = []
            for client, backend in columns:
                opener, reason = backends[backend], CLIENTS[client][1]()
                if isinstance(opener, str) or reason is not None:
                    cells.append(opener if isinstance(opener, str) else f"unavailable: {reason[:80]}")
                    continue
                found = [run_cell(opener, client, kind, Path(tmp)) for _ in range(args.runs)]
                cells.append(" / ".join(sorted(set(found))) + (f" ({args.runs} runs)" if args.runs > 1 else ""))
            print(f"| {kind} | " + " | ".join(cells) + " |", flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
