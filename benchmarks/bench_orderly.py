"""Orderly consumption through the whole system: produce n messages, then drain with a listener that suspends every
fourth delivery once (maxReconsumeTimes 3); events/s at growing n, to show the per-event cost stays flat.

Run from the repository root: python benchmarks/bench_orderly.py [--no-gc] [sizes...]

Each size is measured with the cyclic garbage collector on and off during the drain ("GC off", as `timeit` does).
Events per message grow with the backlog: while more than pullThresholdForQueue (1000) messages are cached, the
client re-checks every 50 ms (PULL_TIME_DELAY_MILLS_WHEN_CACHE_FLOW_CONTROL), and each SUSPEND holds the queue 1 s.
"""

from __future__ import annotations

import gc
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from model.client.orderly import OrderlyResult, OrderlyStatus  # noqa: E402
from model.system.drain import drain  # noqa: E402
from model.system.events import CompleteConsume, Produce  # noqa: E402
from model.system.step import create_system, step  # noqa: E402
from model.values.config import Config  # noqa: E402


def listener(request):
    msg = request.messages[0]
    failing = msg.queue_offset % 4 == 0 and msg.reconsume_times == 0
    status = OrderlyStatus.SUSPEND if failing else OrderlyStatus.SUCCESS
    return CompleteConsume(request.request_id, OrderlyResult(status))


def run(messages: int, gc_off: bool) -> tuple[int, float, float]:
    config = Config(consume_mode="orderly", max_reconsume_times=3)
    system = create_system(config, ("c1", "c2"))
    for i in range(messages):
        system, _ = step(system, Produce(f"k{i}", queue_id=i % 2))
    gc.collect()
    if gc_off:
        gc.disable()
    started, cpu_started = time.perf_counter(), time.process_time()
    system, _observations, events = drain(system, listener, observe=len)  # streamed and dropped, as in bench_system
    elapsed, cpu = time.perf_counter() - started, time.process_time() - cpu_started
    gc.enable()
    return events, elapsed, cpu


if __name__ == "__main__":
    sizes = [int(a) for a in sys.argv[1:] if a.isdigit()] or [1_000, 10_000, 100_000]
    for gc_off in ([True] if "--no-gc" in sys.argv else [False, True]):
        label = "GC off" if gc_off else "GC on"
        for size in sizes:
            events, seconds, cpu = run(size, gc_off)
            print(f"orderly system drain, {label}: {size} messages: {events} events in {seconds:.2f} s = "
                  f"{events / seconds:,.0f} events/s (CPU time {cpu:.2f} s = {events / cpu:,.0f} events/s)", flush=True)
