"""Benchmark of the Spark aggregate (not a test): prints seconds, rows/s and the ratio to an equivalent DuckDB job.

    python benchmarks/bench_reports.py [--sizes 100000 1000000 5000000] [--work DIR] [--driver-memory 4g]
                                       [--incremental-runs 5] [--repeats 1] [--engine local|connect] [--tuned-jvm]
                                       [--conf KEY=VALUE ...]

Generates realistic report lines (the writer's own format and size: run lines, @given and stateful cases with rule
features and timings, a few shrunk failures) in runs of 2 writers x 25k lines over the 11 tox configurations,
then per size: full ingest + aggregate with Spark (JVM start timed separately), and the same pipeline in DuckDB, in
one process, side by side, `--repeats` times alternating (from 3 repeats, the medians of the third on: Spark in a
JVM that ran the job before, as a long-lived engine does). Beside each wall time, the CPU seconds the engine used
(Spark: its JVM and this process; DuckDB: this process, where it runs): on a shared host other jobs stretch the wall
times, and a loaded host's wall ratio tends to the CPU ratio (each engine gets its share of the cores), where an idle
host's lets Spark use the cores DuckDB leaves idle. Last (unless `--incremental-runs 0`), one new run of ~50k lines
ingested incrementally into the 100k warehouse plus the aggregate, as the command line runs it (a fresh process: JVM
start included), 5 times (its median; the first after the large sizes may find Spark's jars evicted from the page
cache, and a shared host's speed varies); and the same job 5 times in the benchmark's own JVM, warm from the sizes
before it, which shows how much of a fresh process's time is the JVM's start and warm-up.

With `--engine connect` the sizes and the warm incremental runs go through a Spark Connect server started for the
benchmark (engines/launch.py, the long-lived engine of `python -m reports aggregate --remote`; needs the `connect`
extra): the server's start is timed apart, and its driver has `--driver-memory`. With `--tuned-jvm` the embedded
driver maps its classes from the class-data sharing archive of `python -m reports aggregate --tuned-jvm`
(reports/class_archive.py; built once into the cache by the second such run: the line after the start says whether
it was there), and its JIT flags stay the JVM's defaults.

The DuckDB baseline (benchmarks/duckdb_job.py) does the job's work with the same lines, step by step: the
records table (lines numbered, parsed with the job's schema, bad ones quarantined with the job's reasons, Parquet
partitioned by run), the per-run partial tables from the records read back, and the output tables combined from
them; reports/tests/test_pipeline.py checks that both make the same tables. Needs duckdb (a dev dependency, only
the baseline here).
"""

from __future__ import annotations

import argparse
import contextlib
import io
import json
import os
import random
import resource
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from benchmarks import duckdb_job  # noqa: E402
from engines import launch  # noqa: E402
from reportformat.lines import compact_observation, make_run_line  # noqa: E402
from reports import class_archive, job  # noqa: E402
from reports.session import get_spark  # noqa: E402
from reports.spec_rules import Rule  # noqa: E402
from runenv.run_context import get_cache_dir  # noqa: E402

LINES_PER_WRITER = 25_000
CONFIGS = [
    (v, m, c, r)
    for v, m, c, r in [
        ("4.9.8", "clustering", "concurrently", "default"),
        ("4.9.8", "broadcasting", "orderly", "tight"),
        ("4.9.1", "clustering", "orderly", "default"),
        ("4.9.1", "broadcasting", "concurrently", "tight"),
        ("5.0.0", "clustering", "orderly", "tight"),
        ("5.0.0", "broadcasting", "concurrently", "default"),
        ("5.3.3", "clustering", "concurrently", "tight"),
        ("5.3.3", "broadcasting", "orderly", "default"),
        ("4.9.1", "clustering", "orderly", "tight"),
        ("4.9.8", "clustering", "orderly", "tight"),
        ("5.3.3", "clustering", "orderly", "tight"),
    ]
]
RULE_POOL = [
    f"{prefix}-{n:02d}"
    for prefix, count in [
        ("CFG", 6),
        ("SB", 14),
        ("ST", 8),
        ("DT", 10),
        ("PQ", 8),
        ("OS", 8),
        ("PL", 8),
        ("CC", 8),
        ("RB", 8),
        ("OR", 10),
    ]
    for n in range(1, count + 1)
]
MACHINE_RULES = ["consume_fails", "consume_succeeds", "advance_clock", "restart_broker", "rebalance", "pull"]
INVARIANTS = ["offset_never_decreases", "no_message_lost", "retry_bound_holds"]


