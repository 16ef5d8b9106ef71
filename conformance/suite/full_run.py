"""What the full runs of the adapter clients share (conformance/suite/test_*_full.py): the budget, the client's
maxReconsumeTimes draw, and one judged run of a workload on a fresh model-backed server.

RMQSPEC_CONFORMANCE_EXAMPLES examples per test or family (default 8). RMQSPEC_SCHEDULED_FAULTS (comma-separated kinds
of history/workload.py's SCHEDULED_FAULT_KINDS, default none) lets the CLUSTERING concurrently families draw a
schedule of those process faults (conformance/runner/workloads.py's schedules). No shrinking: each attempt costs a
real run of seconds, so shrinking one failure would outlast the test's time limit and lose it; a drawn workload is
small (at most MAX_MESSAGES messages of MAX_SCRIPT answers), and it is reported as drawn, with the wire trace.
"""

from __future__ import annotations

import os

from attrs import evolve
from hypothesis import HealthCheck, Phase, settings
from hypothesis import strategies as st

from conformance.checker.deviations import COUNTEREXAMPLES, get_declared
from conformance.harness import SETTINGS, get_fresh_names, judge_run
from conformance.history import workload as values
from conformance.history.records import Run
from conformance.history.workload import SCHEDULED_FAULT_KINDS, Workload
from conformance.runner.backends.model import open_model_backend
from conformance.runner.run import OpenClient, run_workload

EXAMPLES = int(os.environ.get("RMQSPEC_CONFORMANCE_EXAMPLES", "8"))
REAL = settings(max_examples=EXAMPLES, deadline=None, database=None, phases=[Phase.explicit, Phase.generate],
                suppress_health_check=[HealthCheck.too_slow, HealthCheck.function_scoped_fixture])
# The client's maxReconsumeTimes (-1: its default, 16 concurrently and unbounded orderly); the group's
# retryMaxTimes (2) is what the broker would apply without one, and a 4.9.8 client always sends one.
CLIENT_MAX_RECONSUME_TIMES = st.sampled_from((-1, 1, 2))


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
                  prefix: str = "full") -> tuple[Run, dict[str, str]]:
    """Run `workload` through the client with its maxReconsumeTimes `client_max` on a fresh server and group, and
    judge it (judge_run: an undeclared or vanished deviation raises); the run and {rule: status}."""
    group, instance = get_fresh_names(prefix)
    run_settings = evolve(SETTINGS, group=group, max_reconsume_times=client_max)
    run = run_workload(open_model_backend, workload, run_settings, instance, log_dir, open_client)
    verdicts = judge_run(run, f"{workload!r}, maxReconsumeTimes={client_max}")
    return run, {verdict.rule: verdict.status for verdict in verdicts}


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
