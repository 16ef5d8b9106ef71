"""Benchmark of incremental ingest through a warm engine (not a test): prints the seconds of one new run ingested
into a warehouse of 1 run and into one of `--runs` runs, plus the aggregate, on each engine, and their ratio.

    python benchmarks/bench_reports_engines.py [--engines local connect] [--new-lines 50000] [--runs 100]
                                               [--base-lines 2000] [--repeats 5] [--warm-up 1]

The job is `python -m reports aggregate` as the command line runs it (reports.job.main), in one long-lived engine:
`local` is an embedded session in this process, `connect` a Spark Connect server (engines/launch.py) that this
process reaches as the job does with `--remote`. Both warehouses are filled once, untimed; `--warm-up` incremental
runs warm the engine up (a long-lived engine has ingested runs before); then the new run (the writer's own format,
benchmarks/bench_reports.py) is ingested anew, with a new modification time, alternately into the small and the
large warehouse, `--repeats` times each. Each repeat's ingest (`job.ingest`: extract, transform and load of the new
run with its partial tables) is timed apart from the whole job (ingest, the aggregate over every run, the site).
"""

from __future__ import annotations

import argparse
import contextlib
import io
import shutil
import statistics
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from benchmarks.bench_reports import open_session, renew, write_run  # noqa: E402
from reports import job  # noqa: E402

NEW_RUN = "bench-incremental"
INGEST_SECONDS: list[float] = []  # job.ingest's seconds, one per job run (timed by a wrapper, below)


def time_ingest(ingest):
    """job.ingest, timed: the job calls it by its module name, so the wrapper times the job's own call."""

    def timed(*args, **kwargs):
        started = time.perf_counter()
        try:
            return ingest(*args, **kwargs)
        finally:
            INGEST_SECONDS.append(time.perf_counter() - started)

    return timed


job.ingest = time_ingest(job.ingest)


def fill(spark, work: Path, new: Path, name: str, runs: int, lines: int) -> list[str]:
    """A warehouse of `runs` runs of `lines` lines, ingested once; returns the job's arguments with the new run."""
    base = work / f"base-{name}"
    for number in range(runs):
        write_run(base, f"bench-{name}-{number:04d}", lines, number)
    arguments = [str(base), str(new), "--warehouse", str(work / f"warehouse-{name}")]
    arguments += ["--out", str(work / f"out-{name}")]
    run_job(spark, arguments)
    return arguments


def run_job(spark, arguments: list[str]) -> float:
    started = time.perf_counter()
    with contextlib.redirect_stdout(io.StringIO()), contextlib.redirect_stderr(io.StringIO()):
        code = job.main(arguments, spark=spark)
    if code != 0:
        raise SystemExit(f"the aggregate exited {code}: {arguments}")
    return time.perf_counter() - started


def measure(name: str, work: Path, args: argparse.Namespace) -> None:
    started = time.perf_counter()
    with open_session(name) as spark:
        print(f"{name}: engine up in {time.perf_counter() - started:.1f} s", flush=True)
        small = fill(spark, work / name, work / "new", "1", 1, args.base_lines)
        large = fill(spark, work / name, work / "new", str(args.runs), args.runs, args.base_lines)
        seconds: dict[str, list[float]] = {"1 run": [], f"{args.runs} runs": []}
        ingests: dict[str, list[float]] = {label: [] for label in seconds}
        # Warm-up: the first incremental runs load and compile what the others reuse; the JIT's optimising tier
        # keeps compiling the hot paths over the first few jobs.
        for warm_up in range(args.warm_up):
            renew(work / "new", warm_up)
            run_job(spark, small)
        for repeat in range(args.repeats):
            for index, (label, arguments) in enumerate(zip(seconds, (small, large), strict=True)):
                renew(work / "new", args.warm_up + 2 * repeat + index)
                seconds[label].append(run_job(spark, arguments))
                ingests[label].append(INGEST_SECONDS[-1])
    print(f"{name}: one {args.new_lines}-line run, warm engine ({args.warm_up} incremental runs before), warehouse of "
          f"{args.base_lines}-line runs")
    print_medians("ingest alone", ingests, args.runs)
    print_medians("whole job (ingest, aggregate, site)", seconds, args.runs)


def print_medians(what: str, seconds: dict[str, list[float]], runs: int) -> None:
    print(f"  {what}:")
    for label, found in seconds.items():
        print(f"    into {label:>9}: median {statistics.median(found):.2f} s, best {min(found):.2f} s; all: ", end="")
        print(", ".join(f"{s:.2f}" for s in found))
    small_median, large_median = (statistics.median(found) for found in seconds.values())
    print(f"    {runs} runs / 1 run (medians): {large_median / small_median:.2f}", flush=True)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--engines", nargs="+", choices=["local", "connect"], default=["local", "connect"])
    parser.add_argument("--new-lines", type=int, default=50_000)
    parser.add_argument("--runs", type=int, default=100, help="runs in the large warehouse")
    parser.add_argument("--base-lines", type=int, default=2_000, help="lines per run in the warehouses")
    parser.add_argument("--repeats", type=int, default=5)
    parser.add_argument("--warm-up", type=int, default=1, help="incremental runs before the timed ones")
    args = parser.parse_args()
    work = Path(tempfile.mkdtemp(prefix="bench-engines-"))
    try:
        write_run(work / "new", NEW_RUN, args.new_lines, 9999)
        for name in args.engines:
            measure(name, work, args)
    finally:
        shutil.rmtree(work, ignore_errors=True)


if __name__ == "__main__":
    main()
