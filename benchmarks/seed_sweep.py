"""The whole property suite over many Hypothesis seeds, a few at a time, each run under a wall-clock limit: every
hang and every unexpected failure is printed with its seed and the command that replays it.

    python benchmarks/seed_sweep.py                         # seeds 0..299, 2 at a time, 240 s each
    python benchmarks/seed_sweep.py --start 1000 --seeds 24 --jobs 2 --limit 240

A run that outlives --limit is killed with its whole process group and counted as a hang. The suite's own
configuration (RMQSPEC_VERSION, ..., RMQSPEC_HYPOTHESIS_PROFILE) passes through, so a sweep can cover any cell of
the tox matrix. The last line is the figure: seeds run, passed, failed, hung, and the wall time.
"""

from __future__ import annotations

import argparse
import os
import shlex
import signal
import subprocess
import sys
import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
TAIL_LINES = 15


def get_command(seed: int) -> list[str]:
    return [sys.executable, "-m", "pytest", "properties", "-n", "0", "-q", "-p", "no:cacheprovider",
            f"--hypothesis-seed={seed}"]


def get_replay(seed: int) -> str:
    settings = " ".join(f"{k}={shlex.quote(v)}" for k, v in sorted(os.environ.items()) if k.startswith("RMQSPEC_"))
    command = " ".join(shlex.quote(part) for part in ["python", *get_command(seed)[1:]])
    return f"{settings} {command}".strip()


def run_seed(seed: int, limit: float) -> tuple[int, str, float, str]:
    """(seed, "passed" | "failed" | "hung", seconds, the output's last lines)."""
    started = time.monotonic()
    process = subprocess.Popen(get_command(seed), cwd=ROOT, stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                               text=True, start_new_session=True)
    try:
        output, _ = process.communicate(timeout=limit)
    except subprocess.TimeoutExpired:
        os.killpg(process.pid, signal.SIGKILL)
        output, _ = process.communicate()
        return seed, "hung", time.monotonic() - started, ""
    tail = "\n".join(output.strip().splitlines()[-TAIL_LINES:])
    return seed, "passed" if process.returncode == 0 else "failed", time.monotonic() - started, tail


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0],
                                     formatter_class=argparse.ArgumentDefaultsHelpFormatter)
    parser.add_argument("--start", type=int, default=0, help="the first seed")
    parser.add_argument("--seeds", type=int, default=300, help="how many consecutive seeds")
    parser.add_argument("--jobs", type=int, default=2, help="runs at once")
    parser.add_argument("--limit", type=float, default=240.0, help="wall-clock seconds per run")
    args = parser.parse_args(argv)
    if args.seeds < 1 or args.jobs < 1 or args.limit <= 0:
        parser.error("--seeds and --jobs take a whole number >= 1, --limit a positive number of seconds")
    started, counts = time.monotonic(), {"passed": 0, "failed": 0, "hung": 0}
    seeds = range(args.start, args.start + args.seeds)
    with ThreadPoolExecutor(max_workers=args.jobs) as pool:
        for seed, verdict, seconds, tail in pool.map(lambda s: run_seed(s, args.limit), seeds):
            counts[verdict] += 1
            if verdict != "passed":
                print(f"seed {seed}: {verdict} after {seconds:.0f} s; replay: {get_replay(seed)}", flush=True)
                if tail:
                    print("    " + tail.replace("\n", "\n    "), flush=True)
    print(f"seeds {args.seeds} ({args.start}..{args.start + args.seeds - 1}): {counts['passed']} passed, "
          f"{counts['failed']} failed, {counts['hung']} hung; {time.monotonic() - started:.0f} s wall, "
          f"{args.jobs} at a time, {args.limit:.0f} s limit each")
    return 0 if counts["passed"] == args.seeds else 1


if __name__ == "__main__":
    sys.exit(main())
