"""The model's broker half as an oracle for one request on the real broker.

For a drawn case, the real broker first stores a message; the harness reads that message back and puts the same
message (properties, reconsumeTimes, body, tags) into a model Broker configured like the real one (the group's
retryMaxTimes and retryQueueNums, the broker's permission, the delay table). The request then goes to both: over
the wire to the real broker, as the model's event to the model. Compared, normalised explicitly: the response code;
whether and where a copy was stored (topic with the example's names anonymised, queue — a random retry queue only
by its range); the copy's properties (the real broker's CLUSTER decoration dropped; the looked-up message's own
offset id, which each side numbers itself, written SELF); its reconsumeTimes.
"""

from __future__ import annotations

import immutables
from attrs import evolve

from conformance.backends.stored_message import StoredMessage
from differential.example import Names
from differential.steps import GROUP_SETTINGS
from model.broker import PERM_READ, PERM_WRITE, Broker, SubscriptionGroupConfig, TopicConfig, create_broker
from model.config import Config
from model.message import Message
from model.retry_send import on_send_retry_message
from model.send_back import SendBackRequest, on_consumer_send_msg_back
from model.store import put_message

NOW = 60_000
DROPPED = frozenset({"CLUSTER"})


def get_config(levels: int, seconds: int) -> Config:
    return Config(message_delay_level=" ".join([f"{seconds}s"] * levels))


def create_model_broker(config: Config, names: Names, perm: int, retry_topic_perm: int | None) -> Broker:
    """A model broker with the example's topic (2 queues) and its created groups, as the settings table made them."""
    broker = create_broker(config, names.group("q1"), {names.topic: 2})
    groups = {names.group(role): SubscriptionGroupConfig(names.group(role), nums, times)
              for role, (times, nums) in GROUP_SETTINGS.items()}
    broker = evolve(broker, groups=immutables.Map(groups), perm=perm)
    if retry_topic_perm is not None:
        retry = f"%RETRY%{names.group('q1')}"
        broker = evolve(broker, topics=broker.topics.set(retry, TopicConfig(retry, 1, 1, retry_topic_perm)))
    return broker


def to_model_message(stored: StoredMessage) -> Message:
    props = {k: v for k, v in stored.properties.items() if k not in DROPPED}
    return Message(stored.topic, stored.body, props.get("TAGS"), immutables.Map(props), stored.queue_id,
                   reconsume_times=stored.reconsume_times, flag=stored.flag)


def put_looked_up(broker: Broker, config: Config, stored: StoredMessage) -> tuple[Broker, Message]:
    store, message = put_message(broker.store, to_model_message(stored), 0, config.delay_levels)
    return evolve(broker, store=store), message


def predict_send_back(broker: Broker, config: Config, looked_up: Message | None, group: str, delay_level: int,
                      max_times: int | None, topic: str) -> tuple[int, Message | None, tuple[str, ...]]:
    offset = looked_up.commit_log_offset if looked_up is not None else 1 << 40
    request = SendBackRequest(group, topic, offset, delay_level, "", max_times)
    _, result = on_consumer_send_msg_back(broker, config, request, NOW, 0)
    return result.code.value, result.stored, result.rules


def predict_retry_send(broker: Broker, config: Config, message: Message, reconsume_times: int | None,
                       max_times: int | None) -> tuple[int, Message | None, tuple[str, ...]]:
    _, result = on_send_retry_message(broker, config, message, reconsume_times, max_times, NOW, 0)
    return result.code.value, result.stored, result.rules


def describe(topic: str, queue_id: int, properties: dict, reconsume_times: int, names: Names, self_id: str,
             random_queue: bool) -> dict:
    props = {k: names.anonymise(v) if k in ("REAL_TOPIC", "RETRY_TOPIC") else v
             for k, v in properties.items() if k not in DROPPED}
    if props.get("ORIGIN_MESSAGE_ID") == self_id:
        props["ORIGIN_MESSAGE_ID"] = "SELF"
    if random_queue:
        assert 0 <= int(props.get("REAL_QID", queue_id)) < 3
        props.pop("REAL_QID", None)
        queue_id = -1 if topic != "SCHEDULE_TOPIC_XXXX" else queue_id
    return {"topic": names.anonymise(topic), "queueId": queue_id, "properties": props,
            "reconsumeTimes": reconsume_times}


PERMS = {"rw": PERM_READ | PERM_WRITE, "r": PERM_READ, "w": PERM_WRITE}
