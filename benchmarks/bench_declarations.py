"""How often each declared deviation of a real client shows: a measured frequency in place of "some runs only".

    python benchmarks/bench_declarations.py [--client cpp|node|go] [--rule RULE ...] [--runs N]

For the client (default cpp: rocketmq-client-cpp 1.2.3; `node`: ali-ons) and each of its declared deviations
(conformance/checker/deviations.py's DECLARED, or only the rules named with --rule), the workloads that exercise the
declaration's trigger (its COUNTEREXAMPLES entry and EXTRA below) each run N times (default 20) on a fresh
model-backed server with a fresh group, topic and instance. Every run is judged as a conformance run is
(verdicts.judge with predict_run, then explain_deviations: the declared causes of each deviation) but nothing raises:
the run is counted. Printed per (rule, workload): runs, runs in which the rule was judged (conforms or deviates), runs
in which it deviated, that frequency with its 95 % Wilson interval, the runs in which the declaration's `when` held
("-": when=None, "may show but need not"), and the median run time. Rows marked "also" are declared rules the
workload does not stand for that deviated in some of its runs. Listed under the table: rules that deviated with no
declaration at all, declared rules that deviated where none of their declared causes explains it (an UNDECLARED
cause), and declared rules whose `when` held but that did not deviate. This is a measurement, not a test.
"""

from __future__ import annotations

import argparse
import math
import statistics
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path

from attrs import evolve, frozen

from conformance.checker.deviations import ALI_ONS, COUNTEREXAMPLES, CPP, DECLARED, get_declared
from conformance.checker.deviations_go import GO
from conformance.checker.differential import predict_run
from conformance.checker.verdicts import explain_deviations, judge
from conformance.harness import SETTINGS, get_fresh_names
from conformance.runner.backends.model import open_model_backend
from conformance.runner.clients import cpp, golang, node
from conformance.runner.run import run_workload
from conformance.suite.full_run import parse_counterexample

Z_95 = 1.96
CLIENTS: dict[str, tuple[tuple[str, str], Callable, Callable[[], str | None]]] = {
    "cpp": (CPP, cpp.open_cpp_consumer, cpp.get_unavailable_reason),
    "node": (ALI_ONS, node.open_node_consumer, node.get_unavailable_reason),
    "go": (GO, golang.open_go_consumer, golang.get_unavailable_reason),
}

# Workloads beyond a declaration's COUNTEREXAMPLES entry, as the same Python source (workload, the client's
# maxReconsumeTimes). The run puts message i on queue i % 2 (topic_queue_nums 2, produced before the client starts),
# so m0 and m2 share queue 0 and meet in its first pulled batch; m1 is alone on queue 1.
#
# CC-04 (cpp, when=None, "sometimes CONSUME_SUCCESS"; no counterexample has shown it): a listener that raises, in a
# batch after a message it accepted (the probe the declaration cites: [success, EXCEPTION] in one batch), and alone.
CC04_BATCH = ('Workload((MessageSpec("m0", "TagA"), MessageSpec("m1", "TagA"), '
              'MessageSpec("m2", "TagA", 0, ("EXCEPTION",)))), -1')
CC04_SINGLE = 'Workload((MessageSpec("m0", "TagA", 0, ("EXCEPTION",)),)), -1'
# CC-02 (cpp, when=None: a pulled batch is one listener call, sent back whole): batch-shaped workloads, several
# messages and one failing. BATCH: m0 fails once with m2 in its batch (m2 is sent back unseen, or accepted after
# it). MIXED: differential/test_clients_on_both.py's "mixed" workload, the one CC-02 deviated on in 2 of 5 model
# runs there; m0 and m2 do not share a first batch (m2 is delayed 1 s), so a batch can only form of the two
# failures' retry copies in %RETRY%'s one queue, when they fall due together.
CC02_BATCH = ('Workload((MessageSpec("m0", "TagA", 0, ("RECONSUME_LATER",)), MessageSpec("m1", "TagA"), '
              'MessageSpec("m2", "TagA"))), -1')
CC02_MIXED = ('Workload((MessageSpec("m0", "TagA"), MessageSpec("m1", "TagA", 0, ("RECONSUME_LATER",)), '
              'MessageSpec("m2", "TagB", 1, ("RECONSUME_LATER", "RECONSUME_LATER")))), -1')
