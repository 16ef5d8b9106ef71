"""What the full runs of the adapter clients share (conformance/suite/test_*_full.py): the budget, the client's
maxReconsumeTimes draw, and one judged run of a workload on a fresh model-backed server.

RMQSPEC_CONFORMANCE_EXAMPLES examples per test or family (default 8). RMQSPEC_SCHEDULED_FAULTS (comma-separated kinds
of history/workload.py's SCHEDULED_FAULT_KINDS, default none) lets the CLUSTERING concurrently families draw a
schedule of those process faults (conformance/runner/workloads.py's schedules). No Hypothesis shrinking: each attempt
costs a real run of seconds. Instead, with RMQSPEC_SHRINK=1 (tox's conformance-* envs) a failing run's problems are
shrunk each by re-running the client within a budget (conformance/suite/shrink.py), and the failure shows, beside
the problems and the (truncated) wire trace, each shrunk workload with the re-runs and seconds spent and the command
that replays it (conformance/suite/replay.py).
"""

from __future__ import annotations

import os
import shlex

from attrs import evolve
from hypothesis import HealthCheck, Phase, settings
from hypothesis import strategies as st

from conformance.checker.deviations import COUNTEREXAMPLES, get_declared
from conformance.harness import SETTINGS, find_problems, get_fresh_names, judge_run
from conformance.history import workload as values
from conformance.history.records import Run
from conformance.history.workload import SCHEDULED_FAULT_KINDS, Workload
from conformance.runner.backends.model import open_model_backend
from conformance.runner.clients import cpp, golang, java, node
from conformance.runner.run import OpenBackend, OpenClient, run_workload
from conformance.suite.shrink import MAX_SHRUNK_PROBLEMS, Shrunk, format_case, get_budget, get_signature, is_shrinking
from conformance.suite.shrink import shrink as shrink_case

EXAMPLES = int(os.environ.get("RMQSPEC_CONFORMANCE_EXAMPLES", "8"))
REAL = settings(max_examples=EXAMPLES, deadline=None, database=None, phases=[Phase.explicit, Phase.generate],
                suppress_health_check=[HealthCheck.too_slow, HealthCheck.function_scoped_fixture])
# The client's maxReconsumeTimes (-1: its default, 16 concurrently and unbounded orderly); the group's
# retryMaxTimes (2) is what the broker would apply without one, and a 4.9.8 client always sends one.
CLIENT_MAX_RECONSUME_TIMES = st.sampled_from((-1, 1, 2))
# The adapter clients by the name the replay command takes: how to open one, and why this machine cannot.
CLIENTS = {"cpp": (cpp.open_cpp_consumer, cpp.get_unavailable_reason),
           "java": (java.open_java_consumer, java.get_unavailable_reason),
           "node": (node.open_node_consumer, node.get_unavailable_reason),
           "go": (golang.open_go_consumer, golang.get_unavailable_reason)}
# A failure's message stays bounded: its first lines (problems, deliveries, wire trace), each cut.
MAX_FAILURE_LINES = 60
MAX_LINE_CHARS = 300
# Shrinkings done in this process, by (client, workload, maxReconsumeTimes, problem): Hypothesis runs a failing
# example again to report it, and the second run need not shrink again.
SHRUNK: dict[tuple[str, str, int, str], Shrunk] = {}


def run_case(open_client: OpenClient, workload: Workload, client_max: int, log_dir: str, prefix: str,
             open_backend: OpenBackend = open_model_backend, fresh_topic: bool = False) -> Run:
    """One run of `workload` through the client with its maxReconsumeTimes `client_max`, with a fresh group (and
    topic: a real broker keeps its topics) on the backend `open_backend` opens."""
    group, instance = get_fresh_names(prefix)
    run_settings = evolve(SETTINGS, group=group, max_reconsume_times=client_max)
    run_settings = evolve(run_settings, topic=f"T_{group}") if fresh_topic else run_settings
    return run_workload(open_backend, workload, run_settings, instance, log_dir, open_client)


def get_scheduled_kinds(environ: dict) -> tuple[str, ...]:
    """The process faults a full run's schedules may hold: RMQSPEC_SCHEDULED_FAULTS, comma-separated (none by
    default; a kind not in SCHEDULED_FAULT_KINDS is refused)."""
    kinds = tuple(kind.strip() for kind in environ.get("RMQSPEC_SCHEDULED_FAULTS", "").split(",") if kind.strip())
    unknown = [kind for kind in kinds if kind not in SCHEDULED_FAULT_KINDS]
    if unknown:
        raise ValueError(f"RMQSPEC_SCHEDULED_FAULTS: unknown kinds {unknown}; known: {SCHEDULED_FAULT_KINDS}")
    return kinds


SCHEDULED_KINDS = get_scheduled_kinds(dict(os.environ))