def make_metadata(failed: bool) -> dict:
    return {
        "traceback": "Traceback ...\nAssertionError" if failed else None,
        "reproduction_decorator": "@reproduce_failure('6.170.15', b'AAEC')" if failed else None,
        "notes": [],
        "predicates": {},
        "backend": {},
        "sys.argv": ["-c"],
        "os.getpid()": 4242,
        "imported_at": 1.7e9,
        "data_status": 3 if failed else 2,
        "phase": "generate",
        "interesting_origin": None,
        "status_reason_location": None,
        "choice_nodes": None,
        "choice_spans": None,
    }


def make_case(rng: random.Random, run_id: str, writer: str, index: int) -> dict:
    """One observation shaped like Hypothesis 6.170's, before the writer compacts it."""
    stateful = rng.random() < 0.3
    failed = rng.random() < 0.002
    rules = rng.sample(RULE_POOL, rng.randint(3, 8) if stateful else rng.randint(1, 2))
    timing = {"execute:test": rng.random() * 1e-3, "overall:gc": 0.0, "generate:data": rng.random() * 1e-4}
    steps = []
    if stateful:
        for name in rng.sample(MACHINE_RULES, 4):
            timing[f"execute:rule:{name}"] = rng.random() * 1e-3
            timing[f"generate:rule:{name}"] = rng.random() * 1e-4
            steps += [f"state.{name}(n={rng.randint(0, 99)})"] * rng.randint(1, 8)
        timing |= {f"execute:invariant:{name}": rng.random() * 1e-4 for name in INVARIANTS}
    machine = "properties/test_chapter.py::TestMachine::runTest"
    nodeid = machine if stateful else f"properties/test_chapter.py::test_property_{index % 40}"
    representation = "state = Machine()\n" + "\n".join(steps) if stateful else f"test_property(n={index})"
    return {
        "type": "test_case",
        "property": nodeid,
        "run_start": 1.7e9,
        "status": "failed" if failed else "passed",
        "status_reason": "AssertionError at properties/test_chapter.py:42" if failed else "",
        "representation": representation,
        "arguments": {"n": index},
        "how_generated": "during generate phase",
        "features": dict.fromkeys(rules, ""),
        "coverage": None,
        "timing": timing,
        "metadata": make_metadata(failed),
    }


