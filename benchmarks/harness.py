"""What the throughput benchmarks share: a warm-up, repeated samples per size, GC on and off, wall and CPU rates.

`run(count)` does the work for `count` messages, timing only its measured part after a `gc.collect()`, and
returns (events, wall seconds, CPU seconds). One sample of a size is enough runs of it to reach `MIN_EVENTS`
events: a 1k run lasts a few hundredths of a second, too short for one timing to mean anything. One unreported
run of the smallest size comes first, because CPython's adaptive interpreter specialises the hot paths during the
first calls.

Each size is sampled `repeats` times, round-robin with the other sizes, and the best and the median sample are
printed. On a shared machine the same code's rate swings by up to 2x between samples, in phases of tens of
seconds; as `timeit` advises, the best sample is the one least disturbed by other processes, and the median shows
what a typical sample gets. The ratio between sizes is taken on the best samples.

"GC off" disables CPython's cyclic collector while `run` runs, as `timeit` does; "GC on" is how a user runs it.
"""

from __future__ import annotations

import gc
import statistics
from collections.abc import Callable

MIN_EVENTS = 20_000
REPEATS = 5

Run = Callable[[int], tuple[int, float, float]]


def measure_sample(run: Run, count: int, gc_off: bool) -> tuple[float, float]:
    """Events/s by wall and by CPU time of one sample: enough runs of `run(count)` to reach MIN_EVENTS events."""
    events = wall = cpu = 0
    while events < MIN_EVENTS or not wall:
        if gc_off:
            gc.disable()
        try:
            one_events, one_wall, one_cpu = run(count)
        finally:
            gc.enable()
        events, wall, cpu = events + one_events, wall + one_wall, cpu + one_cpu
    return events / wall, events / cpu


def print_rates(title: str, run: Run, sizes: list[int], gc_modes: list[bool],
                repeats: int = REPEATS) -> dict[tuple[bool, int], float]:
    """Print the best and median events/s per size and mode, and the best rate at the largest size over the best
    rate at the smallest; return the best rates.

    The samples go round-robin (every size and mode once per round, `repeats` rounds): this host has slow phases
    of tens of seconds, and sampling one size after another would put a whole size inside one of them.
    """
    run(sizes[0])
    samples: dict[tuple[bool, int], list[tuple[float, float]]] = {(gc_off, count): [] for gc_off in gc_modes
                                                                   for count in sizes}
    for round_number in range(1, repeats + 1):
        for key in samples:
            samples[key].append(measure_sample(run, key[1], key[0]))
        print(f"{title}: round {round_number} of {repeats} done", flush=True)
    best = {}
    for gc_off in gc_modes:
        label = "GC off" if gc_off else "GC on "
        for count in sizes:
            walls, cpus = [wall for wall, _ in samples[gc_off, count]], [cpu for _, cpu in samples[gc_off, count]]
            best[gc_off, count] = max(walls)
            print(f"{title} {count:>7} messages, {label}: best {max(walls):>8,.0f} events/s, "
                  f"median {statistics.median(walls):>8,.0f} (CPU time: best {max(cpus):>8,.0f}, "
                  f"median {statistics.median(cpus):>8,.0f}; {repeats} samples)")
        ratio = best[gc_off, sizes[-1]] / best[gc_off, sizes[0]]
        print(f"{title} {label.strip()}: best rate at {sizes[-1]} / best rate at {sizes[0]} = {ratio:.2f}")
    return best
