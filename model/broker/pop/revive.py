"""The revive service (PopReviveService, spec/15-revive.md): a checkpoint past its revive time writes each of its
unacked messages again, as a new copy in the group's retry topic with reconsumeTimes + 1."""

from __future__ import annotations

from typing import NamedTuple

from model.broker.consumer_offsets import commit_offset, query_offset
from model.broker.pop.config import POP_RETRY_QUEUE_NUMS, REVIVE_MARGIN
from model.broker.pop.state import Checkpoint, PopBroker, drop_checkpoint, get_first_due, set_broker, set_pop
from model.broker.state import PERM_READ, PERM_WRITE, get_or_create_topic
from model.broker.store import put_message
from model.values.message import Message, is_retry_topic
from model.values.pop_names import get_pop_retry_topic
from model.values.records import evolve

PROPERTY_FIRST_POP_TIME = "1ST_POP_TIME"


class ReviveAnswer(NamedTuple):
    """What one revive run did: the copies it stored (as stored: in the retry topic, or parked for a delay level,
    IV-06), the checkpoints it dropped without a copy (their group is gone) and the rules taken."""

    stored: tuple = ()
    dropped: tuple = ()
    rules: tuple[str, ...] = ()


def is_revive_due(ck: Checkpoint, now: int) -> bool:
    """[IV-01] mergeAndRevive revives a checkpoint once the revive scan's end time is more than
    ackTimeInterval + 1 s past its revive time (pop time + invisible time); the model takes that end time to be
    `now` (the scan found nothing newer for 3 s)."""
    return now - ck.revive_time > REVIVE_MARGIN


def get_revive_topic(state: PopBroker, ck: Checkpoint) -> str:
    """[IV-03] reviveRetry's topic: a checkpoint of a retry topic revives into that same topic, any other into the
    group's retry topic for the topic (v1 or v2 by enableRetryTopicV2)."""
    if is_retry_topic(ck.topic):
        return ck.topic
    return get_pop_retry_topic(ck.topic, ck.group, state.pop_config.enable_retry_topic_v2)


def compute_revived_message(ck: Checkpoint, message: Message, retry_topic: str) -> Message:
    """[IV-05] reviveRetry's copy: queue 0 of the retry topic, the body, tags, flag, born time and every property
    (UNIQ_KEY, and a DELAY if it had one, IV-06), reconsumeTimes + 1, and 1ST_POP_TIME — the checkpoint's pop time
    on the first revive (or when absent); no RETRY_TOPIC and no ORIGIN_MESSAGE_ID are added."""
    properties = message.properties
    if message.reconsume_times == 0 or PROPERTY_FIRST_POP_TIME not in properties:
        properties = properties.set(PROPERTY_FIRST_POP_TIME, str(ck.pop_time))
    return Message(retry_topic, message.body, message.tags, properties, 0, -1, -1, "", message.reconsume_times + 1,
                   message.flag, message.born_timestamp, 0)


def add_retry_topic(state: PopBroker, topic: str, group: str) -> PopBroker:
    """[IV-07] addRetryTopicIfNotExist: a missing retry topic is created with one queue, read and write, and the
    group's offset on it starts at 0 (initPopRetryOffset); an existing topic is left as it is."""
    if topic in state.broker.topics:
        return state
    broker, _config = get_or_create_topic(state.broker, topic, POP_RETRY_QUEUE_NUMS, PERM_READ | PERM_WRITE)
    if query_offset(broker, group, topic, 0) < 0:
        broker = commit_offset(broker, group, topic, 0, 0)
    return set_broker(state, broker)


def process_revive_checkpoint(state: PopBroker, ck: Checkpoint, now: int) -> tuple[PopBroker, tuple]:
    """[IV-02] reviveMsgFromCk: each offset of the checkpoint that is not acked is read from its queue and stored
    again in the retry topic; acked offsets are not."""
    retry_topic = get_revive_topic(state, ck)
    state = add_retry_topic(state, retry_topic, ck.group)
    stored = []
    for offset in ck.get_unacked_offsets():
        message = state.broker.store.get_message(ck.topic, ck.queue_id, offset)
        if message is None:  # gone from the store: nothing to revive
            continue
        store, copy = put_message(state.broker.store, compute_revived_message(ck, message, retry_topic), now,
                                  state.config.delay_levels)
        state = set_broker(state, evolve(state.broker, store=store))
        stored.append(copy)
    return state, tuple(stored)


def on_revive(state: PopBroker, now: int, limit: int | None = None) -> tuple[PopBroker, ReviveAnswer]:
    """[IV-01] One run of the revive service at `now`: every checkpoint due (IV-01), in revive-time order, is
    revived (IV-02) and kept aside until the next persist (PO-10); one whose group no longer exists is dropped.
    The broker never dead-letters here (IV-08): a copy's reconsumeTimes only grows. With a `limit`, the run
    revives at most that many (the earliest due) and leaves the rest to the next run."""
    stored, dropped, revived = [], [], 0
    while revived != limit and (first := get_first_due(state.pop)) is not None:  # in revive-time order
        slot = first[1]
        ck = state.pop.checkpoints[slot]
        if not is_revive_due(ck, now):
            break
        revived += 1
        state = set_pop(drop_checkpoint(state, slot), revived=state.pop.revived.set(slot, ck))
        if ck.group not in state.broker.groups:
            dropped.append(ck)
            continue
        state, copies = process_revive_checkpoint(state, ck, now)
        stored.extend(copies)
    rules = ("IV-01", "IV-02", "IV-03", "IV-05", "IV-07", "IV-08") if revived else ()
    return state, ReviveAnswer(tuple(stored), tuple(dropped), rules)


def get_next_revive_time(state: PopBroker) -> int | None:
    """The first time a pending checkpoint becomes due (None without one): when a driver's next revive run finds
    something."""
    first = get_first_due(state.pop)
    return None if first is None else first[0] + REVIVE_MARGIN + 1
