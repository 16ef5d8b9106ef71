"""Benchmark of the aggregate's opt-in JVM tuning (not a test): prints the wall time of `python -m reports aggregate`
in a fresh process with the JVM's own defaults and with `--tuned-jvm`, and their ratio.

    python benchmarks/bench_reports_jvm.py [--base-lines 100000] [--new-lines 50000] [--repeats 5]

The job is the incremental one users run: one new run (`--new-lines` report lines, the writer's own format, from
benchmarks/bench_reports.py) ingested into a warehouse that already holds `--base-lines`, then the aggregate. Each
repeat gives the new run a new modification time, so it is ingested anew. The two modes alternate, so a shared
host's drift hits both alike; `--tuned-jvm` gets its class archive in a scratch cache directory, written by two
tuned jobs before the timed ones (the first tuned job skips it, the second writes it at exit).
"""

from __future__ import annotations

import argparse
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from benchmarks.bench_reports import renew, write_run  # noqa: E402

NEW_RUN = "bench-incremental"
MODES = {"JVM defaults": [], "--tuned-jvm": ["--tuned-jvm"]}
TIMEOUT = 900


def run_job(arguments: list[str], environ: dict[str, str]) -> float:
    """Seconds of one aggregate in a fresh process (JVM start included); a failure stops the benchmark."""
    command = [sys.executable, "-m", "reports", "aggregate", *arguments]
    started = time.perf_counter()
    subprocess.run(command, cwd=ROOT, env=environ, check=True, capture_output=True, timeout=TIMEOUT)
    return time.perf_counter() - started


def prepare(work: Path, base_lines: int, new_lines: int) -> tuple[list[str], Path]:
    """(the job's arguments, the directory of the new run): the base runs ingested once, the new run written."""
    base, new = work / "base", work / "new"
    write_run(base, "bench-base", base_lines, 1)
    write_run(new, NEW_RUN, new_lines, 9999)
    arguments = [str(base), str(new), "--warehouse", str(work / "warehouse"), "--out", str(work / "site")]
    run_job(arguments, dict(os.environ))
    return arguments, new


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--base-lines", type=int, default=100_000)
    parser.add_argument("--new-lines", type=int, default=50_000)
    parser.add_argument("--repeats", type=int, default=5)
    args = parser.parse_args()
    work = Path(tempfile.mkdtemp(prefix="bench-reports-jvm-"))
    try:
        arguments, new = prepare(work, args.base_lines, args.new_lines)
        environ = {**os.environ, "RMQSPEC_CACHE_DIR": str(work / "cache")}
        for warm_up in range(2):  # the class archive: skipped by the first tuned job, written by the second
            renew(new, warm_up)
            run_job([*arguments, "--tuned-jvm"], environ)
        seconds: dict[str, list[float]] = {mode: [] for mode in MODES}
        for repeat in range(args.repeats):
            for index, (mode, extra) in enumerate(MODES.items()):
                renew(new, 10 + 2 * repeat + index)
                seconds[mode].append(run_job([*arguments, *extra], environ))
                print(f"  repeat {repeat + 1}, {mode}: {seconds[mode][-1]:.1f} s", flush=True)
        print(f"one {args.new_lines}-line run into a {args.base_lines}-line warehouse + aggregate, fresh process")
        for mode, found in seconds.items():
            print(f"  {mode:>13}: median {statistics.median(found):.1f} s, best {min(found):.1f} s; all: ", end="")
            print(", ".join(f"{s:.1f}" for s in found))
        ratio = statistics.median(seconds["JVM defaults"]) / statistics.median(seconds["--tuned-jvm"])
        print(f"  defaults / tuned (medians): {ratio:.2f}")
    finally:
        shutil.rmtree(work, ignore_errors=True)


if __name__ == "__main__":
    main()
