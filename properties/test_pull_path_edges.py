"""The push consumer's pull path (spec/07-pull.md, PL-02 to PL-05, PL-11) at edges mutmut found unchecked: what a
held-back pull reports, that the %RETRY% topic is not filtered by the topic's tags, that a long-polling hold ends
with the broker's answer, and that pullInterval delays the pull after a FOUND batch."""

from __future__ import annotations

from model.client.observations import ListenerInvoked, PullObserved
from model.client.pull import on_found
from model.system.events import Advance, Produce, RefuseRequests
from model.system.step import create_system
from model.values.config import Config
from model.values.message import Message, MessageQueue, get_retry_topic
from model.values.names import GROUP, TOPIC
from model.values.wire import ResponseCode
from properties.steps import run

Q0 = MessageQueue(TOPIC, 0)
RETRY_Q0 = MessageQueue(get_retry_topic(GROUP), 0)


def get_pulls(seen, mq=Q0) -> list[PullObserved]:
    return [o for o in seen if isinstance(o, PullObserved) and o.queue == mq]


def test_a_pull_held_back_by_the_cached_count_reports_no_offsets_and_nothing_found():
    """[PL-02] pullMessage checks the cached count before sending anything and re-queues the request 50 ms later
    (DefaultMQPushConsumerImpl 4.9.8 L242-L252): no request, so no offsets and nothing found. With a threshold of 4
    and batches of 4, c1 caches 8 and its third pull is held back, reported as the spec's PL-02 example shows it,
    ('FLOW_CONTROL', -1, -1), by the instance that holds it, under PL-02."""
    system = create_system(Config(pull_threshold_for_queue=4, pull_batch_size=4), ("c1",), topic_queue_nums=1)
    _, seen = run(system, *[Produce(f"m{i}") for i in range(20)], Advance(1_000))
    pulls = get_pulls(seen)
    assert [(o.status, o.offset, o.next_offset) for o in pulls[:2]] == [("FOUND", 0, 4), ("FOUND", 4, 8)]
    assert pulls[2] == PullObserved("c1", Q0, "FLOW_CONTROL", -1, -1, 0, 0, ("PL-02",))


def test_a_pull_held_back_by_the_span_reports_no_offsets_and_nothing_found():
    """[PL-03] A concurrently consumer whose cached span (3 after a batch of offsets 0-3) is greater than
    consumeConcurrentlyMaxSpan (2) re-queues the pull 50 ms later without sending it (DefaultMQPushConsumerImpl
    4.9.8 L265-L275): reported as FLOW_CONTROL with no offsets and nothing found, under PL-03."""
    system = create_system(Config(consume_concurrently_max_span=2, pull_batch_size=4), ("c1",), topic_queue_nums=1)
    _, seen = run(system, *[Produce(f"m{i}") for i in range(10)], Advance(1_000))
    pulls = get_pulls(seen)
    assert (pulls[0].status, pulls[0].next_offset) == ("FOUND", 4)
    assert pulls[1] == PullObserved("c1", Q0, "FLOW_CONTROL", -1, -1, 0, 0, ("PL-03",))


def test_the_retry_topic_is_not_filtered_by_the_topics_tags():
    """[PL-05] [PL-09] A CLUSTERING consumer subscribes %RETRY%<group> with "*" (copySubscription 4.9.8 L859-L863),
    whose SubscriptionData has no tags (FilterAPI.buildSubscriptionData 4.9.8 L44-L45), and
    PullAPIWrapper.processPullResult re-filters only when the tags set is not empty (4.9.8 L80): a %RETRY% message
    tagged TagB (sent back under an earlier subscription) is cached and consumed by a consumer subscribed to TagA,
    while the same tag on the topic itself is dropped."""
    system = create_system(Config(), ("c1",), topic_queue_nums=1, subscription=frozenset({"TagA"}))
    retried = Message(RETRY_Q0.topic, tags="TagB", queue_id=0, queue_offset=0)
    after, seen = on_found(system, "c1", RETRY_Q0, [retried], 1)
    assert after.consumers["c1"].process_queues[RETRY_Q0].msg_count == 1
    assert [[m.tags for m in o.messages] for o in seen if isinstance(o, ListenerInvoked)] == [["TagB"]]
    plain = Message(TOPIC, tags="TagB", queue_id=0, queue_offset=0)
    after, seen = on_found(system, "c1", Q0, [plain], 1)
    assert after.consumers["c1"].process_queues[Q0].msg_count == 0 and not seen


def test_a_hold_answered_with_an_error_is_over_so_a_later_message_waits_for_the_retry():
    """[PL-04] [PL-11] The broker answers a held pull when it times out and keeps it no longer
    (PullRequestHoldService.notifyMessageArriving 4.9.8 L121 and L150-L157); refused at 15 s, the client re-pulls
    pullTimeDelayMillsWhenException (1000 ms) later (DefaultMQPushConsumerImpl 4.9.8 L403-L413). A message stored at
    15.5 s has no held pull to answer, so it is found by the re-pull at 16 s, not at 15.5 s."""
    system = create_system(Config(pull_time_delay_mills_when_exception=1_000), ("c1",), topic_queue_nums=1)
    system, seen = run(system, Advance(1_000), RefuseRequests("pull", ResponseCode.SYSTEM_ERROR), Advance(15_000),
                       RefuseRequests("pull", None), Advance(15_500), Produce("k1"), Advance(17_000))
    assert [(o.status, o.offset, o.time) for o in get_pulls(seen)] == [("SYSTEM_ERROR", 0, 15_000),
                                                                        ("FOUND", 0, 16_000)]
    assert [o.time for o in seen if isinstance(o, ListenerInvoked)] == [16_000]


def test_after_a_found_batch_the_next_pull_waits_the_pull_interval():
    """[PL-01] After caching a FOUND batch, a consumer with pullInterval > 0 pulls again pullInterval later
    (executePullRequestLater, DefaultMQPushConsumerImpl 4.9.8 L345-L350): with batches of 1 and pullInterval
    500 ms, the second message is pulled at 500 ms, not at once."""
    system = create_system(Config(pull_interval=500, pull_batch_size=1), ("c1",), topic_queue_nums=1)
    _, seen = run(system, Produce("a"), Produce("b"), Advance(2_000))
    assert [(o.status, o.offset, o.time) for o in get_pulls(seen)] == [("FOUND", 0, 0), ("FOUND", 1, 500)]
