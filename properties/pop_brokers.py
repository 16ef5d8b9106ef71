"""The 5.x brokers the properties start from, built through the model's own entry points (chapters 14-19)."""

from __future__ import annotations

from model.broker.pop.config import PopConfig
from model.broker.pop.state import PopBroker, PopGroupConfig, create_pop_broker, set_broker
from model.broker.store import put_message
from model.values.config import Config
from model.values.message import create_message
from model.values.records import evolve
from properties.pop_strategies import GROUP, TOPIC


def new_pop_broker(queues: int = 1, retry_max_times: int = 16, retry_queue_nums: int = 1,
                   pop_config: PopConfig | None = None, group_config: PopGroupConfig | None = None) -> PopBroker:
    config = Config(profile="5.3.3", retry_max_times=retry_max_times, retry_queue_nums=retry_queue_nums)
    return create_pop_broker(config, GROUP, {TOPIC: queues}, pop_config, group_config)


def produce(state: PopBroker, key: str, *, queue_id: int = 0, tag: str | None = "a", now: int = 0,
            body: bytes = b"body") -> PopBroker:
    """Store a producer's message in T (no delay level)."""
    message = create_message(TOPIC, key, tags=tag, queue_id=queue_id, body=body, born_timestamp=now)
    store, _ = put_message(state.broker.store, message, now, state.config.delay_levels)
    return set_broker(state, evolve(state.broker, store=store))


def produce_many(state: PopBroker, n: int, queues: int = 1, tags: tuple = ("a",)) -> PopBroker:
    for i in range(n):
        state = produce(state, f"m{i}", queue_id=i % queues, tag=tags[i % len(tags)])
    return state


def stored_in(state: PopBroker, topic: str) -> list:
    return [m for m in state.broker.store.get_messages() if m.topic == topic]
