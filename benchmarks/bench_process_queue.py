"""ProcessQueue put/remove cycles with 1k, 10k and 100k cached messages: the per-op cost must not grow with size.

Each cycle is what a concurrently consumer does in steady state: a pull caches a batch of 32 new messages at the
tail (put_message) and 32 consumed messages leave from the head (remove_message, one call per message as with
consumeMessageBatchMaxSize = 1), so the cache stays at its size. Run: `python benchmarks/bench_process_queue.py`.
"""

from __future__ import annotations

import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from model.client.process_queue import create_process_queue, put_message, remove_message  # noqa: E402
from model.values.message import Message  # noqa: E402

BATCH = 32
CYCLES = 300
SIZES = (1_000, 10_000, 100_000)


def make_batch(first: int, count: int = BATCH) -> list[Message]:
    return [Message("TopicA", body=b"x" * 128, queue_offset=offset) for offset in range(first, first + count)]


def measure(cached: int) -> float:
    """Operations (messages put or removed) per second at a steady cache of `cached` messages."""
    pq, _ = put_message(create_process_queue(), make_batch(0, cached))
    head, tail = 0, cached
    started = time.perf_counter()
    for _ in range(CYCLES):
        pq, _ = put_message(pq, make_batch(tail))
        tail += BATCH
        for msg in make_batch(head):
            pq, _ = remove_message(pq, [msg], now=0)
        head += BATCH
    elapsed = time.perf_counter() - started
    assert pq.msg_count == cached
    return 2 * BATCH * CYCLES / elapsed


def main() -> None:
    print(f"{'cached messages':>16} {'ops/s':>10} {'us/op':>8}")
    for cached in SIZES:
        rate = measure(cached)
        print(f"{cached:>16,} {rate:>10,.0f} {1e6 / rate:>8.1f}")


if __name__ == "__main__":
    main()
