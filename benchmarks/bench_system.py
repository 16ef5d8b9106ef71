"""Throughput of the system: 1k / 10k / 100k messages, 30 % failures, to quiescence; and the steps/s of the
system state machine (properties/test_system.py::ConsumerGroup) under Hypothesis.

Run from the repository root: python benchmarks/bench_system.py [--no-gc] [--no-machine] [--repeat N] [sizes...]

Each size is sampled N times (5 by default; the best and the median are printed) after a warm-up run
(benchmarks/harness.py), and the machine is measured N times too. Each size is measured twice:
with CPython's cyclic garbage collector on (as a user runs it), and with the measured
loop's collector off, as `timeit` does ("GC off"). The persistent state of 100k messages is millions of objects,
and every full collection walks all of them.
"""

from __future__ import annotations

import argparse
import gc
import statistics
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from benchmarks.harness import REPEATS, print_rates  # noqa: E402
from model.client.listener import ConsumeStatus, ListenerResult  # noqa: E402
from model.system.drain import drain, is_quiescent  # noqa: E402
from model.system.events import CompleteConsume, Produce  # noqa: E402
from model.system.step import create_system, step  # noqa: E402
from model.values.config import Config  # noqa: E402

# The two answers, built once: the listener is the benchmark's own code, and its cost is counted in the rate.
SUCCESS, LATER = ListenerResult(ConsumeStatus.CONSUME_SUCCESS), ListenerResult(ConsumeStatus.RECONSUME_LATER)


def listener(request):
    """Fails about 30 % of first attempts, decided by the message's key (the same in every run)."""
    m = request.messages[0]
    fails = (sum(map(ord, m.uniq_key)) * 7 + m.reconsume_times * 3) % 10 < 3
    return CompleteConsume(request.request_id, LATER if fails else SUCCESS)


def run(n: int) -> tuple[int, float, float]:
    """Produce n messages to 4 queues and drain two instances to quiescence; (events, wall s, CPU s)."""
    system = create_system(Config(max_reconsume_times=3), ("c1", "c2"), topic_queue_nums=4)
    gc.collect()
    start, cpu_start = time.perf_counter(), time.process_time()
    for i in range(n):
        system, _ = step(system, Produce(f"k{i}", i % 4))
    # Observations are passed on and dropped, as a user streaming them to a check would (not kept to the end).
    # A drain stops after 2,000 timers at one virtual instant (SY-12: the listener takes no virtual time, so every
    # pull of a large run falls at instant 0; 100k messages stopped at 64k consumed): it resumes to quiescence.
    events = n
    while True:
        system, _, drained = drain(system, listener, observe=len)
        events += drained
        if is_quiescent(system):
            return events, time.perf_counter() - start, time.process_time() - cpu_start


def measure_machine(repeats: int = REPEATS, examples: int = 20, step_count: int = 30) -> float:
    """Steps/s of the system machine under Hypothesis with the suite's `fast` budget, derandomized so that runs
    compare (generation, execution, invariants; no database): the best and the median of `repeats` runs."""
    # Imported only now, after the rate runs: Hypothesis and pytest make the process's heap several times larger,
    # and every full collection during the rate runs would walk it (65 ms each, as long as a whole 1k run).
    from hypothesis import HealthCheck, settings
    from hypothesis.stateful import invariant, run_state_machine_as_test

    from properties.test_system import ConsumerGroup

    class CountedConsumerGroup(ConsumerGroup):
        """The machine of properties/test_system.py, counting its steps (an invariant runs after every rule)."""

        steps = 0

        @invariant()
        def count_step(self):
            CountedConsumerGroup.steps += 1

    budget = settings(max_examples=examples, stateful_step_count=step_count, deadline=None, database=None,
                      derandomize=True, suppress_health_check=list(HealthCheck))
    walls, cpus = [], []
    for _ in range(repeats + 1):  # the first run warms up
        CountedConsumerGroup.steps = 0
        start, cpu_start = time.perf_counter(), time.process_time()
        run_state_machine_as_test(CountedConsumerGroup, settings=budget)
        elapsed, cpu = time.perf_counter() - start, time.process_time() - cpu_start
        walls.append(CountedConsumerGroup.steps / elapsed)
        cpus.append(CountedConsumerGroup.steps / cpu)
    walls, cpus = walls[1:], cpus[1:]
    print(f"system state machine: {CountedConsumerGroup.steps} steps per run, best {max(walls):,.0f} steps/s, "
          f"median {statistics.median(walls):,.0f} (CPU time: best {max(cpus):,.0f}, median "
          f"{statistics.median(cpus):,.0f}; {repeats} runs of {examples} examples of up to {step_count} steps)")
    return max(walls)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("sizes", nargs="*", type=int, default=[1_000, 10_000, 100_000])
    parser.add_argument("--no-gc", action="store_true", help="measure only with the collector off")
    parser.add_argument("--no-machine", action="store_true", help="skip the state machine's steps/s")
    parser.add_argument("--repeat", type=int, default=REPEATS, help="samples per size, and machine runs")
    args = parser.parse_args()
    print_rates("system", run, args.sizes, [True] if args.no_gc else [False, True], args.repeat)
    if not args.no_machine:
        measure_machine(args.repeat)


if __name__ == "__main__":
    main()
