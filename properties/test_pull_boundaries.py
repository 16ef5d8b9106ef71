"""The pull's two boundaries, drawn exactly at the limit: the broker's answer at the queue's end (PL-04) and the
client's piggybacked offset at 0 (PL-07). Each test puts one pull where the rule decides and asks the model."""

from __future__ import annotations

import immutables
from hypothesis import event, given
from hypothesis import strategies as st

from model.broker.consumer_offsets import query_offset
from model.broker.pull_handler import get_broker_pull, get_pull_refusal
from model.broker.state import Broker, TopicConfig
from model.client.observations import PullObserved
from model.client.offset_store import update_offset
from model.client.pull import commit_piggyback
from model.system.events import Advance, Produce
from model.system.step import create_system
from model.values.config import Config, MessageModel
from model.values.message import MessageQueue
from model.values.names import GROUP, TOPIC
from model.values.records import evolve
from properties.steps import run

Q0 = MessageQueue(TOPIC, 0)


@given(broker_perm=st.sampled_from((2, 4, 6)), topic_perm=st.sampled_from((None, 2, 4, 6)),
       queue_id=st.integers(-1, 3))
def test_pull_refused_before_the_store_lookup(broker_perm, topic_perm, queue_id):
    """[PL-04] PullMessageProcessor.processRequest: broker permission, then the topic's existence and permission,
    then the queue id against the topic's two read queues."""
    topics = {} if topic_perm is None else {TOPIC: TopicConfig(TOPIC, 2, 2, topic_perm)}
    broker = Broker(perm=broker_perm, topics=immutables.Map(topics))
    refusal = get_pull_refusal(broker, MessageQueue(TOPIC, queue_id))
    event("PL-04")
    if broker_perm == 2:
        assert refusal == "NO_PERMISSION"
    elif topic_perm is None:
        assert refusal == "TOPIC_NOT_EXIST"
    elif topic_perm == 2:
        assert refusal == "NO_PERMISSION"
    else:
        assert refusal == (None if queue_id in (0, 1) else "SYSTEM_ERROR")


@given(stored=st.integers(0, 5), around=st.sampled_from((-1, 0, 1)))
def test_the_queue_end_is_no_new_message_and_one_past_it_is_illegal(stored, around):
    """[PL-04] DefaultMessageStore.getMessage: an offset below the max offset finds its message, exactly the max
    offset is NO_NEW_MSG (OFFSET_OVERFLOW_ONE), one past it OFFSET_ILLEGAL (OFFSET_OVERFLOW_BADLY)."""
    system = create_system(Config(), ("c1",), topic_queue_nums=1)
    system, _ = run(system, *[Produce(f"m{i}") for i in range(stored)])
    offset = stored + around
    status, found, _next = get_broker_pull(system.broker, Q0, offset, 0, None, system.config.pull_batch_size)
    event("PL-04")
    if offset < 0 or offset > stored:
        assert status == "OFFSET_ILLEGAL"
    elif offset == stored:
        assert (status, found) == ("NO_NEW_MSG", [])
    else:
        assert status == "FOUND" and found[0].queue_offset == offset


@given(stored=st.integers(0, 40))
def test_a_consumers_pull_is_observed_with_what_the_broker_answered(stored):
    """[PL-04] The first pull of a queue holding `stored` messages: FOUND up to pullBatchSize (32) of them, or
    NO_NEW_MSG for an empty queue, whose answer parks until the 15 s long poll ends."""
    system = create_system(Config(), ("c1",), topic_queue_nums=1)
    assert get_pull_refusal(system.broker, Q0) is None  # the broker knows the topic and lets the pull through
    _, seen = run(system, *[Produce(f"m{i}") for i in range(stored)], Advance(15_000))
    pulls = [(o.client_id, o.status, o.offset, o.found, o.rules) for o in seen
             if isinstance(o, PullObserved) and o.queue == Q0]
    assert pulls[0] == ("c1", "FOUND" if stored else "NO_NEW_MSG", 0, min(stored, 32), ("PL-04",))


@given(in_memory=st.integers(0, 3), model=st.sampled_from(tuple(MessageModel)))
def test_a_pull_piggybacks_only_a_positive_offset_and_only_in_clustering(in_memory, model):
    """[PL-07] commitOffsetEnable needs CLUSTERING and an in-memory offset above 0: an offset of 0 is not sent, so
    the broker's offset of a never-committed queue stays unset."""
    system = create_system(Config(message_model=model), ("c1",), topic_queue_nums=1)
    consumer = system.consumers["c1"]
    consumer = evolve(consumer, offset_store=update_offset(consumer.offset_store, Q0, in_memory, False))
    after, _seen = commit_piggyback(system, consumer, Q0)
    event("PL-07")
    sent = model is MessageModel.CLUSTERING and in_memory > 0
    assert query_offset(after.broker, GROUP, TOPIC, 0) == (in_memory if sent else -1)
