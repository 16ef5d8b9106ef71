"""Speed of the 5.x POP model (chapters 14-16): receives, acks, nacks and revives per second on a growing store.

Run: python benchmarks/bench_pop.py [--repeat N] (prints figures; not a test). Each message is produced, received
through the proxy, nacked once (changeInvisibleDuration), revived into the retry topic, received again and acked:
six events a message, with a few hundred messages in flight at a time. A flat rate across store sizes shows that the
cost of an event does not grow with the history: the POP state keeps only what is in flight or unpersisted.

Then the same through the system (model/system): a 4.x push consumer group and two POP groups (remoting POP push
consumers, gRPC SimpleConsumers behind the proxy) on one broker, 30 % of first attempts failing, produced in waves
of 1,000 each drained to quiescence; every event (produce, listener result, timer: pops, revive runs, persists,
the 4.x client's timers) counts, as in bench_system.py.
"""

from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from benchmarks.harness import REPEATS, print_rates
from model.broker.pop.restart import on_persist
from model.broker.pop.revive import on_revive
from model.broker.pop.state import PopGroupConfig, create_pop_broker, set_broker
from model.broker.store import put_message
from model.client.listener import ConsumeStatus, ListenerResult
from model.client.pop_consumer import PopConsumer
from model.proxy.consumer import on_change_invisible_duration, on_proxy_ack
from model.proxy.receive import ReceiveRequest, on_receive
from model.system.drain import drain
from model.system.events import AddPopConsumer, CompleteConsume, CompletePop, Produce
from model.system.step import create_system, step
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


WAVE = 1_000
SUCCESS, LATER = ListenerResult(ConsumeStatus.CONSUME_SUCCESS), ListenerResult(ConsumeStatus.RECONSUME_LATER)


def fails(message) -> bool:
    """About 30 % of first attempts fail, decided by the key (as bench_system.py's listener)."""
    return (sum(map(ord, message.uniq_key)) * 7 + message.reconsume_times * 3) % 10 < 3


def run_system(n: int) -> tuple[int, float, float]:
    """Produce n messages to 4 queues in waves of WAVE, each drained to quiescence, with a 4.x group of two
    instances and two POP groups of two consumers each on one broker; (events, wall s, CPU s). The waves keep what
    is in flight the same at every size, so a rate that stays flat says the cost does not grow with the history."""
    system = create_system(Config(profile="5.3.3", max_reconsume_times=3), ("c1", "c2"), topic_queue_nums=4,
                           pop_groups={"GP": PopGroupConfig(), "GR": PopGroupConfig()})
    for client_id, group, via_proxy in (("p1", "GP", False), ("p2", "GP", False), ("r1", "GR", True),
                                        ("r2", "GR", True)):
        system, _ = step(system, AddPopConsumer(PopConsumer(client_id, group, 0, via_proxy, 8, 30_000)))
    start, cpu_start, events = time.perf_counter(), time.process_time(), n
    for wave in range(0, n, WAVE):
        for i in range(wave, min(n, wave + WAVE)):
            system, _ = step(system, Produce(f"k{i}", i % 4))
        system, _, drained = drain(
            system, lambda r: CompleteConsume(r.request_id, LATER if fails(r.messages[0]) else SUCCESS),
            observe=len, pop_listener=lambda r: CompletePop(r.request_id, LATER if fails(r.messages[0]) else SUCCESS))
        events += drained
    return events, time.perf_counter() - start, time.process_time() - cpu_start


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--repeat", type=int, default=REPEATS, help="samples per size of the system run")
    args = parser.parse_args()
    for messages in (1_000, 5_000, 20_000):
        events, seconds, pending = run_cycles(messages)
        print(f"pop: {messages:>6} messages, {events:>7} events: {events / seconds:>8,.0f} events/s "
              f"({pending} checkpoints pending at the end)")
    print_rates("system with POP", run_system, [1_000, 10_000, 50_000], [False], args.repeat)


if __name__ == "__main__":
    main()
