"""Speed of chapter 02's transitions: send-backs and fallback sends per second on a growing store.

Run: python benchmarks/bench_send_back.py  (prints figures; not a test). Each message fails until it reaches the DLQ, so
the store grows by 17 copies per message; a flat rate across sizes shows the per-event cost does not grow.
Figures are printed with Python's cyclic garbage collector on (what a suite run pays: full collections scan the
whole growing heap) and off (the model's own cost).
"""

from __future__ import annotations

import gc
import sys
import time
from pathlib import Path

from attrs import evolve

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from model.broker.retry_send import on_send_retry_message
from model.broker.send_back import compute_send_back_request, on_consumer_send_msg_back
from model.broker.state import create_broker
from model.broker.store import put_message
from model.client.retry_message import compute_fallback_retry_message
from model.values.config import Config
from model.values.message import create_message


def run_send_backs(config: Config, messages: int) -> tuple[int, float]:
    broker = create_broker(config, "G", {"T": 4})
    events, started = 0, time.perf_counter()
    for key in range(messages):
        store, message = put_message(broker.store, create_message("T", f"U{key}"), key, config.delay_levels)
        broker = evolve(broker, store=store)
        while message.topic != "%DLQ%G":
            request = compute_send_back_request(message, "G", config, 0)
            broker, result = on_consumer_send_msg_back(broker, config, request, key, key * 7919 % 99_999_999)
            message, events = result.stored, events + 1
    return events, time.perf_counter() - started


def run_fallbacks(config: Config, messages: int) -> tuple[int, float]:
    broker = create_broker(config, "G", {"T": 4})
    events, started = 0, time.perf_counter()
    for key in range(messages):
        message = create_message("T", f"U{key}")
        built, reconsume, max_times = compute_fallback_retry_message(message, "G", config)
        broker, _ = on_send_retry_message(broker, config, built, reconsume, max_times, key, key % 99_999_999)
        events += 1
    return events, time.perf_counter() - started


def main() -> None:
    config = Config()
    for collector in ("on", "off"):
        if collector == "on":
            gc.enable()
        else:
            gc.disable()
        for messages in (100, 1000, 5000):
            events, seconds = run_send_backs(config, messages)
            print(f"gc {collector:>3}  send-back: {events:>6} events, store of {events + messages:>6} messages: "
                  f"{events / seconds:>7,.0f} events/s")
        for messages in (1000, 10000):
            events, seconds = run_fallbacks(config, messages)
            print(f"gc {collector:>3}  fallback:  {events:>6} events: {events / seconds:>7,.0f} events/s")
    gc.enable()


if __name__ == "__main__":
    main()
