"""Throughput of the conformance harness with the real clients, and each full run's wall time.

    python benchmarks/bench_conformance.py [--client cpp|java|all] [--messages N] [--repeats R] [--no-full-run]

1. Messages per second through each real client (rocketmq-client-cpp 1.2.3; RocketMQ's Java client 4.9.8, the
   reference): N messages produced on a fresh model-backed server, each consumed once with CONSUME_SUCCESS, from
   the consumer's start (the Java adapter's JVM start included) to the last delivery (the adapter's JSON-lines round
   trip per message included), R times; best and median printed.
2. Each full run's wall time: the command of `tox run -e conformance-cpp` / `conformance-java` in a fresh pytest
   process, timed end to end.
"""

from __future__ import annotations

import argparse
import statistics
import subprocess
import sys
import time
from pathlib import Path

from attrs import evolve

from conformance.harness import SETTINGS, get_fresh_names
from conformance.history.workload import MessageSpec, Workload
from conformance.runner.backends.model import open_model_backend
from conformance.runner.clients.cpp import CppConsumer
from conformance.runner.clients.driver import StartRequest
from conformance.runner.clients.java import JavaConsumer

ROOT = Path(__file__).resolve().parent.parent

LIMIT_S = 120.0
CLIENTS = {
    "cpp": ("rocketmq-client-cpp 1.2.3", CppConsumer, ["tests/conformance", "conformance/suite/test_cpp_full.py"]),
    "java": ("rocketmq-client-java 4.9.8 (reference)", JavaConsumer,
             ["conformance/suite/test_java_driver.py", "conformance/suite/test_java_smoke.py",
              "conformance/suite/test_java_full.py"]),
}


def measure_rate(count: int, consumer_class) -> float:
    """Messages per second through the client for `count` successful messages."""
    group, instance = get_fresh_names("bench")
    settings = evolve(SETTINGS, group=group)
    workload = Workload(tuple(MessageSpec(f"m{i}") for i in range(count)))
    with open_model_backend(settings, workload) as backend:
        for index, spec in enumerate(workload.messages):
            backend.produce(spec.key, spec.tags, spec.delay_level, index % settings.topic_queue_nums)
        request = StartRequest(backend.namesrv, settings.group, settings.topic, instance)
        started = time.monotonic()
        with consumer_class(request, workload.make_script()) as consumer:
            if not consumer.wait_for(lambda found: len({d.uniq_key for d in found}) >= count, LIMIT_S):
                raise TimeoutError(f"{len(consumer.deliveries)} of {count} delivered in {LIMIT_S} s")
            last = max(d.time_ms for d in consumer.deliveries) / 1000.0
    return count / (last - started)


def time_full_run(paths: list[str]) -> float:
    started = time.monotonic()
    subprocess.run([sys.executable, "-m", "pytest", "-n", "0", "-q", *paths], cwd=ROOT, check=True)
    return time.monotonic() - started


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--client", choices=[*CLIENTS, "all"], default="all")
    parser.add_argument("--messages", type=int, default=500)
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--no-full-run", action="store_true")
    args = parser.parse_args()
    for name in CLIENTS if args.client == "all" else [args.client]:
        label, consumer_class, paths = CLIENTS[name]
        rates = [measure_rate(args.messages, consumer_class) for _ in range(args.repeats)]
        samples = ", ".join(f"{rate:.0f}" for rate in rates)
        print(f"{label} through the harness, {args.messages} messages: "
              f"best {max(rates):.0f} msg/s, median {statistics.median(rates):.0f} msg/s ({samples})")
        if not args.no_full_run:
            print(f"{label} full conformance run ({' '.join(paths)}): {time_full_run(paths):.1f} s wall")


if __name__ == "__main__":
    main()
