"""Speed of the 5.x POP model (chapters 14-16): receives, acks, nacks and revives per second on a growing store.

Run: python benchmarks/bench_pop.py  (prints figures; not a test). Each message is produced, received through the
proxy, nacked once (changeInvisibleDuration), revived into the retry topic, received again and acked: six events a
message, with a few hundred messages in flight at a time. A flat rate across store sizes shows that the cost of an
event does not grow with the history: the POP state keeps only what is in flight or unpersisted.
"""

from __future__ import annotations

import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from model.broker.pop.restart import on_persist
from model.broker.pop.revive import on_revive
from model.broker.pop.state import create_pop_broker, set_broker
from model.broker.store import put_message
from model.proxy.consumer import on_change_invisible_duration, on_proxy_ack
from model.proxy.receive import ReceiveRequest, on_receive
from model.values.config import Config
from model.values.message import create_message
from model.values.records import evolve

IN_FLIGHT = 200


def run_cycles(messages: int) -> tuple[int, float, int]:
    """(events, seconds, checkpoints pending at the end) for `messages` messages in waves of IN_FLIGHT."""
    config = Config(profile="5.3.3")
    state, now, events = create_pop_broker(config, "G", {"T": 4}), 1_000, 0
    started = time.perf_counter()
    for wave in range(0, messages, IN_FLIGHT):
        for key in range(wave, min(wave + IN_FLIGHT, messages)):
            message = create_message("T", f"U{key}", queue_id=key % 4)
            store, _ = put_message(state.broker.store, message, now, config.delay_levels)
            state = set_broker(state, evolve(state.broker, store=store))
        handles = []
        for _ in range(IN_FLIGHT):
            now += 1
            state, answer = on_receive(state, ReceiveRequest("G", "T", 1, 10_000), now, now % 100)
            handles += answer.handles
        for handle in handles:
            now += 1
            state, _ = on_change_invisible_duration(state, "G", "T", handle, 0, now)
        now += 3_000
        state, _ = on_revive(state, now)
        for _ in range(IN_FLIGHT):
            now += 1
            state, answer = on_receive(state, ReceiveRequest("G", "T", 1, 10_000), now, 0)
            for handle in answer.handles:
                state, _ = on_proxy_ack(state, "G", "T", handle, now)
        state = on_persist(state)
        events += 6 * IN_FLIGHT
    return events, time.perf_counter() - started, len(state.pop.checkpoints)


def main() -> None:
    for messages in (1_000, 5_000, 20_000):
        events, seconds, pending = run_cycles(messages)
        print(f"pop: {messages:>6} messages, {events:>7} events: {events / seconds:>8,.0f} events/s "
              f"({pending} checkpoints pending at the end)")


if __name__ == "__main__":
    main()