def run_and_judge(open_client: OpenClient, workload: Workload, client_max: int, log_dir: str,
                  prefix: str = "full", open_backend: OpenBackend = open_model_backend,
                  fresh_topic: bool = False) -> tuple[Run, dict[str, str]]:
    """Run `workload` through the client with its maxReconsumeTimes `client_max` on a fresh server (or the backend
    `open_backend` opens) and group, and judge it (judge_run: an undeclared or vanished deviation raises, with each
    problem shrunk if is_shrinking()); the run and {rule: status}."""
    run = run_case(open_client, workload, client_max, log_dir, prefix, open_backend, fresh_topic)
    try:
        verdicts = judge_run(run, f"{workload!r}, maxReconsumeTimes={client_max}")
    except AssertionError as error:
        if not is_shrinking():
            raise
        rerun = (open_backend, fresh_topic)
        raise AssertionError(explain_failure(str(error), run, open_client, client_max, log_dir, rerun)) from None
    return run, {verdict.rule: verdict.status for verdict in verdicts}


def get_client_name(open_client: OpenClient) -> str:
    return next((name for name, (opener, _) in CLIENTS.items() if opener is open_client), "cpp")


def explain_failure(failure: str, run: Run, open_client: OpenClient, client_max: int, log_dir: str,
                    rerun: tuple[OpenBackend, bool] = (open_model_backend, False)) -> str:
    """The failure bounded (MAX_FAILURE_LINES lines of MAX_LINE_CHARS), then per problem (at most
    MAX_SHRUNK_PROBLEMS) the shrunk workload, the re-runs (on the failing run's backend: `rerun` is how to open it
    and whether a run needs a fresh topic) and seconds spent, and its replay command on that backend."""
    lines = [line[:MAX_LINE_CHARS] for line in failure.splitlines()]
    kept = lines[:MAX_FAILURE_LINES] + ([f"... ({len(lines) - MAX_FAILURE_LINES} more lines)"]
                                        if len(lines) > MAX_FAILURE_LINES else [])
    name = get_client_name(open_client)
    signatures = list(dict.fromkeys(get_signature(p) for p in find_problems(run)[1]))
    for signature in signatures[:MAX_SHRUNK_PROBLEMS]:
        key = (name, run.backend, repr(run.workload), client_max, signature)
        if key not in SHRUNK:
            SHRUNK[key] = shrink_problem(open_client, (run.workload, client_max), signature, log_dir, rerun)
        kept += format_shrunk(signature, SHRUNK[key], name, run.backend)
    return "\n".join(kept)


def shrink_problem(open_client: OpenClient, case: tuple[Workload, int], signature: str, log_dir: str,
                   rerun: tuple[OpenBackend, bool] = (open_model_backend, False)) -> Shrunk:
    """`case` shrunk to the smallest workload whose one re-run (on the backend `rerun` opens) shows a problem of
    `signature` (get_budget())."""

    def shows(workload: Workload, client_max: int) -> bool:
        try:
            run = run_case(open_client, workload, client_max, log_dir, "shrink", *rerun)
        except (RuntimeError, OSError, ValueError):
            return False
        return signature in {get_signature(problem) for problem in find_problems(run)[1]}

    return shrink_case(case, shows, get_budget())


def format_shrunk(signature: str, shrunk: Shrunk, client: str, backend: str = "model") -> list[str]:
    """The lines that show one problem's shrunk workload, what shrinking it cost, and its replay command (on a real
    backend, inside a loopback-only namespace, as the tox envs run it)."""
    source = format_case(shrunk.workload, shrunk.client_max)
    budget = get_budget()
    real = backend not in ("", "model")
    replay = ("python -m conformance.runner.backends.loopback " if real else "") \
        + f"python -m conformance.suite.replay --client {client}" + (f" --backend {backend}" if real else "")
    return [f"shrunk ({signature}): {source}",
            f"  {shrunk.runs} re-runs, {shrunk.seconds:.0f} s (budget {budget.runs} re-runs, {budget.seconds:.0f} s; "
            f"stopped: {shrunk.stopped})",
            f"  replay: {replay} {shlex.quote(source)}"]


def get_counterexamples(client: tuple[str, str]) -> dict[str, list[str]]:
    """The client's declared counterexamples (conformance/checker/deviations.py), each with the rules it shows."""
    found: dict[str, list[str]] = {}
    for (rule, who), source in sorted(COUNTEREXAMPLES.items()):
        if who == client and source:
            found.setdefault(source, []).append(rule)
    return found


# The values a counterexample's source may name (history/workload.py).
VALUE_NAMES = ("Workload", "MessageSpec", "Fault", "ScheduledFault", "AfterDelivery", "BeforeCommit", "AfterMs")


def parse_counterexample(source: str) -> tuple[Workload, int]:
    """(workload, the client's maxReconsumeTimes) from a declared counterexample's Python source."""
    names = {name: getattr(values, name) for name in VALUE_NAMES} | {"__builtins__": {}}
    workload, client_max = eval(source, names)  # noqa: S307 - the project's own declarations, not input
    return workload, client_max


def check_counterexample(open_client, client: tuple[str, str], source: str, log_dir: str,
                         certain: bool = True) -> dict[str, str]:
    """Run a declared counterexample and judge it; every rule it is declared for must deviate where the
    deviation is certain in it (a `when`, or `certain` for a deterministic client)."""
    workload, client_max = parse_counterexample(source)
    _run, verdicts = run_and_judge(open_client, workload, client_max, log_dir, "cx")
    for rule in get_counterexamples(client)[source]:
        if certain or get_declared(rule, client).when is not None:
            assert verdicts.get(rule) == "deviates", (rule, verdicts)
    return verdicts