# OR-04 (cpp, when=None) has a counterexample, orderly m0 raising twice; its orderly loss (the exception read as
# success) is a SY-10 deviation as well, so those runs stand for cpp's SY-10 too.
EXTRA: dict[tuple[str, tuple[str, str]], tuple[tuple[str, str], ...]] = {
    ("CC-04", CPP): (("raise in batch", CC04_BATCH), ("raise alone", CC04_SINGLE)),
    ("CC-02", CPP): (("batch, m0 fails", CC02_BATCH), ("mixed", CC02_MIXED)),
    ("SY-10", CPP): (("orderly raise", COUNTEREXAMPLES[("OR-04", CPP)]),),
}
# Short names of the declared counterexamples' workloads (the rest are called "counterexample <rule>").
NAMES = {COUNTEREXAMPLES[("OR-04", CPP)]: "orderly raise", COUNTEREXAMPLES[("SB-09", CPP)]: "poison",
         COUNTEREXAMPLES[("CC-05", CPP)]: "plain", COUNTEREXAMPLES[("CC-06", CPP)]: "send-back error",
         COUNTEREXAMPLES[("CC-07", CPP)]: "not writeable", COUNTEREXAMPLES[("CC-04", ALI_ONS)]: "null answer",
         COUNTEREXAMPLES[("CC-06", ALI_ONS)]: "retry copy fails",
         COUNTEREXAMPLES[("CC-07", ALI_ONS)]: "not writeable twice"}


@frozen
class Measured:
    """One judged run: its wall time, the rules judged and deviating, the declared rules whose `when` held, the
    declared rules that deviated where no declared cause explains it (with explain_deviations' first problem of
    each), or the error that stopped it."""

    seconds: float
    judged: frozenset[str] = frozenset()
    deviated: frozenset[str] = frozenset()
    when_held: frozenset[str] = frozenset()
    unexplained: tuple[tuple[str, str], ...] = ()
    error: str = ""


def get_workloads(client: tuple[str, str], rules: list[str] | None) -> dict[str, tuple[str, list[str]]]:
    """{source: (name, the rules it stands for)} for the client's declarations (all, or `rules`)."""
    found: dict[str, tuple[str, list[str]]] = {}
    for deviation in DECLARED:
        if deviation.client != client or (rules and deviation.rule not in rules):
            continue
        counterexample = COUNTEREXAMPLES.get((deviation.rule, client), "")
        named = [(NAMES.get(counterexample, f"counterexample {deviation.rule}"), counterexample)] \
            if counterexample else []
        for name, source in (*named, *EXTRA.get((deviation.rule, client), ())):
            found.setdefault(source, (name, []))[1].append(deviation.rule)
    return found


def measure_run(source: str, open_client: Callable, client: tuple[str, str], log_dir: str) -> Measured:
    """Run the workload of `source` once on a fresh server, group and topic, and judge it without raising."""
    workload, client_max = parse_counterexample(source)
    group, instance = get_fresh_names("decl")
    settings = evolve(SETTINGS, group=group, topic=f"T_{group}", max_reconsume_times=client_max)
    started = time.monotonic()
    try:
        run = run_workload(open_model_backend, workload, settings, instance, log_dir, open_client)
    except Exception as error:  # noqa: BLE001 - a run that could not finish is counted, not fatal
        return Measured(time.monotonic() - started, error=f"{type(error).__name__}: {error}"[:200])
    seconds = time.monotonic() - started
    verdicts = judge(run, predict_run(run), source)
    when_held = {d.rule for d in DECLARED if d.client == client and d.when is not None and d.when(run)}
    deviated = frozenset(v.rule for v in verdicts if v.status == "deviates")
    unexplained: dict[str, str] = {}
    for problem in explain_deviations(verdicts, run)[1]:
        rule = next((r for r in deviated if problem.startswith(f"undeclared deviation of {r} ")), None)
        if rule is not None and get_declared(rule, client) is not None:
            unexplained.setdefault(rule, problem)
    return Measured(seconds, frozenset(v.rule for v in verdicts if v.status in ("conforms", "deviates")),
                    deviated, frozenset(when_held), tuple(sorted(unexplained.items())))


def get_wilson_interval(hits: int, runs: int, z: float = Z_95) -> tuple[float, float]:
    """The Wilson score interval of a binomial proportion hits / runs."""
    if runs == 0:
        return 0.0, 1.0
    p = hits / runs
    denominator = 1 + z * z / runs
    centre = (p + z * z / (2 * runs)) / denominator
    half = z * math.sqrt(p * (1 - p) / runs + z * z / (4 * runs * runs)) / denominator
    return max(0.0, centre - half), min(1.0, centre + half)


