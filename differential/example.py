"""One differential example on one backend: fresh names, the settings applied, the steps sent, what landed where.

Everything a step observes is normalised here, explicitly, so that two backends compare equal when they decided
the same: message ids become labels in order of first appearance (each backend numbers its own commit log);
timestamps, store hosts and remarks are dropped; the real broker's decorations that carry no decision
(``CLUSTER``, ``TRACE_ON``, ``MSG_REGION``) are dropped; SCHEDULE_TOPIC_XXXX's queue offsets are dropped (the
schedule topic is shared by every example of the session).
"""

from __future__ import annotations

import json
import time
import uuid

import attrs

from conformance.codec.message import StoredMessage, decode_message_id, decode_messages
from conformance.codec.remoting import RemotingCommand as Command
from conformance.runner.backends import admin
from conformance.runner.backends.broker_client import BrokerClient, get_locked_queue_ids
from differential import steps as s

SCHEDULE_TOPIC = "SCHEDULE_TOPIC_XXXX"
DROPPED_PROPERTIES = frozenset({"CLUSTER"})
DROPPED_FIELDS = frozenset({"TRACE_ON", "MSG_REGION", "msgId"})
ID_PROPERTIES = ("ORIGIN_MESSAGE_ID",)
BOGUS_OFFSET = 1 << 40
# The real broker makes a stored message pullable asynchronously: ReputMessageService dispatches the commit log to
# the consume queues every 1 ms (DefaultMessageStore 4.9.8). Each write step is followed by a wait until the broker
# reports nothing left to dispatch (admin.wait_for_dispatch), so that a following read sees what the write decided
# on both backends.
WRITES = (s.Send, s.SendRetry, s.SendBack)


@attrs.frozen
class Names:
    """The fresh topic and group names of one example."""

    suffix: str = attrs.field(factory=lambda: uuid.uuid4().hex[:10])

    @property
    def topic(self) -> str:
        return f"T-{self.suffix}"

    def group(self, role: str) -> str:
        return f"G-{role}-{self.suffix}"

    def resolve(self, topic: str) -> str:
        kind, _, role = topic.partition(":")
        return {"topic": self.topic, "retry": f"%RETRY%{self.group(role)}", "dlq": f"%DLQ%{self.group(role)}"}[kind]

    def anonymise(self, text: str) -> str:
        return text.replace(self.suffix, "*")

    def all_topics(self) -> list[str]:
        retry = [f"%RETRY%{self.group(r)}" for r in s.GROUPS]
        return [self.topic, *retry, *(f"%DLQ%{self.group(r)}" for r in s.GROUPS)]


class Labels:
    """Message ids -> ``m0``, ``m1``... in order of first appearance, by commit-log offset."""

    def __init__(self) -> None:
        self.by_offset: dict[int, str] = {}

    def label(self, msg_id: str) -> str:
        try:
            offset = decode_message_id(msg_id)[1]
        except ValueError:
            return f"foreign:{msg_id}"
        return self.by_offset.setdefault(offset, f"m{len(self.by_offset)}")


def normalise_message(message: StoredMessage, labels: Labels, names: Names) -> dict:
    props = {k: v for k, v in message.properties.items() if k not in DROPPED_PROPERTIES}
    for key in ID_PROPERTIES:
        if key in props:
            props[key] = labels.label(props[key])
    for key in ("REAL_TOPIC", "RETRY_TOPIC"):
        if key in props:
            props[key] = names.anonymise(props[key])
    offset = None if message.topic == SCHEDULE_TOPIC else message.queue_offset
    return {"topic": names.anonymise(message.topic), "queueId": message.queue_id, "queueOffset": offset,
            "reconsumeTimes": message.reconsume_times, "properties": props, "body": message.body.decode(),
            "id": labels.label(message.msg_id)}


def normalise_response(response: Command) -> dict:
    return {"code": response.code, **{k: v for k, v in response.ext_fields.items() if k not in DROPPED_FIELDS}}


