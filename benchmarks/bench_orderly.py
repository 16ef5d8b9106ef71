"""Orderly consumption through the whole system: produce n messages, then drain with a listener that suspends every
fourth delivery once (maxReconsumeTimes 3); events/s at growing n, to show the per-event cost stays flat.

Run from the repository root: python benchmarks/bench_orderly.py
"""

from __future__ import annotations

import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from model.cluster import CompleteConsume, Produce  # noqa: E402
from model.config import Config  # noqa: E402
from model.drain import drain  # noqa: E402
from model.orderly import OrderlyResult, OrderlyStatus  # noqa: E402
from model.system import create_system, step  # noqa: E402


def listener(request):
    msg = request.messages[0]
    failing = msg.queue_offset % 4 == 0 and msg.reconsume_times == 0
    status = OrderlyStatus.SUSPEND if failing else OrderlyStatus.SUCCESS
    return CompleteConsume(request.request_id, OrderlyResult(status))


def run(messages: int) -> tuple[int, float]:
    config = Config(consume_mode="orderly", max_reconsume_times=3)
    system = create_system(config, ("c1", "c2"))
    for i in range(messages):
        system, _ = step(system, Produce(f"k{i}", queue_id=i % 2))
    started = time.perf_counter()
    system, _observations, events = drain(system, listener)
    return events, time.perf_counter() - started


if __name__ == "__main__":
    for size in (1_000, 10_000):
        events, seconds = run(size)
        print(f"orderly system drain: {size} messages: {events} events in {seconds:.2f} s = "
              f"{events / seconds:,.0f} events/s")
