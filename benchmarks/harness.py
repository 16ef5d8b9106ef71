"""What the throughput benchmarks share: a warm-up, repeats of the small sizes, GC on and off, wall and CPU rates.

`run(count)` does the work for `count` messages, timing only its measured part after a `gc.collect()`, and
returns (events, wall seconds, CPU seconds). Sizes run smaller than `MIN_EVENTS` events are repeated until they
reach it: a 1k run lasts a few hundredths of a second, too short for one timing to mean anything. One unreported
run of the smallest size comes first, because CPython's adaptive interpreter specialises the hot paths during the
first calls.

"GC off" disables CPython's cyclic collector while `run` runs, as `timeit` does; "GC on" is how a user runs it.
"""

from __future__ import annotations

import gc
from collections.abc import Callable

MIN_EVENTS = 20_000

Run = Callable[[int], tuple[int, float, float]]


def measure_size(run: Run, count: int, gc_off: bool) -> tuple[int, float, float]:
    """Events, wall and CPU seconds summed over enough repeats of `run(count)`."""
    events = wall = cpu = 0
    while events < MIN_EVENTS or not wall:
        if gc_off:
            gc.disable()
        try:
            one_events, one_wall, one_cpu = run(count)
        finally:
            gc.enable()
        events, wall, cpu = events + one_events, wall + one_wall, cpu + one_cpu
    return events, wall, cpu


def print_rates(title: str, run: Run, sizes: list[int], gc_modes: list[bool]) -> dict[tuple[bool, int], float]:
    """Print events/s per size and mode, and the rate at the largest size over the rate at the smallest."""
    run(sizes[0])
    rates = {}
    for gc_off in gc_modes:
        label = "GC off" if gc_off else "GC on "
        for count in sizes:
            events, wall, cpu = measure_size(run, count, gc_off)
            rates[gc_off, count] = events / wall
            print(f"{title} {count:>7} messages, {label}: {events:>8} events in {wall:6.2f} s = "
                  f"{events / wall:>8,.0f} events/s (CPU time {cpu:6.2f} s = {events / cpu:>8,.0f} events/s)",
                  flush=True)
        ratio = rates[gc_off, sizes[-1]] / rates[gc_off, sizes[0]]
        print(f"{title} {label.strip()}: rate at {sizes[-1]} / rate at {sizes[0]} = {ratio:.2f}", flush=True)
    return rates