class Run:
    """One example's steps on one backend."""

    def __init__(self, client: BrokerClient, broker_name: str, names: Names) -> None:
        self.client, self.broker_name, self.names = client, broker_name, names
        self.labels = Labels()
        self.stored: list[tuple[int, str]] = []  # (commit-log offset, offset msg id) of each message sent
        self.observations: list[dict] = []

    def set_up(self) -> None:
        admin.create_topic(self.client, self.names.topic, s.QUEUES)
        for role, (retry_max_times, retry_queue_nums) in s.GROUP_SETTINGS.items():
            admin.create_group(self.client, self.names.group(role), retry_max_times, retry_queue_nums)

    def run(self, sequence: list[s.Step]) -> list[dict]:
        try:
            for step in sequence:
                self.observations.append({"step": type(step).__name__, **self.apply(step)})
                if isinstance(step, WRITES):
                    admin.wait_for_dispatch(self.client)
        finally:
            admin.update_broker_config(self.client, brokerPermission=6)
        return self.observations

    def apply(self, step: s.Step) -> dict:
        handler = getattr(self, f"on_{type(step).__name__.lower()}")
        return handler(step)

    def on_send(self, step: s.Send) -> dict:
        uniq = f"U{len(self.stored)}"
        props = {"UNIQ_KEY": uniq, "WAIT": "true", "TAGS": "a", **self._delay(step.delay)}
        response = self.client.send(self.names.topic, step.queue_id, f"body-{uniq}".encode(), props,
                                    step.reconsume_times, step.max_reconsume_times)
        return self._sent(response, step.delay)

    def on_sendretry(self, step: s.SendRetry) -> dict:
        uniq = f"U{len(self.stored)}"
        props = {"UNIQ_KEY": uniq, "WAIT": "true", "RETRY_TOPIC": self.names.topic, **self._delay(step.delay)}
        response = self.client.send(f"%RETRY%{self.names.group(step.group)}", 0, f"body-{uniq}".encode(), props,
                                    step.reconsume_times, step.max_reconsume_times)
        return self._sent(response, step.delay)

    def _sent(self, response: Command, delay: int | None) -> dict:
        """A send's answer; a parked message's queueOffset is its offset in the shared SCHEDULE_TOPIC_XXXX queue."""
        record = normalise_response(response)
        if delay:
            record.pop("queueOffset", None)
        msg_id = response.ext_fields.get("msgId")
        if response.code == 0 and msg_id:
            self.stored.append((decode_message_id(msg_id)[1], msg_id))
            record["id"] = self.labels.label(msg_id)
        return record

    @staticmethod
    def _delay(delay: int | None) -> dict[str, str]:
        return {} if delay is None else {"DELAY": str(delay)}

    def on_sendback(self, step: s.SendBack) -> dict:
        if step.message < 0 or not self.stored:
            offset, msg_id = BOGUS_OFFSET, None
        else:
            offset, msg_id = self.stored[step.message % len(self.stored)]
        origin = {"none": None, "own": msg_id, "bogus": "bogus-origin-id"}[step.origin_msg_id]
        response = self.client.send_back(self.names.group(step.group), offset, step.delay_level, origin,
                                         self.names.topic, step.max_reconsume_times)
        return normalise_response(response)

    def on_pull(self, step: s.Pull) -> dict:
        response = self.client.pull(self.names.group("q1"), self.names.resolve(step.topic), step.queue_id, step.offset)
        messages = [normalise_message(m, self.labels, self.names) for m in decode_messages(response.body)]
        return {**normalise_response(response), "messages": messages}

    def on_queryoffset(self, step: s.QueryOffset) -> dict:
        return normalise_response(self.client.query_offset(self.names.group(step.group), self.names.topic,
                                                           step.queue_id))

    def on_updateoffset(self, step: s.UpdateOffset) -> dict:
        return normalise_response(self.client.update_offset(self.names.group(step.group), self.names.topic,
                                                            step.queue_id, step.offset))

    def on_lock(self, step: s.Lock) -> dict:
        call = self.client.unlock if step.unlock else self.client.lock
        response = call(self.names.group(step.group), step.client, self.broker_name, self.names.topic,
                        list(step.queue_ids))
        granted = None if step.unlock else get_locked_queue_ids(response)
        return {"code": response.code, "granted": granted}

    def on_queueoffsets(self, step: s.QueueOffsets) -> dict:
        topic = self.names.resolve(step.topic)
        low, high = self.client.min_offset(topic, step.queue_id), self.client.max_offset(topic, step.queue_id)
        return {"min": normalise_response(low), "max": normalise_response(high)}

    def on_permission(self, step: s.Permission) -> dict:
        admin.update_broker_config(self.client, brokerPermission=step.perm)
        return {"code": 0}

    def read_queue(self, topic: str, queue_id: int, offset: int = 0) -> list[StoredMessage]:
        messages: list[StoredMessage] = []
        while True:
            response = self.client.pull(self.names.group("q1"), topic, queue_id, offset, 32)
            batch = decode_messages(response.body) if response.code == 0 else []
            if not batch:
                return messages
            messages.extend(batch)
            offset = int(response.ext_fields["nextBeginOffset"])

    def get_schedule_marks(self) -> list[int]:
        """The max offset of each SCHEDULE_TOPIC_XXXX queue, before the example runs."""
        return [int(self.client.max_offset(SCHEDULE_TOPIC, q).ext_fields.get("offset", 0)) for q in range(s.LEVELS)]

    def read_parked(self, marks: list[int]) -> list[StoredMessage]:
        """The messages this example parked in SCHEDULE_TOPIC_XXXX since `marks`."""
        parked = []
        for queue_id, mark in enumerate(marks):
            for message in self.read_queue(SCHEDULE_TOPIC, queue_id, mark):
                if self.names.suffix in message.properties.get("REAL_TOPIC", ""):
                    parked.append(message)
        return parked

    def read_landed(self) -> dict[str, list[StoredMessage]]:
        """Every message stored in the example's own topics, per topic (empty ones left out)."""
        landed = {}
        for topic in self.names.all_topics():
            messages = [m for q in range(4) for m in self.read_queue(topic, q)]
            if messages:
                landed[topic] = messages
        return landed


