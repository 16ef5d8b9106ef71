"""The observer: what a real client did in one run — its listener deliveries and its requests on the wire — turned
into the model's observation types and fed through the same Ledger and invariants as properties/ (SY-02..SY-10).

A `Run` is everything the harness recorded, on one monotonic clock in ms: the deliveries the driver answered, the
client's requests as the server saw them (with the response code it got), and the copies the model-backed broker
stored for each send-back. Building one from the server's trace is the glue's job (conformance/runner/run.py); this
module only reads it.
"""

from __future__ import annotations

import re
from collections import defaultdict

import immutables

from conformance.checker.mechanisms import get_deliveries_by_offset, get_sent_back_delivery
from conformance.codec.codes import CONSUMER_SEND_MSG_BACK, PULL_MESSAGE, UPDATE_CONSUMER_OFFSET
from conformance.history.records import SUCCESS, Run, StoredCopy, WireRequest
from model.broker.commit_log import compute_log_record
from model.client.listener import ConsumeStatus
from model.client.observations import ConsumeProcessed, DlqArrival, ListenerInvoked, OffsetUpdated, SendBackOutcome
from model.system.observations import Produced
from model.values.config import Config
from model.values.message import (
    PROPERTY_DELAY_TIME_LEVEL,
    SCHEDULE_TOPIC,
    Message,
    MessageQueue,
    compute_message_id,
    create_message,
    get_dlq_topic,
    get_retry_topic,
)
from model.values.names import GROUP, TOPIC
from oracle.system_oracle import Ledger

PULL_COMMIT_OFFSET_FLAG = 1  # PullSysFlag.FLAG_COMMIT_OFFSET
# The delivery time is read when the driver gets the adapter's line, the send-back time when the server reads the
# request: both on one clock, converted once; a retry seen earlier than its due time by this much is still on time.
EARLY_TOLERANCE_MS = 20
SUCCESS_STATUSES = frozenset({"CONSUME_SUCCESS", "SUCCESS", "COMMIT"})


def compute_delays_ms(message_delay_level: str) -> list[int]:
    """The broker's delay table in ms, read from its `messageDelayLevel` string (units s, m, h, d)."""
    units = {"s": 1000, "m": 60_000, "h": 3_600_000, "d": 86_400_000}
    return [int(entry[:-1]) * units[entry[-1]] for entry in message_delay_level.split(" ")]


def to_model_message_id(msg_id: str) -> str:
    """An offset message id as the model names it: the same commit-log offset (its last 16 hex digits) under the
    model's one store host — a broker on the wire stores its own address there, and a client reads ids from it."""
    try:
        return compute_message_id(int(msg_id[-16:], 16)) if len(msg_id) == 32 else msg_id
    except ValueError:
        return msg_id


def to_message(record: dict, settings) -> Message:
    """A delivered message record as the model's Message, named as the model names the run's group and topic.

    The msg id is the broker's offset message id of the copy (what ORIGIN_MESSAGE_ID holds), whatever id the
    client reports; ORIGIN_MESSAGE_ID is named the model's way too."""
    properties = dict(record["properties"])
    if "RETRY_TOPIC" in properties:
        properties["RETRY_TOPIC"] = TOPIC
    if "ORIGIN_MESSAGE_ID" in properties:
        properties["ORIGIN_MESSAGE_ID"] = to_model_message_id(properties["ORIGIN_MESSAGE_ID"])
    return Message(TOPIC, b"", properties.get("TAGS"), immutables.Map(properties), record["queueId"],
                   record["queueOffset"], record["commitLogOffset"], compute_message_id(record["commitLogOffset"]),
                   record["reconsumeTimes"])


def get_delivery_queue(record: dict) -> MessageQueue:
    """The queue a delivery came from: a copy with RETRY_TOPIC was pulled from the group's retry topic."""
    retry = "RETRY_TOPIC" in record["properties"]
    return MessageQueue(get_retry_topic(GROUP) if retry else TOPIC, record["queueId"])


def get_arrival_order(run: Run) -> tuple[str, ...]:
    """The keys in the order the broker stored them in the topic's queues (by queue offset), read from their
    deliveries off the topic itself; a key never delivered from it is left out."""
    first: dict[str, tuple[int, int]] = {}
    for delivery in run.deliveries:
        queue = get_delivery_queue(delivery.message)
        if queue.topic == TOPIC:
            first.setdefault(delivery.uniq_key, (delivery.message["queueOffset"], queue.queue_id))
    return tuple(sorted(first, key=first.__getitem__))


def observe_deliveries(run: Run) -> list:
    """ListenerInvoked and ConsumeProcessed per delivery (one message each), at the delivery's time."""
    observations = []
    for number, delivery in enumerate(run.deliveries, start=1):
        message = to_message(delivery.message, run.settings)
        at = round(delivery.time_ms)
        observations.append(ListenerInvoked("c1", number, get_delivery_queue(delivery.message), (message,), at))
        ok = run.workload.is_success(delivery.status)
        status = ConsumeStatus.CONSUME_SUCCESS if ok else ConsumeStatus.RECONSUME_LATER
        observations.append(ConsumeProcessed(number, status, 0, (message,) if ok else (), () if ok else (message,),
                                             False, at))
    return observations


