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

import time

import attrs
import immutables
from attrs import evolve

from conformance.codec.message import StoredMessage
from conformance.runner.backends import admin
from conformance.runner.backends.broker_client import BrokerClient
from differential.example import BOGUS_OFFSET, SCHEDULE_TOPIC, Names, Run
from differential.steps import GROUP_SETTINGS
from model.broker.retry_send import on_send_retry_message
from model.broker.send_back import SendBackRequest, on_consumer_send_msg_back
from model.broker.state import PERM_READ, PERM_WRITE, Broker, SubscriptionGroupConfig, TopicConfig, create_broker
from model.broker.store import put_message
from model.values.config import Config
from model.values.message import Message

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


@attrs.frozen
class SendBackCase:
    """A stored message (reconsumeTimes from the send header, extra properties) and a send-back of it."""

    reconsume_times: int
    props: dict
    role: str
    delay_level: int
    max_times: int | None
    perm: str
    retry_read_only: bool
    bogus: bool


@attrs.frozen
class Verdict:
    agrees: bool
    rules: tuple[str, ...]
    detail: str


def store_original(run: Run, reconsume_times: int, props: dict) -> StoredMessage:
    properties = {"UNIQ_KEY": f"U-{time.monotonic_ns()}", "WAIT": "true", "TAGS": "a", **props}
    response = run.client.send(run.names.topic, 0, b"payload", properties, reconsume_times, None)
    assert response.code == 0, response
    admin.wait_for_dispatch(run.client)
    [stored] = run.read_queue(run.names.topic, 0)
    return stored


def read_copies(run: Run, marks: list[int], group: str) -> list[StoredMessage]:
    """What a request stored for `group`: parked since `marks`, in its DLQ, in its retry topic."""
    admin.wait_for_dispatch(run.client)
    copies = run.read_parked(marks)
    for topic in (f"%DLQ%{group}", f"%RETRY%{group}"):
        copies += [m for q in range(4) for m in run.read_queue(topic, q)]
    return copies


def compare(real: tuple, model: tuple, names: Names, self_ids: tuple[str, str], random_queue: bool,
            clamped: bool = False) -> Verdict:
    """The real answer (code, copies) against the model's (code, copy, rules), normalised as the module says."""
    (real_code, real_copies), (model_code, model_copy, rules) = real, model
    real_view = [describe(m.topic, m.queue_id, m.properties, m.reconsume_times, names, self_ids[0], random_queue)
                 for m in real_copies]
    model_view = [] if model_copy is None else [describe(
        model_copy.topic, model_copy.queue_id, dict(model_copy.properties), model_copy.reconsume_times, names,
        self_ids[1], random_queue)]
    if model_copy is not None and model_copy.topic == SCHEDULE_TOPIC:  # the comparison covered the parked form
        rules += ("ST-01", "ST-02", *(("ST-04",) if clamped else ()))
    agrees = (real_code, real_view) == (model_code, model_view)
    return Verdict(agrees, rules, f"rocketmq-4.9.8: {real_code} {real_view}\nmodel: {model_code} {model_view}")


def run_send_back_case(broker_addr: str, config: Config, case: SendBackCase) -> Verdict:
    """The case on the real broker (fresh names), then on the model from the same state; their verdict."""
    names = Names()
    group = names.group(case.role)
    with BrokerClient(broker_addr) as client:
        run = Run(client, "broker-a", names)
        run.set_up()
        marks = run.get_schedule_marks()
        if case.retry_read_only:
            admin.create_topic(client, f"%RETRY%{names.group('q1')}", 1, admin.PERM_READ)
        original = store_original(run, case.reconsume_times, case.props)
        offset = BOGUS_OFFSET if case.bogus else original.commit_log_offset
        try:
            admin.update_broker_config(client, brokerPermission=PERMS[case.perm])
            code = client.send_back(group, offset, case.delay_level, None, names.topic, case.max_times).code
        finally:
            admin.update_broker_config(client, brokerPermission=admin.PERM_READ_WRITE)
        copies = read_copies(run, marks, group)
    broker = create_model_broker(config, names, PERMS[case.perm], PERM_READ if case.retry_read_only else None)
    broker, looked_up = put_looked_up(broker, config, original)
    model = predict_send_back(broker, config, None if case.bogus else looked_up, group, case.delay_level,
                              case.max_times, names.topic)
    return compare((code, copies), model, names, (original.msg_id, looked_up.msg_id), case.role == "q3",
                   case.delay_level > len(config.delay_levels))