def format_row(rule: str, name: str, stands: str, measured: list[Measured], client: tuple[str, str]) -> str:
    done = [m for m in measured if not m.error]
    hits = sum(rule in m.deviated for m in done)
    low, high = get_wilson_interval(hits, len(done))
    declared = get_declared(rule, client)
    when = "-" if declared is None or declared.when is None else str(sum(rule in m.when_held for m in done))
    median = statistics.median(m.seconds for m in done) if done else float("nan")
    frequency = f"{hits / len(done):.2f} [{low:.2f}, {high:.2f}]" if done else "-"
    return (f"{rule:<6} {name:<24} {stands:<5} {len(done):>4} {sum(rule in m.judged for m in done):>6} {hits:>8} "
            f"{frequency:<18} {when:>9} {median:>8.1f}")


def print_table(results: dict[str, tuple[str, list[str], list[Measured]]], client: tuple[str, str],
                rules: list[str] | None) -> None:
    header = f"{'rule':<6} {'workload':<24} {'for':<5} {'runs':>4} {'judged':>6} {'deviated':>8} " \
             f"{'freq [95% Wilson]':<18} {'when held':>9} {'median s':>8}"
    print(f"{client[0]} {client[1]}: declared deviations, how often they show")
    print(header)
    print("-" * len(header))
    declared_rules = [d.rule for d in DECLARED if d.client == client]
    undeclared: list[str] = []
    for name, stands_for, measured in results.values():
        for rule in stands_for:
            print(format_row(rule, name, "yes", measured, client))
        for rule in declared_rules:
            if rule not in stands_for and (not rules or rule in rules) \
                    and any(rule in m.deviated for m in measured):
                print(format_row(rule, name, "also", measured, client))
        errors = [m.error for m in measured if m.error]
        if errors:
            undeclared.append(f"{name}: {len(errors)} runs did not finish, first: {errors[0]}")
        others = sorted({r for m in measured for r in m.deviated if get_declared(r, client) is None})
        for rule in others:
            undeclared.append(f"{name}: undeclared {rule} deviated in {sum(rule in m.deviated for m in measured)} "
                              f"of {len(measured)} runs")
        for rule in sorted({r for m in measured for r, _problem in m.unexplained}):
            problems = [problem for m in measured for r, problem in m.unexplained if r == rule]
            undeclared.append(f"{name}: declared {rule} deviated with an UNDECLARED cause in {len(problems)} of "
                              f"{len(measured)} runs, first: {problems[0][:300]}")
        for rule in declared_rules:
            missed = sum(rule in m.when_held and rule not in m.deviated for m in measured)
            if missed:
                undeclared.append(f"{name}: declared {rule}'s `when` held but it did not deviate in {missed} of "
                                  f"{len(measured)} runs")
    print()
    print("workloads (Python source of (workload, the client's maxReconsumeTimes), as in COUNTEREXAMPLES):")
    for source, (name, _rules, _measured) in results.items():
        print(f"  {name}: {source}")
    for line in undeclared:
        print(line)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--client", choices=list(CLIENTS), default="cpp")
    parser.add_argument("--rule", action="append", help="a declared rule to measure (repeatable; default: all)")
    parser.add_argument("--runs", type=int, default=20)
    args = parser.parse_args()
    client, open_client, get_unavailable = CLIENTS[args.client]
    reason = get_unavailable()
    if reason is not None:
        sys.exit(f"{args.client} is unavailable: {reason}")
    workloads = get_workloads(client, args.rule)
    if not workloads:
        sys.exit(f"no declared deviation of {client} among {args.rule} has a workload")
    results: dict[str, tuple[str, list[str], list[Measured]]] = {}
    started = time.monotonic()
    with tempfile.TemporaryDirectory(prefix="bench-declarations-") as log_root:
        for index, (source, (name, stands_for)) in enumerate(workloads.items()):
            measured: list[Measured] = []
            for number in range(args.runs):
                log_dir = Path(log_root, f"w{index}-r{number}")
                log_dir.mkdir()
                one = measure_run(source, open_client, client, str(log_dir))
                measured.append(one)
                shown = one.error or ", ".join(sorted(one.deviated)) or "none"
                print(f"[{time.monotonic() - started:6.0f} s] {name} ({'/'.join(stands_for)}) run {number + 1}/"
                      f"{args.runs}: {one.seconds:.1f} s, deviated: {shown}", file=sys.stderr, flush=True)
            results[source] = (name, stands_for, measured)
    print_table(results, client, args.rule)
    print(f"total {time.monotonic() - started:.0f} s wall")


if __name__ == "__main__":
    main()
