"""Throughput of the system: 1k / 10k / 100k messages, 30 % failures, to quiescence; and the steps/s of the
system state machine (properties/test_system.py::ConsumerGroup) under Hypothesis.

Run from the repository root: python benchmarks/bench_system.py [--no-gc] [--no-machine] [sizes...]

Small sizes are repeated and a warm-up run comes first (benchmarks/harness.py). Each size is measured twice:
with CPython's cyclic garbage collector on (as a user runs it), and with the measured
loop's collector off, as `timeit` does ("GC off"). The persistent state of 100k messages is millions of objects,
and every full collection walks all of them.
"""

from __future__ import annotations

import gc
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from benchmarks.harness import print_rates  # noqa: E402
from model.cluster import CompleteConsume, ConsumeStatus, ListenerResult, Produce  # noqa: E402
from model.config import Config  # noqa: E402
from model.drain import drain  # noqa: E402
from model.system import create_system, step  # noqa: E402


def listener(request):
    m = request.messages[0]
    fails = (sum(map(ord, m.uniq_key)) * 7 + m.reconsume_times * 3) % 10 < 3
    status = ConsumeStatus.RECONSUME_LATER if fails else ConsumeStatus.CONSUME_SUCCESS
    return CompleteConsume(request.request_id, ListenerResult(status))


def run(n: int) -> tuple[int, float, float]:
    """Produce n messages to 4 queues and drain two instances to quiescence; (events, wall s, CPU s)."""
    system = create_system(Config(max_reconsume_times=3), ("c1", "c2"), topic_queue_nums=4)
    gc.collect()
    start, cpu_start = time.perf_counter(), time.process_time()
    for i in range(n):
        system, _ = step(system, Produce(f"k{i}", i % 4))
    system, _, events = drain(system, listener)
    return events + n, time.perf_counter() - start, time.process_time() - cpu_start


def measure_machine(examples: int = 20, step_count: int = 30) -> float:
    """Steps/s of the system machine under Hypothesis with the suite's `fast` budget, derandomized so that runs
    compare (generation, execution, invariants; no database)."""
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
    start, cpu_start = time.perf_counter(), time.process_time()
    run_state_machine_as_test(CountedConsumerGroup, settings=budget)
    elapsed, cpu = time.perf_counter() - start, time.process_time() - cpu_start
    steps = CountedConsumerGroup.steps
    rate = steps / elapsed
    print(f"system state machine: {steps} steps in {elapsed:.2f} s = {rate:,.0f} steps/s "
          f"(CPU: {steps / cpu:,.0f} steps/s; {examples} examples of up to {step_count} steps)")
    return rate


def main(sizes: list[int], modes: list[bool], machine: bool) -> None:
    print_rates("system", run, sizes, modes)
    if machine:
        measure_machine()


if __name__ == "__main__":
    args = sys.argv[1:]
    main([int(a) for a in args if a.isdigit()] or [1_000, 10_000, 100_000],
         [True] if "--no-gc" in args else [False, True], "--no-machine" not in args)
