"""PO-02 to PO-06 where a pop reads its queues: which queues and in which order, when the retry topic is read, the
revive queue each pop draws, what a pop that is not orderly answers as counts, and the tag filter over a retry
topic — as PopMessageProcessor of RocketMQ 5.3.3 does it (spec/14-pop.md; line numbers below are of
https://github.com/apache/rocketmq/blob/rocketmq-all-5.3.3/broker/src/main/java/org/apache/rocketmq/broker/processor/PopMessageProcessor.java)."""

from __future__ import annotations

import pytest

from model.broker.pop.pop import PopRequest, on_pop
from model.broker.pop.restart import on_broker_restart, on_persist
from model.broker.pop.revive import on_revive
from model.broker.pop.state import create_pop_broker, set_broker
from model.broker.store import put_message
from model.values.config import Config
from model.values.message import create_message
from model.values.pop_wire import POP_ORDER_REVIVE_QUEUE
from model.values.records import evolve
from properties.pop_brokers import new_pop_broker, produce, produce_many
from properties.pop_strategies import GROUP, RETRY_V1, REVIVE_MARGIN, TOPIC


def pop(state, now, n=32, queue_id=0, random_q=50, topic=TOPIC, **more):
    return on_pop(state, PopRequest(GROUP, topic, queue_id, n, 10_000, **more), now, random_q)


@pytest.mark.parametrize(("random_q", "expected"), [(21, ["m0", "m1"]), (22, ["m1", "m2"]), (23, ["m2", "m0"]),
                                                    (99, ["m0", "m1"])])
def test_an_all_queue_pop_reads_from_queue_random_q_mod_n_upwards(random_q, expected):
    """PO-03: a pop of queue -1 reads queue `(randomQ + i) % readQueueNums` for i = 0, 1, ... (popMsgFromTopic,
    L637-L650) until the batch is full: with one message in each of three queues and room for two, the draw 22
    reads queues 1 and 2, the draw 23 queues 2 and 0."""
    state = produce_many(new_pop_broker(queues=3), 3, 3)
    _, answer = pop(state, 1_000, n=2, queue_id=-1, random_q=random_q)
    assert [m.uniq_key for m in answer.messages] == expected


def test_a_pop_of_queue_0_reads_queue_0_only():
    """PO-03: only `queueId < 0` reads every queue (L520-L530); a pop of queue 0 reads that queue alone, so a
    message in queue 1 is not returned — and only queue 0's offset is initialised (getPopOffset, L871-L917). The
    empty queue answers no message and passes over none (PO-05 is the filter's, L806-L818): the answer names the
    draw's rule alone."""
    state = produce(new_pop_broker(queues=2), "m0", queue_id=1)
    after, answer = pop(state, 1_000, queue_id=0, random_q=21)
    assert (answer.code, answer.messages, answer.rules) == ("POLLING_TIMEOUT", (), ("PO-02",))
    assert dict(after.broker.consumer_offsets) == {(GROUP, TOPIC, 0): 0}
    _, every = pop(state, 1_000, queue_id=-1, random_q=21)
    assert [m.uniq_key for m in every.messages] == ["m0"]


def test_a_pop_the_topic_fills_leaves_the_retry_topic_unread():
    """PO-02: after the topic, the retry topic is read only if `size() < maxMsgNums` (L532). m0 popped at 1 s is
    revived into the v1 retry topic after the persist, whose creation commits the group's offset 0 there
    (addRetryTopicIfNotExist, PopReviveService 5.3.3 L153-L177); a crash brings the offsets back to the persist
    (PO-10) and the topic stays, so the group has no offset in it. A batch of one that the topic fills never reaches
    popMsgFromQueue of the retry topic, whose getPopOffset would commit the initial offset (L913-L916): still none. A
    batch of two has room, takes the retry copy and commits past it."""
    state = on_persist(pop(produce_many(new_pop_broker(), 3), 1_000, n=1)[0])
    state, revived = on_revive(state, 1_000 + 10_000 + REVIVE_MARGIN + 1)
    assert [m.topic for m in revived.stored] == [RETRY_V1]
    state = on_broker_restart(state, graceful=False)
    assert dict(state.broker.consumer_offsets) == {(GROUP, TOPIC, 0): 1}
    state, full = pop(state, 20_000, n=1, random_q=50)
    assert [m.uniq_key for m in full.messages] == ["m1"]
    assert dict(state.broker.consumer_offsets) == {(GROUP, TOPIC, 0): 2}
    state, roomy = pop(state, 20_001, n=2, random_q=50)
    assert [(m.uniq_key, m.reconsume_times) for m in roomy.messages] == [("m2", 0), ("m0", 1)]
    assert state.broker.consumer_offsets[(GROUP, RETRY_V1, 0)] == 1