def get_sent_back_message(run: Run, deliveries: dict, request: WireRequest) -> Message | None:
    """The message a send-back names: the delivery of its commit-log offset that came last before it (a 4.9.8
    client's local retry sends the same offset back with reconsumeTimes + 1)."""
    delivery = get_sent_back_delivery(deliveries.get(int(request.fields.get("offset", -1)), ()), request.time_ms)
    return None if delivery is None else to_message(delivery.message, run.settings)


def find_fallback(run: Run, request: WireRequest, message: Message | None, taken: set) -> StoredCopy | None:
    """The copy a client's fallback send to %RETRY% stored after this failed send-back: the first one not yet
    matched, of the same key with reconsumeTimes + 1, stored after the request."""
    if message is None:
        return None
    for copy in run.stored:
        if copy.path == "fallback" and id(copy) not in taken and copy.key == message.uniq_key \
                and copy.reconsume_times == message.reconsume_times + 1 and copy.time_ms >= request.time_ms:
            taken.add(id(copy))
            return copy
    return None


def observe_send_backs(run: Run) -> list:
    """SendBackOutcome per CONSUMER_SEND_MSG_BACK: "rpc" when the broker answered SUCCESS; when it did not,
    "fallback" if the client's own send to %RETRY% stored a copy, else "failed" (the model's path for a message
    left to the client); the stored copy as the model's broker half stored it."""
    deliveries = get_deliveries_by_offset(run.deliveries)
    stored = {copy.source_offset: copy for copy in run.stored if copy.path == "rpc"}
    observations, taken = [], set()
    for request in run.get_requests(CONSUMER_SEND_MSG_BACK):
        offset = int(request.fields.get("offset", -1))
        message = get_sent_back_message(run, deliveries, request)
        ok = request.response_code == SUCCESS
        fallback = None if ok else find_fallback(run, request, message, taken)
        copy = stored.get(offset) if ok else fallback
        path = "rpc" if ok else "fallback" if fallback is not None else "failed"
        at = round((fallback or request).time_ms) - EARLY_TOLERANCE_MS
        if message is None:
            # Sent back without ever being delivered (verdicts.py judges that, CC-02): the copy is known only by
            # what the broker stored for it.
            if copy is None:
                continue
            message = compute_unseen_message(copy)
        observations.append(SendBackOutcome(message, path, compute_stored(copy, message),
                                            int(request.fields.get("delayLevel", 0)), at))
        if copy is not None and copy.topic.startswith("%DLQ%"):
            observations.append(DlqArrival(message, at))
    return observations + observe_client_sends(run, taken)


def observe_client_sends(run: Run, taken: set) -> list:
    """SendBackOutcome per copy the client sent to %RETRY% itself that follows no failed send-back: an orderly
    consumer's give-up at maxReconsumeTimes (checkReconsumeTimes, OR-09), path "orderly" with the stored copy
    standing for the message, as the model observes it."""
    observations = []
    for copy in run.stored:
        if copy.path != "fallback" or id(copy) in taken:
            continue
        seen = [d for d in run.deliveries if d.uniq_key == copy.key and d.time_ms <= copy.time_ms]
        message = to_message(seen[-1].message, run.settings) if seen else compute_unseen_message(copy)
        stored = compute_stored(copy, message)
        at = round(copy.time_ms) - EARLY_TOLERANCE_MS
        path = "orderly" if run.workload.mode == "orderly" else "fallback"
        observations.append(SendBackOutcome(stored if path == "orderly" else message, path, stored, 0, at))
        if copy.topic.startswith("%DLQ%"):
            observations.append(DlqArrival(stored, at))
    return observations


def compute_unseen_message(copy: StoredCopy) -> Message:
    """The copy a client sent back without showing it to its listener, as far as the broker's copy tells."""
    properties = immutables.Map({"UNIQ_KEY": copy.key})
    return Message(TOPIC, b"", None, properties, 0, -1, copy.source_offset, compute_message_id(copy.source_offset),
                   copy.reconsume_times - 1)


def compute_stored(copy: StoredCopy | None, message: Message) -> Message | None:
    if copy is None:
        return None
    if copy.topic.startswith("%DLQ%"):
        return Message(get_dlq_topic(GROUP), b"", message.tags, message.properties, 0, -1, -1, "",
                       copy.reconsume_times)
    properties = message.properties.set(PROPERTY_DELAY_TIME_LEVEL, str(copy.delay_level))
    return Message(SCHEDULE_TOPIC, b"", message.tags, properties, copy.delay_level - 1, -1, -1, "",
                   copy.reconsume_times)


