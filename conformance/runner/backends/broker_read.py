"""The final read of a broker at quiescence, over the wire and the same for both backends (RocketMQ 4.9.8 and the
model-backed server answer the same requests): what the group committed, what is still there to consume, what went
to the DLQ and what is still parked for a delay — so that a message that was lost can be told from one that was
not yet redelivered.

Requests, per queue of the run's topic and of %RETRY%<group> (their queue counts from GET_ALL_TOPIC_CONFIG):
QUERY_CONSUMER_OFFSET (QUERY_NOT_FOUND: -1; 4.9.8 answers 0 for a queue the group never committed while the queue's
first message is in memory, RB-04), GET_MAX_OFFSET and pulls from the committed offset (0 when none) to the max;
pulls of %DLQ%<group> queue 0 from 0; GET_ALL_DELAY_OFFSET and pulls of each SCHEDULE_TOPIC_XXXX queue from the
later of the run's mark and the level's delay offset (what its deliver task has not moved yet), kept when the copy is
bound for the run's retry topic.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Sequence

from conformance.codec.codes import GET_ALL_DELAY_OFFSET, GET_ALL_TOPIC_CONFIG, ResponseCode
from conformance.codec.headers import decode_delay_offset_table, decode_json_body
from conformance.codec.message import StoredMessage, decode_messages
from conformance.history.records import BrokerRead, QueueRead
from conformance.runner.backends.broker_client import BrokerClient

SCHEDULE_TOPIC = "SCHEDULE_TOPIC_XXXX"
SCHEDULE_QUEUES = 18
# A client persists its offsets on shutdown with a one-way UPDATE_CONSUMER_OFFSET: the read is repeated until two in
# a row agree, at most this long.
SETTLE_LIMIT_S = 3.0
SETTLE_POLL_S = 0.2


def read_queue(client: BrokerClient, group: str, topic: str, queue_id: int, offset: int = 0) -> list[StoredMessage]:
    """Every message of one queue from `offset` on, pulled 32 at a time until a pull finds none (or is refused)."""
    messages: list[StoredMessage] = []
    while True:
        response = client.pull(group, topic, queue_id, offset, 32)
        batch = decode_messages(response.body) if response.code == ResponseCode.SUCCESS else []
        if not batch:
            return messages
        messages.extend(batch)
        offset = int(response.ext_fields["nextBeginOffset"])


def read_queue_nums(client: BrokerClient) -> dict[str, int]:
    """Each topic the broker has, with its read queue count (GET_ALL_TOPIC_CONFIG)."""
    response = client.call(GET_ALL_TOPIC_CONFIG)
    if response.code != ResponseCode.SUCCESS:
        raise RuntimeError(f"GET_ALL_TOPIC_CONFIG answered {response.code} ({response.remark})")
    table = decode_json_body(response.body).get("topicConfigTable") or {}
    return {name: int(config["readQueueNums"]) for name, config in table.items()}


def read_committed(client: BrokerClient, group: str, topic: str, queue_id: int) -> int:
    """The group's offset of the queue as QUERY_CONSUMER_OFFSET answers it; -1 when it answers none."""
    response = client.query_offset(group, topic, queue_id)
    return int(response.ext_fields["offset"]) if response.code == ResponseCode.SUCCESS else -1


def read_max_offset(client: BrokerClient, topic: str, queue_id: int) -> int:
    response = client.max_offset(topic, queue_id)
    if response.code != ResponseCode.SUCCESS:
        raise RuntimeError(f"GET_MAX_OFFSET {topic}/{queue_id} answered {response.code} ({response.remark})")
    return int(response.ext_fields["offset"])


def read_queue_state(client: BrokerClient, group: str, topic: str, queue_id: int) -> QueueRead:
    """One queue: the group's committed offset, the max offset, and (key, reconsumeTimes, queue offset) of every
    message from the committed offset (0 when none) up to the max."""
    committed = read_committed(client, group, topic, queue_id)
    high = read_max_offset(client, topic, queue_id)
    pending = tuple((get_key(m), m.reconsume_times, m.queue_offset)
                    for m in read_queue(client, group, topic, queue_id, max(committed, 0)) if m.queue_offset < high)
    return QueueRead(topic, queue_id, committed, high, pending)


def get_key(message: StoredMessage) -> str:
    """A copy's UNIQ_KEY (the key a run names its messages by), else its msg id."""
    return message.properties.get("UNIQ_KEY", message.msg_id)


def read_delay_offsets(client: BrokerClient) -> dict[int, int]:
    """The delay timer's offset per level (GET_ALL_DELAY_OFFSET; a level not listed is at 0)."""
    response = client.call(GET_ALL_DELAY_OFFSET)
    if response.code != ResponseCode.SUCCESS:
        raise RuntimeError(f"GET_ALL_DELAY_OFFSET answered {response.code} ({response.remark})")
    return decode_delay_offset_table(response.body)


def read_parked(client: BrokerClient, group: str, marks: Sequence[int] = ()) -> tuple[tuple[str, int], ...]:
    """(key, reconsumeTimes) of each copy bound for %RETRY%<group> that its level's deliver task has not moved yet,
    from each SCHEDULE_TOPIC_XXXX queue's mark on (queue id = level - 1; no mark: 0), in queue order."""
    offsets, retry = read_delay_offsets(client), f"%RETRY%{group}"
    parked = []
    for queue_id in range(SCHEDULE_QUEUES):
        start = max(offsets.get(queue_id + 1, 0), marks[queue_id] if queue_id < len(marks) else 0)
        parked += [(get_key(m), m.reconsume_times) for m in read_queue(client, group, SCHEDULE_TOPIC, queue_id, start)
                   if m.properties.get("REAL_TOPIC") == retry]
    return tuple(parked)


def read_broker(client: BrokerClient, group: str, topic: str, marks: Sequence[int] = ()) -> BrokerRead:
    """The broker as the group left it: every queue of `topic` and of %RETRY%<group>, the copies in %DLQ%<group>
    (key, reconsumeTimes), the copies still parked for a delay (see read_parked)."""
    nums, retry = read_queue_nums(client), f"%RETRY%{group}"
    queues = tuple(read_queue_state(client, group, name, queue_id)
                   for name in (topic, retry) for queue_id in range(nums.get(name, 0)))
    dead = tuple((get_key(m), m.reconsume_times) for m in read_queue(client, group, f"%DLQ%{group}", 0))
    return BrokerRead(queues, dead, read_parked(client, group, marks))


def read_settled(read: Callable[[], BrokerRead], limit_s: float = SETTLE_LIMIT_S,
                 poll_s: float = SETTLE_POLL_S) -> BrokerRead:
    """`read()` again until two reads in a row agree (a stopped client's last one-way offset commit has landed), or
    `limit_s` passed; the last read."""
    deadline, last = time.monotonic() + limit_s, read()
    while time.monotonic() < deadline:
        time.sleep(poll_s)
        current = read()
        if current == last:
            return current
        last = current
    return last