def test_pops_draw_revive_queues_round_robin_and_orderly_pops_draw_none():
    """PO-04, PO-06: a pop that is not orderly takes reviveQid = ckMessageNumber++ % reviveQueueNum (8), whether or
    not it finds a message; an orderly pop takes POP_ORDER_REVIVE_QUEUE (999) and leaves the counter alone; a refused
    pop never gets that far (L483-L490). The checkpoint is written to that revive queue and the handle names it
    (appendCheckPoint, L937-L968; ExtraInfoUtil.buildExtraInfo), and no orderCountInfo is answered for a pop that
    is not orderly (L587-L589): its counts read 0."""
    config = Config(profile="5.3.3")
    state = produce_many(create_pop_broker(config, GROUP, {TOPIC: 1, "O": 1, "E": 1}), 8)
    store, _ = put_message(state.broker.store, create_message("O", "o0", tags="a"), 0, config.delay_levels)
    state = set_broker(state, evolve(state.broker, store=store))
    drawn, now = [], 1_000
    steps = ["pop", "refused", "pop", "orderly", "pop", "empty"] + ["pop"] * 5
    for step in steps:
        now += 10
        if step == "refused":
            state, answer = pop(state, now, n=33)
            assert answer.code == "INVALID_PARAMETER"
        elif step == "orderly":
            state, answer = pop(state, now, n=1, order=True, attempt_id="A", topic="O")
            assert [h.revive_queue_id for h in answer.handles] == [POP_ORDER_REVIVE_QUEUE]
        elif step == "empty":
            state, answer = pop(state, now, n=1, topic="E")
            assert answer.code == "POLLING_TIMEOUT"
        else:
            state, answer = pop(state, now, n=1)
            (handle,) = answer.handles
            ck = state.pop.checkpoints[(TOPIC, GROUP, 0, handle.offset, now)]
            assert ck.revive_queue_id == handle.revive_queue_id
            assert answer.order_counts == ((0, 0),)
            drawn.append(handle.revive_queue_id)
    assert drawn == [0, 1, 2, 4, 5, 6, 7, 0]


def test_a_tag_filter_passes_over_a_retry_copy_of_another_tag():
    """PO-05: a pop's tag filter (ExpressionMessageFilter over the request's expression, L320-L351) is handed to
    every popMsgFromQueue of the request, retry topic included (L509-L541, getMessageAsync at L744-L746), and
    matches a unit by its tags code (ExpressionMessageFilter.isMatchedByConsumeQueue, 5.3.3 L59-L80); a revived copy
    keeps its tags (PopReviveService.reviveRetry, 5.3.3 L117-L118). So when a consumer of the group subscribed to
    `*` lets a tag-b message come back, a consumer of the same group subscribed to tag a passes over the retry copy
    too: the retry topic's offset moves past it without a checkpoint, and the copy is never delivered to the group."""
    state = produce(produce(new_pop_broker(), "m0", tag="b"), "m1", tag="a")
    state, first = pop(state, 1_000, n=1)
    state, _ = on_revive(state, 1_000 + 10_000 + REVIVE_MARGIN + 1)
    state, tagged = pop(state, 20_000, random_q=0, tags=frozenset({"a"}))
    assert [m.uniq_key for m in first.messages] == ["m0"]
    assert [m.uniq_key for m in tagged.messages] == ["m1"]
    assert [(m.uniq_key, m.topic, m.tags) for m in tagged.skipped] == [("m0", RETRY_V1, "b")]
    assert state.broker.consumer_offsets[(GROUP, RETRY_V1, 0)] == 1
    assert [ck.topic for ck in state.pop.checkpoints.values()] == [TOPIC]
    state, everything = pop(state, 20_001, random_q=0)
    assert (everything.code, everything.messages) == ("POLLING_TIMEOUT", ())


@pytest.mark.parametrize("graceful", [True, False])
def test_a_restarted_broker_draws_revive_queues_from_0_again(graceful):
    """PO-04, PO-10: ckMessageNumber is a field of PopMessageProcessor, `new AtomicLong()` when the broker starts
    (5.3.3 L114, L123) and never persisted: after three pops drew revive queues 0, 1 and 2, a restart — graceful or
    a crash — makes the next pop draw queue 0 again."""
    state = produce_many(new_pop_broker(), 5)
    drawn = []
    for now in (1_000, 1_001, 1_002):
        state, answer = pop(state, now, n=1)
        drawn += [h.revive_queue_id for h in answer.handles]
    state = on_broker_restart(state, graceful=graceful)
    state, answer = pop(state, 2_000, n=1)
    drawn += [h.revive_queue_id for h in answer.handles]
    assert drawn == [0, 1, 2, 0]
