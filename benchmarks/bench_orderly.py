"""Orderly consume path throughput: take → listener outcome → result → offset update, in events per second.

Run: python benchmarks/bench_orderly.py
"""

from __future__ import annotations

import time

from attrs import evolve

from model.broker import create_broker
from model.config import Config
from model.message import Message, MessageQueue
from model.offset_store import create_offset_store
from model.orderly import OrderlyStatus, process_consume_result, process_gate, process_store_commit, process_take
from model.process_queue import create_process_queue, put_message
from model.queue_locks import on_lock_batch

OUTCOMES = [OrderlyStatus.SUCCESS, OrderlyStatus.SUCCESS, OrderlyStatus.SUSPEND, OrderlyStatus.COMMIT]


def run(messages: int, max_reconsume_times: int) -> tuple[int, float]:
    config = Config(consume_mode="orderly", max_reconsume_times=max_reconsume_times)
    mq = MessageQueue("t", 0)
    broker = on_lock_batch(create_broker(config, "g", {"t": 1}), "g", (mq,), "A", 0).broker
    store = create_offset_store(config)
    pq, _ = put_message(create_process_queue(0), [Message("t", queue_offset=o) for o in range(messages)])
    pq, events, started = evolve(pq, locked=True), 0, time.perf_counter()
    while True:
        process_gate(pq, config, 0, 0, False)
        pq, msgs = process_take(pq, config)
        if not msgs:
            break
        result = process_consume_result(broker, pq, config, "g", msgs, OUTCOMES[events % 4], 0)
        broker, pq = result.broker, result.pq
        store = process_store_commit(store, mq, pq, result.commit_offset)
        events += 1
    return events, time.perf_counter() - started


if __name__ == "__main__":
    for size, max_times in ((1_000, 3), (10_000, 3), (10_000, 0)):
        events, seconds = run(size, max_times)
        print(f"orderly consume: {size} messages, maxReconsumeTimes={max_times}: "
              f"{events} listener events in {seconds:.2f} s = {events / seconds:,.0f} events/s")