def observe_offsets(run: Run) -> list:
    """OffsetUpdated for every offset the client sent: UPDATE_CONSUMER_OFFSET, and a pull's piggybacked commit
    offset. A client connection is one offset lifetime (a restarted client starts a new one)."""
    observations = []
    for request in run.requests:
        fields = request.fields
        if request.code == UPDATE_CONSUMER_OFFSET:
            offset = int(fields["commitOffset"])
        elif request.code == PULL_MESSAGE and int(fields.get("sysFlag", 0)) & PULL_COMMIT_OFFSET_FLAG:
            offset = int(fields["commitOffset"])
        else:
            continue
        topic = TOPIC if fields.get("topic") == run.settings.topic else get_retry_topic(GROUP)
        queue = MessageQueue(topic, int(fields["queueId"]))
        observations.append(OffsetUpdated("c1", queue, offset, round(request.time_ms), (),
                                          (request.connection, 0)))
    return observations


def observe_produced(run: Run) -> list:
    return [Produced(compute_log_record(create_message(TOPIC, spec.key, tags=spec.tags,
                                                       delay_level=spec.delay_level)), 0)
            for spec in run.workload.messages]


def observe(run: Run) -> list:
    """Every observation of the run in time order (a send-back before the delivery it makes due)."""
    timed = observe_deliveries(run) + observe_send_backs(run) + observe_offsets(run)
    return observe_produced(run) + sorted(timed, key=lambda o: o.time)


RULE_ID = re.compile(r"\[([A-Z]{2,3}-\d\d)\]")
# The rule an assertion of a Ledger handler checks when its message names none.
HANDLER_RULES = {ListenerInvoked: "SY-06", SendBackOutcome: "SY-05", OffsetUpdated: "SY-04"}


def get_observed_key(observation) -> str:
    """The message key an observation is about ("" for one about no message, e.g. an offset update)."""
    messages = getattr(observation, "messages", None) or (getattr(observation, "message", None),)
    return messages[0].uniq_key if messages[0] is not None else ""


def get_replayed_originals(run: Run) -> set[str]:
    """[SY-05] [SY-09] Messages one of whose copies (the original, or a retry copy with the same reconsumeTimes)
    reached the listener as two distinct stored copies after a broker kill: the restarted broker's delay timer
    resumed from its last flushed offset and stored a delayed message or a parked retry again
    (ScheduleMessageService persists its offsets periodically), so the message has two lineages, each with its own
    origin id and its own retry budget — counted as a forked chain."""
    if not any(event.kind == "broker_kill" for event in run.faults):
        return set()
    copies: dict[tuple[str, int], set[int]] = defaultdict(set)
    for delivery in run.deliveries:
        copies[(delivery.uniq_key, delivery.reconsume_times)].add(delivery.message["commitLogOffset"])
    return {key for (key, _r), offsets in copies.items() if len(offsets) > 1}


def check_invariants(run: Run, max_reconsume_times: int) -> dict[str, list[tuple[str, str]]]:
    """Feed the run through the oracle's Ledger; answers the failed claims by rule id, each as (detail, the key of
    the message it is about, "" for none), SY-10 at the end: one per message neither consumed, dead-lettered nor
    dropped by design, except those the broker still holds for the group (Run.final), which are not lost.

    `max_reconsume_times` is the maximum the broker applied to this client (its header's, else the group's)."""
    config = Config(message_model=run.workload.model, max_reconsume_times=max_reconsume_times,
                    message_delay_level=run.settings.message_delay_level)
    ledger = Ledger(config, delays_ms=compute_delays_ms(run.settings.message_delay_level))
    failures: dict[str, list[tuple[str, str]]] = defaultdict(list)
    for copy in run.stored:
        if copy.reconsume_times == 1 and copy.path == "rpc":
            # The consumed original's offset id, which its retries link to: known before its first delivery when
            # it was sent back unseen (CC-02) or seen only after a restart.
            ledger.origin_ids.setdefault(copy.key, compute_message_id(copy.source_offset))
    ledger.forked.update(get_replayed_originals(run))
    for observation in observe(run):
        try:
            ledger.record([observation])
        except (AssertionError, KeyError) as error:
            found = RULE_ID.search(str(error))
            rule = found.group(1) if found else HANDLER_RULES.get(type(observation), "SY-05")
            failures[rule].append((f"{type(observation).__name__} at {observation.time} ms: {error!r}",
                                   get_observed_key(observation)))
    # SY-10 is CLUSTERING's promise; a BROADCASTING instance's deliveries are judged against the prediction.
    pending = run.final.get_pending_keys() if run.final is not None else set()
    for key in ledger.get_unaccounted() if run.workload.model == "clustering" else []:
        if key not in pending:
            failures["SY-10"].append((f"{key} neither consumed, dead-lettered nor dropped by design", key))
    return dict(failures)
