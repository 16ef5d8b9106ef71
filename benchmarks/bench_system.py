"""Throughput of the system: 1k / 10k / 100k messages, 30 % failures, to quiescence.

Run from the repository root: PYTHONPATH=. python benchmarks/bench_system.py [sizes...]
Then the steps/s of the ConsumerGroup machine (properties/test_system.py) under Hypothesis, at the fast budget.
"""

from __future__ import annotations

import sys
import time

from model.cluster import CompleteConsume, ConsumeStatus, ListenerResult, Produce
from model.config import Config
from model.drain import drain
from model.system import create_system, step


def listener(request):
    m = request.messages[0]
    fails = (sum(map(ord, m.uniq_key)) * 7 + m.reconsume_times * 3) % 10 < 3
    status = ConsumeStatus.RECONSUME_LATER if fails else ConsumeStatus.CONSUME_SUCCESS
    return CompleteConsume(request.request_id, ListenerResult(status))


def run(n: int) -> float:
    system = create_system(Config(max_reconsume_times=3), ("c1", "c2"), topic_queue_nums=4)
    start = time.perf_counter()
    for i in range(n):
        system, _ = step(system, Produce(f"k{i}", i % 4))
    system, _, events = drain(system, listener)
    elapsed = time.perf_counter() - start
    rate = (events + n) / elapsed
    print(f"{n:>7} messages: {events + n:>8} events in {elapsed:6.2f} s = {rate:8.0f} events/s")
    return rate


def machine_steps_per_second(examples: int = 50) -> float:
    """Rules (steps) the ConsumerGroup machine runs per second, invariants and drains included."""
    from hypothesis import HealthCheck, settings
    from hypothesis.stateful import invariant, run_state_machine_as_test

    from properties.test_system import ConsumerGroup

    steps = [0]

    class CountedConsumerGroup(ConsumerGroup):
        @invariant()
        def count_step(self):
            steps[0] += 1

    start = time.perf_counter()
    run_state_machine_as_test(CountedConsumerGroup, settings=settings(
        max_examples=examples, stateful_step_count=30, deadline=None, database=None,
        suppress_health_check=list(HealthCheck)))
    elapsed = time.perf_counter() - start
    print(f"ConsumerGroup machine: {steps[0]} steps in {elapsed:5.2f} s = {steps[0] / elapsed:6.0f} steps/s")
    return steps[0] / elapsed


def main(sizes):
    rates = [run(n) for n in sizes]
    print(f"events/s ratio, smallest size / largest size: {rates[0] / rates[-1]:.2f}")
    machine_steps_per_second()


if __name__ == "__main__":
    main([int(a) for a in sys.argv[1:]] or [1_000, 10_000, 100_000])
