"""Strategies and an independent broker builder for the properties of spec/02-send-back.md.

The version tables below are copied from the reference (§4.2, §4.4, §8.2), not read from
model/values/profiles.py, so the oracles in the tests stay independent of the model's profile flags.
"""

from __future__ import annotations

from attrs import frozen
from hypothesis import strategies as st
from immutables import Map

from model.broker.commit_log import compute_log_record
from model.broker.locks import QueueLock
from model.broker.state import Broker, SubscriptionGroupConfig, TopicConfig
from model.broker.store import Store
from model.values.append_log import EMPTY_LOG
from model.values.message import Message, MessageQueue, compute_message_id
from model.values.records import evolve

VERSIONS = ("4.9.1", "4.9.8", "5.0.0", "5.3.3", "develop")
# §4.2 / §8.2: 4.9.2+ clears DELAY in the send-back DLQ branch and creates the DLQ topic readable.
DLQ_CLEARS_DELAY = {"4.9.1": False, "4.9.8": True, "5.0.0": True, "5.3.3": True, "develop": True}
DLQ_READABLE = DLQ_CLEARS_DELAY
# §4.4: handleRetryAndDLQ uses ">" and DELAY=-1 since 5.0.0, and the group-lock check since 5.1.1.
RETRY_SEND_STRICT = {"4.9.1": False, "4.9.8": False, "5.0.0": True, "5.3.3": True, "develop": True}
RETRY_SEND_LOCK_CHECK = {"4.9.1": False, "4.9.8": False, "5.0.0": False, "5.3.3": True, "develop": True}
# §1.5 / §3: ORIGIN_MESSAGE_ID kept by the fallback (develop only) and by the orderly send (4.9.4+);
# orderly RECONSUME_TIME is r + 1 since 5.1.1.
FALLBACK_KEEPS_ORIGIN = {"4.9.1": False, "4.9.8": False, "5.0.0": False, "5.3.3": False, "develop": True}
ORDERLY_KEEPS_ORIGIN = DLQ_CLEARS_DELAY
ORDERLY_PLUS_ONE = RETRY_SEND_LOCK_CHECK
RETRY_SEND_IMMEDIATE = RETRY_SEND_STRICT
BROKER_LOCK_MAX_LIVE_MILLIS = 60_000  # §10, RLM

GROUP = "G"
RETRY_TOPIC = "%RETRY%G"
DLQ_TOPIC = "%DLQ%G"
SCHEDULE_TOPIC = "SCHEDULE_TOPIC_XXXX"
MAX_LEVEL = 18
PERMS = st.sampled_from([6, 6, 6, 6, 6, 4, 2, 0])  # read|write most often
RANDOM_INTS = st.integers(0, 99_999_998)


@frozen
class BrokerCase:
    """Everything a broker-side decision depends on, drawn independently of the model."""

    version: str
    group: SubscriptionGroupConfig | None
    broker_perm: int
    retry_topic: TopicConfig | None
    dlq_topic: TopicConfig | None
    lock: QueueLock | None

    def build(self, stored: Message | None = None) -> Broker:
        topics = {t.topic_name: t for t in (self.retry_topic, self.dlq_topic) if t is not None}
        groups = {GROUP: self.group} if self.group is not None else {}
        locks = {(GROUP, MessageQueue("T", 0)): self.lock} if self.lock is not None else {}
        broker = Broker(perm=self.broker_perm, topics=Map(topics), groups=Map(groups), queue_locks=Map(locks))
        return broker if stored is None else with_only_stored(broker, stored)


def with_only_stored(broker: Broker, stored: Message) -> Broker:
    """The broker with a commit log holding just `stored`, at its own commit-log offset (no consume queue)."""
    store = Store(commit_log=EMPTY_LOG.append(compute_log_record(stored)),
                  next_physical_offset=stored.commit_log_offset + 1000)
    return evolve(broker, store=store)


@st.composite
def broker_cases(draw) -> BrokerCase:
    group = None
    if draw(st.integers(0, 9)) > 0:  # a missing group is one case in ten
        group = SubscriptionGroupConfig(GROUP, draw(st.integers(-1, 4)), draw(st.integers(0, 20)))
    retry_topic = draw(st.none() | st.builds(TopicConfig, st.just(RETRY_TOPIC), st.integers(0, 4),
                                             st.integers(0, 4), PERMS))
    dlq_topic = draw(st.none() | st.builds(TopicConfig, st.just(DLQ_TOPIC), st.just(1), st.just(1), PERMS))
    lock = draw(st.none() | st.builds(QueueLock, st.just("client"), st.integers(0, 200_000)))
    return BrokerCase(draw(st.sampled_from(VERSIONS)), group, draw(PERMS), retry_topic, dlq_topic, lock)


OPTIONAL_IDS = st.sampled_from([None, None, "", "  ", "ORIGIN-ID"])


@st.composite
def stored_messages(draw) -> Message:
    """A message as the store holds it: an original in T or a delivered retry in %RETRY%G."""
    offset = draw(st.integers(0, 10**9))
    properties = {"UNIQ_KEY": draw(st.sampled_from(["U1", "U2"])), "TAGS": "tagA"}
    for key, values in (("RETRY_TOPIC", st.sampled_from([None, "T"])), ("ORIGIN_MESSAGE_ID", OPTIONAL_IDS),
                        ("DELAY", st.sampled_from([None, "0", "3", "18"]))):
        value = draw(values)
        if value is not None:
            properties[key] = value
    return Message(topic=draw(st.sampled_from(["T", RETRY_TOPIC])), body=draw(st.binary(max_size=8)),
                   tags="tagA", properties=Map(properties), queue_id=draw(st.integers(0, 3)),
                   queue_offset=draw(st.integers(0, 100)), commit_log_offset=offset,
                   msg_id=compute_message_id(offset), reconsume_times=draw(st.integers(0, 20)),
                   flag=draw(st.integers(0, 7)), born_timestamp=draw(st.integers(0, 10**6)))


def get_destination(stored: Message) -> tuple[str, int, int]:
    """Where a stored copy is bound: (topic, queue, delay level), looking through SCHEDULE_TOPIC_XXXX."""
    if stored.topic == SCHEDULE_TOPIC:
        return stored.properties["REAL_TOPIC"], int(stored.properties["REAL_QID"]), int(stored.properties["DELAY"])
    return stored.topic, stored.queue_id, 0