def get_identity(message: StoredMessage) -> tuple:
    return message.properties.get("UNIQ_KEY"), message.reconsume_times


def find_deliveries(parked: list[StoredMessage], landed: dict[str, list[StoredMessage]]) -> list[int | None]:
    """For each parked message, the store timestamp of its delivered copy in its real topic (None: not yet)."""
    candidates = {topic: list(messages) for topic, messages in landed.items()}
    found: list[int | None] = []
    for message in sorted(parked, key=lambda m: m.store_timestamp):
        pool = candidates.get(message.properties["REAL_TOPIC"], [])
        match = next((m for m in pool if get_identity(m) == get_identity(message) and m.properties.get("DELAY")
                      == message.properties.get("DELAY")), None)
        if match is None:
            found.append(None)
            continue
        pool.remove(match)
        found.append(match.store_timestamp - message.store_timestamp)
    return found


@attrs.frozen
class Outcome:
    """What one backend did with one example: step observations, what it parked, where everything landed."""

    observations: list[dict]
    parked: list[dict]
    landed: dict[str, list[dict]]
    delivery_delays: list[int | None]


def get_canonical_key(message: dict) -> str:
    """A sort key independent of the order a backend lists properties in: a repr of the record was not (the real
    broker and the model order a delayed copy's properties differently, and two copies due within the same
    millisecond swapped places between the backends)."""
    return json.dumps(message, sort_keys=True, default=str)


def settle(run: Run, marks: list[int], timeout: float) -> Outcome:
    """Waits until every parked message of the run reached its real topic (or `timeout`), then reads the outcome."""
    deadline = time.monotonic() + timeout
    while True:
        parked, landed = run.read_parked(marks), run.read_landed()
        delays = find_deliveries(parked, landed)
        if None not in delays or time.monotonic() > deadline:
            break
        time.sleep(0.1)
    return Outcome(
        observations=run.observations,
        parked=sorted((normalise_landed(m, run) for m in parked), key=get_canonical_key),
        landed={run.names.anonymise(t): sorted((normalise_landed(m, run) for m in ms), key=get_canonical_key)
                for t, ms in landed.items()},
        delivery_delays=delays,
    )


def normalise_landed(message: StoredMessage, run: Run) -> dict:
    """A landed (or parked) message without what depends on the order of deliveries or on a random retry queue."""
    record = normalise_message(message, run.labels, run.names)
    del record["id"]  # a copy's own id is new on each backend; ORIGIN_MESSAGE_ID ties it to its original
    if message.properties.get("REAL_TOPIC") == message.topic:  # delivered by the delay timer: arrival order races
        record["queueOffset"] = None
    if message.topic.startswith("%RETRY%") and run.names.group("q3") in message.topic:
        record["queueId"] = "random"  # SB-05: random % retryQueueNums; the range is checked separately
        record["queueOffset"] = None
    if run.names.group("q3") in message.properties.get("REAL_TOPIC", "") and "REAL_QID" in record["properties"]:
        record["properties"]["REAL_QID"] = "random"
    return record
