"""Throughput of the delay-level timer: schedule and dispatch N delayed messages (random levels, clock advances).

An event is one put into SCHEDULE_TOPIC_XXXX or one delivery to the real topic. Prints events/s for 1k, 10k and
100k messages and the ratio of the 100k rate to the 1k rate (per-event cost must not grow with history).

    python benchmarks/bench_delay_timer.py [--profile] [--no-gc] [--repeat N] [sizes...]

Rates are printed by wall time and by the process's CPU time, the best and the median of N samples per size (5 by
default), after a warm-up (benchmarks/harness.py).

Each size is measured with CPython's cyclic garbage collector on (as a user runs it) and with it off during the
measured loop, as `timeit` does ("GC off"); --no-gc measures only the latter. Full collections walk every live
object, and the persistent store of 100k messages is about a million of them.
"""

from __future__ import annotations

import argparse
import cProfile
import gc
import pstats
import random
import sys
import time
from array import array
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from benchmarks.harness import REPEATS, print_rates  # noqa: E402
from model.broker.delay_timer import process_schedule_until  # noqa: E402
from model.broker.state import Broker  # noqa: E402
from model.broker.store import put_message  # noqa: E402
from model.values.config import Config  # noqa: E402
from model.values.message import create_message  # noqa: E402
from model.values.records import evolve  # noqa: E402


def run(count: int, seed: int = 7) -> tuple[int, float, float]:
    """Schedule `count` messages, advancing the clock 0-40 ms between puts, then drain; return events, wall seconds
    and CPU seconds."""
    rng = random.Random(seed)  # the benchmark's own randomness; the model takes no random input here
    config = Config()
    # Arrays, not a list of tuples: a list of 100k objects is walked by every full collection during the run.
    levels = array("b", (rng.randint(1, 20) for _ in range(count)))
    steps = array("b", (rng.randint(0, 40) for _ in range(count)))
    broker, now, delivered = Broker(), 0, 0
    gc.collect()
    started, cpu_started = time.perf_counter(), time.process_time()
    for index, (level, step) in enumerate(zip(levels, steps, strict=True)):
        now += step
        broker, batch = process_schedule_until(broker, config, now)
        delivered += len(batch)
        message = create_message("Orders", f"k{index}", queue_id=index % 4, delay_level=level)
        store, _ = put_message(broker.store, message, now, config.delay_levels)
        broker = evolve(broker, store=store)
    broker, batch = process_schedule_until(broker, config, now + 8_000_000)
    delivered += len(batch)
    elapsed, cpu = time.perf_counter() - started, time.process_time() - cpu_started
    assert delivered == count, (delivered, count)
    return count + delivered, elapsed, cpu


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("sizes", nargs="*", type=int, default=[1_000, 10_000, 100_000])
    parser.add_argument("--no-gc", action="store_true", help="measure only with the collector off")
    parser.add_argument("--repeat", type=int, default=REPEATS, help="samples per size")
    parser.add_argument("--profile", action="store_true", help="cProfile one 10k run instead")
    args = parser.parse_args()
    if args.profile:
        cProfile.run("run(10_000)", "/tmp/bench_delay_timer.prof")
        pstats.Stats("/tmp/bench_delay_timer.prof").sort_stats("tottime").print_stats(25)
        return
    print_rates("delay timer", run, args.sizes, [True] if args.no_gc else [False, True], args.repeat)


if __name__ == "__main__":
    main()