def write_run(directory: Path, run_id: str, lines: int, seed: int) -> None:
    rng = random.Random(seed)
    (directory / run_id).mkdir(parents=True)
    for worker in range(max(1, lines // LINES_PER_WRITER)):
        version, model, mode, preset = CONFIGS[(seed + worker) % len(CONFIGS)]
        writer = f"v-{worker}-gw{worker % 2}"
        run = {
            "run_id": run_id,
            "writer": writer,
            "git_commit": "0" * 40,
            "tox_env": writer,
            "version": version,
            "message_model": model,
            "consume_mode": mode,
            "retry_preset": preset,
            "hypothesis_profile": "deep",
            "seed": str(seed),
            "started_at": 1.7e9 + seed,
            "finished_at": None,
        }
        stamp = {"run_id": run_id, "writer": writer, "expected_violation": None}
        with open(directory / run_id / f"{writer}.jsonl", "w", encoding="utf-8") as out:
            out.write(json.dumps(make_run_line("run started", run, 1.7e9)) + "\n")
            for index in range(min(lines, LINES_PER_WRITER) - 2):
                case = make_case(rng, run_id, writer, index)
                line = compact_observation(case, stamp | {"nodeid": case["property"]})
                out.write(json.dumps(line) + "\n")
            out.write(json.dumps(make_run_line("run finished", run | {"finished_at": 1.8e9}, 1.8e9)) + "\n")


def generate(directory: Path, rows: int) -> None:
    per_run = 2 * LINES_PER_WRITER
    for number in range(max(1, rows // per_run)):
        write_run(directory, f"bench-{number:04d}", min(rows, per_run), number)


def get_own_cpu() -> float:
    """CPU seconds of this process (its threads: DuckDB's, py4j's) so far."""
    usage = resource.getrusage(resource.RUSAGE_SELF)
    return usage.ru_utime + usage.ru_stime


def get_jvm_cpu(spark) -> float:
    """CPU seconds of the embedded driver's JVM so far (its tasks, JIT compilers, collector); 0 without one here (a
    Spark Connect session has no SparkContext)."""
    try:
        process = spark.sparkContext._gateway.proc
    except Exception:
        return 0.0
    fields = Path(f"/proc/{process.pid}/stat").read_text().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def run_spark(spark, inputs: Path, work: Path) -> tuple[float, float]:
    """(wall seconds, CPU seconds) of the whole job: ingest and aggregate."""
    rules = [Rule(rule_id, "", "bench.md", 1) for rule_id in RULE_POOL]
    started, cpu = time.perf_counter(), get_own_cpu() + get_jvm_cpu(spark)
    job.ingest(spark, [str(inputs)], str(work / "warehouse"), force=True)
    job.aggregate(spark, str(work / "warehouse"), str(work / "tables"), 20, rules)
    return time.perf_counter() - started, get_own_cpu() + get_jvm_cpu(spark) - cpu


def run_duckdb(inputs: Path, work: Path) -> tuple[float, float]:
    cpu = get_own_cpu()
    seconds = duckdb_job.run_job(inputs, work, [(rule, "bench.md") for rule in RULE_POOL])
    return seconds, get_own_cpu() - cpu


def write_incremental_run(work: Path) -> Path:
    """The new ~50k-line run of the incremental measurements (a directory of runs)."""
    new = work / "new-runs"
    shutil.rmtree(new, ignore_errors=True)
    write_run(new, "bench-incremental", 2 * LINES_PER_WRITER, 9999)
    return new


def get_incremental_args(base_inputs: Path, new: Path, warehouse: Path, work: Path) -> list[str]:
    return [str(base_inputs), str(new), "--warehouse", str(warehouse), "--out", str(work / "site")]


def renew(new: Path, repeat: int) -> None:
    """A new modification time for the run's files, so that the run is new again (ingested anew, replacing its copy)."""
    for path in (new / "bench-incremental").iterdir():
        os.utime(path, (time.time() + repeat, time.time() + repeat))


def time_repeats(run, new: Path, repeats: int, first: int = 0) -> list[float]:
    """Seconds of `run()` over `repeats` repeats, the new run renewed before each."""
    seconds = []
    for repeat in range(first, first + repeats):
        renew(new, repeat)
        started = time.perf_counter()
        run()
        seconds.append(time.perf_counter() - started)
    return seconds


def run_incremental(args: list[str], new: Path, repeats: int) -> list[float]:
    """The new run through the command line, in a fresh process (JVM start included), `repeats` times. The first
    repeat after a large run may find the JVM's files evicted from the page cache."""
    command = [sys.executable, "-m", "reports", "aggregate", *args]
    # A Spark Connect session marks this process's environment as Connect mode; the command runs its own driver.
    env = {key: value for key, value in os.environ.items() if key != "SPARK_CONNECT_MODE_ENABLED"}
    options = {"cwd": ROOT, "env": env, "check": True, "capture_output": True}
    return time_repeats(lambda: subprocess.run(command, **options), new, repeats)


def run_incremental_warm(spark, args: list[str], new: Path, repeats: int) -> list[float]:
    """The same job in the benchmark's JVM, already warm from the sizes above: no JVM start and no warm-up (JIT,
    class loading, code generation), what a fresh process could take at best."""

    def run() -> None:
        with contextlib.redirect_stdout(io.StringIO()), contextlib.redirect_stderr(io.StringIO()):
            job.main(args, spark=spark)

    return time_repeats(run, new, repeats, first=repeats)


def measure_size(spark, work: Path, rows: int, repeats: int) -> None:
    """Spark's whole job and DuckDB's on `rows` lines, alternating, `repeats` times; a line each."""
    inputs = work / f"in-{rows}"
    if not inputs.exists():
        generate(inputs, rows)
    megabytes = sum(f.stat().st_size for f in inputs.rglob("*.jsonl")) / 1e6
    pairs = []
    for repeat in range(repeats):
        spark_s, spark_cpu = run_spark(spark, inputs, work / f"spark-{rows}")
        duck_s, duck_cpu = run_duckdb(inputs, work / f"duck-{rows}")
        pairs.append((spark_s, duck_s))
        print(f"{rows:>10} {megabytes:>7.0f} {repeat + 1:>6} {spark_s:>8.1f} {duck_s:>9.1f} "
              f"{spark_s / duck_s:>13.2f} {rows / spark_s:>13.0f} {spark_cpu:>10.1f} {duck_cpu:>11.1f} "
              f"{spark_cpu / duck_cpu if duck_cpu and spark_cpu else float('nan'):>10.2f} {os.getloadavg()[0]:>5.1f}",
              flush=True)
    if len(pairs) > 2:
        print_warm_ratio(rows, pairs[2:])


def print_warm_ratio(rows: int, pairs: list[tuple[float, float]]) -> None:
    """The medians of the repeats from the third on: Spark in a JVM that ran this job twice before (a warm engine)."""
    spark_s, duck_s = (statistics.median(times) for times in zip(*pairs, strict=True))
    print(f"{rows:>10} warm (repeats 3-{len(pairs) + 2}, medians): spark {spark_s:.1f} s, duckdb {duck_s:.1f} s, "
          f"spark/duckdb {spark_s / duck_s:.2f}", flush=True)


def print_incremental(label: str, seconds: list[float]) -> None:
    median, best = statistics.median(seconds), min(seconds)
    print(f"{label}, {len(seconds)} runs: median {median:.1f} s, best {best:.1f} s; all (in order): ", end="")
    print(", ".join(f"{s:.1f}" for s in seconds))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--sizes", type=int, nargs="+", default=[100_000, 1_000_000, 5_000_000])
    parser.add_argument("--work", type=Path, default=None, help="scratch directory (default: a temporary one)")
    parser.add_argument("--driver-memory", default="4g")
    parser.add_argument("--incremental-runs", type=int, default=5, help="repeats of the incremental run (0: none)")
    parser.add_argument("--repeats", type=int, default=1,
                        help="runs of each size, Spark and DuckDB alternating; from 3, the medians of the third on")
    parser.add_argument("--engine", choices=["local", "connect"], default="local",
                        help="the embedded driver, or a Spark Connect server started for the benchmark")
    parser.add_argument("--tuned-jvm", action="store_true",
                        help="embedded driver: map its classes from the class-data sharing archive in the cache")
    parser.add_argument("--conf", action="append", default=[], metavar="KEY=VALUE",
                        help="a Spark setting for the session (repeatable), to measure one against the job's own")
    args = parser.parse_args()
    work = args.work or Path(tempfile.mkdtemp(prefix="bench-reports-"))
    started = time.perf_counter()
    settings = dict(item.split("=", 1) for item in args.conf)
    with open_session(args.engine, args.driver_memory, args.tuned_jvm, settings) as spark:
        print(f"{args.engine}: JVM + SparkSession start: {time.perf_counter() - started:.1f} s; "
              f"load average {os.getloadavg()[0]:.1f}; {describe_archive(args)}")
        measure(spark, work, args)
    if args.work is None:
        shutil.rmtree(work, ignore_errors=True)


def describe_archive(args: argparse.Namespace) -> str:
    if args.engine != "local" or not args.tuned_jvm:
        return "no class archive"
    path = class_archive.get_archive_path(get_cache_dir(os.environ), os.environ)
    return f"class archive {path} {'mapped' if path and path.is_file() else 'not built yet (run again)'}"


@contextlib.contextmanager
def open_session(engine: str, driver_memory: str | None = None, tuned_jvm: bool = False, settings=None):
    """The embedded driver (`local`) or a session of a Spark Connect server started here (`connect`), with
    `driver_memory` (else each one's default) and `settings`; stopped after. `tuned_jvm`: the embedded driver's
    class archive."""
    if engine == "local":
        conf = ({"spark.driver.memory": driver_memory} if driver_memory else {}) | (settings or {})
        spark = get_spark(conf=conf or None, class_archive=tuned_jvm)
        yield spark
        spark.stop()
        return
    server_context = launch.connect_server(driver_memory=driver_memory) if driver_memory else launch.connect_server()
    with server_context as server:
        spark = get_spark(remote=server.url, conf=settings)
        yield spark
        spark.stop()


def measure(spark, work: Path, args: argparse.Namespace) -> None:
    print(f"{'rows':>10} {'MB':>7} {'repeat':>6} {'spark s':>8} {'duckdb s':>9} {'spark/duckdb':>13}", end="")
    print(f" {'spark rows/s':>13} {'spark cpu':>10} {'duckdb cpu':>11} {'cpu ratio':>10} {'load':>5}")
    for rows in args.sizes:
        measure_size(spark, work, rows, args.repeats)
    if args.incremental_runs < 1:
        return
    smallest = min(args.sizes)
    new = write_incremental_run(work)
    incremental = get_incremental_args(work / f"in-{smallest}", new, work / f"spark-{smallest}" / "warehouse", work)
    warm = run_incremental_warm(spark, incremental, new, args.incremental_runs)
    print(f"incremental: one 50k-line run into the {smallest}-row warehouse + aggregate")
    print_incremental("  fresh process (JVM start included)", run_incremental(incremental, new, args.incremental_runs))
    print_incremental(f"  through the warm engine ({args.engine}: no start, no warm-up)", warm)


if __name__ == "__main__":
    main()
