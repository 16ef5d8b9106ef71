"""Properties of spec/18-pop-consumer.md, rules PC-01 to PC-04: the 5.3.3 remoting POP push consumer's answers to
its listener's results, and the 4.x send-back under the proxy's dead letters."""

from __future__ import annotations

import pytest
from hypothesis import example, given
from hypothesis import strategies as st

from model.broker.pop.ack import AckRequest, ChangeRequest, on_ack, on_change_invisible_time
from model.broker.pop.pop import PopRequest, on_pop
from model.broker.pop.revive import on_revive
from model.broker.send_back import SendBackRequest, on_consumer_send_msg_back
from model.client.pop_push_consumer import PopAction, process_consume_result
from model.proxy.dlq import compute_dlq_request, on_forward_to_dlq
from model.values.message import Message
from model.values.pop_wire import Handle
from properties.coverage import record_rules
from properties.pop_brokers import new_pop_broker, produce
from properties.pop_strategies import DLQ, GROUP, REVIVE_MARGIN, TOPIC

# DefaultMQPushConsumerImpl.popDelayLevel, written out again (seconds).
TABLE = [10, 30, 60, 120, 180, 240, 300, 360, 420, 480, 540, 600, 1200, 1800, 3600, 7200]
FOUR_HOURS = 2 * 7200 * 1000


def consume(messages, succeeded, ack_index=2**31 - 1, delay_level=0, max_times=16, pop_time=1_000,
            invisible=60_000, now=2_000, born=0):
    handles = tuple(Handle(0, pop_time, invisible, 0, "0", "broker-a", 0, i) for i in range(len(messages)))
    views = tuple(Message(TOPIC, reconsume_times=r, born_timestamp=born) for r in messages)
    return process_consume_result(views, handles, succeeded, ack_index, delay_level, max_times, now)


@given(times=st.lists(st.integers(0, 15), min_size=1, max_size=5), succeeded=st.booleans(),
       ack_index=st.integers(-1, 6), delay_level=st.integers(0, 20))
def test_failures_change_to_the_pop_delay_table(times, succeeded, ack_index, delay_level):
    """PC-01: the first ackIndex + 1 messages are acked on success (none on failure); every other one below the
    maximum gets popDelayLevel[delayLevel or reconsumeTimes] seconds (the last entry beyond the table)."""
    actions = consume(times, succeeded, ack_index, delay_level)
    record_rules(("PC-01",))
    acked = min(ack_index, len(times) - 1) + 1 if succeeded else 0
    assert [a.kind for a in actions[:acked]] == ["ack"] * acked
    for action, r in zip(actions[acked:], times[acked:], strict=True):
        level = delay_level or r
        assert (action.kind, action.invisible_time) == ("change", TABLE[min(level, 15)] * 1000)


def test_a_negative_delay_level_sends_nothing():
    """PC-01: changePopInvisibleTime reads popDelayLevel[delayLevelWhenNextConsume] and a negative level throws
    (ConsumeMessagePopConcurrentlyService 5.3.3 changePopInvisibleTime): a failed message below the maximum gets no
    change — nothing is sent for it."""
    assert consume([0, 3], False, delay_level=-1) == tuple(
        PopAction("none", Handle(0, 1_000, 60_000, 0, "0", "broker-a", 0, i)) for i in range(2))


@given(age=st.integers(0, 5 * 3600 * 1000), max_times=st.integers(0, 16))
@example(age=FOUR_HOURS, max_times=0)  # checkNeedAckOrDelay's `>` (ConsumeMessagePopConcurrentlyService 5.3.3 L269)
@example(age=FOUR_HOURS + 1, max_times=0)
@example(age=10_000, max_times=0)  # `msgDelaytime >= delayLevelTable[i] * 1000`: exactly 10 s is level 1 (30 s)
@example(age=9_999, max_times=0)
def test_give_up_acks_old_messages_and_never_dead_letters(age, max_times):
    """PC-02: at reconsumeTimes >= maxReconsumeTimes the consumer acks a message older than 2 x 7200 s, sends
    nothing for one younger than 10 s, and otherwise sets the first delay longer than its age — never a DLQ."""
    now = 10**8
    (action,) = consume([max_times], False, max_times=max_times, pop_time=now - 1, now=now, born=now - age)
    record_rules(("PC-02",))
    assert action.give_up
    if age > FOUR_HOURS:
        assert action.kind == "ack"
    elif age < 10_000:
        assert action == PopAction("none", Handle(0, now - 1, 60_000, 0, "0", "broker-a", 0, 0), give_up=True)
    else:
        expected = next(t for t in TABLE[1:] + [7200] if t * 1000 > age or t == 7200)
        assert (action.kind, action.invisible_time) == ("change", expected * 1000)


def test_poison_message_is_dropped_after_four_hours():
    """PC-02: a poison message driven through the broker by this consumer (maxReconsumeTimes 1) is delivered
    again and again, never reaches %DLQ%G, and is gone once acked past four hours."""
    state, now, deliveries = produce(new_pop_broker(), "m0"), 1_000, 0
    while now < FOUR_HOURS + 3 * 7200 * 1000:
        state, answer = on_pop(state, PopRequest(GROUP, TOPIC, -1, 1, 60_000), now, 50)
        for message, handle in zip(answer.messages, answer.handles, strict=True):
            deliveries += 1
            (action,) = process_consume_result((message,), (handle,), False, 0, 0, 1, now + 1)
            topic = "%RETRY%G_T" if handle.retry_flag == "1" else TOPIC
            if action.kind == "ack":
                state, _ = on_ack(state, AckRequest(GROUP, topic, 0, handle.offset, handle), now + 1)
            elif action.kind == "change":
                state, _ = on_change_invisible_time(
                    state, ChangeRequest(GROUP, topic, 0, handle.offset, handle, action.invisible_time), now + 1)
        now = max(now + 60_000, min((ck.revive_time for ck in state.pop.checkpoints.values()), default=now))
        state, _ = on_revive(state, now + REVIVE_MARGIN + 1)
    assert deliveries > 3 and not state.pop.checkpoints and DLQ not in state.broker.topics


@given(pop_age=st.integers(0, 120_000), invisible=st.integers(1, 60_000), succeeded=st.booleans())
def test_timed_out_request_sends_nothing(pop_age, invisible, succeeded):
    """PC-03: once now - popTime >= invisibleTime the result sends neither ack nor change."""
    actions = consume([0, 1], succeeded, pop_time=1_000, invisible=invisible, now=1_000 + pop_age)
    record_rules(("PC-03",))
    timed_out = pop_age >= invisible
    assert all(a.kind == "none" for a in actions) == timed_out


@given(retry_max_times=st.integers(0, 3), random_int=st.integers(0, 10**6))
def test_proxy_dead_letter_is_a_chapter_02_send_back(retry_max_times, random_int):
    """PC-04: the proxy's forward stores exactly what chapter 02's CONSUMER_SEND_MSG_BACK with delay level -1 and
    maxReconsumeTimes 0 stores, whatever the group's retryMaxTimes."""
    state = produce(new_pop_broker(retry_max_times=retry_max_times), "m0")
    state, answer = on_pop(state, PopRequest(GROUP, TOPIC, -1, 1, 10_000), 1_000, 50)
    handle = answer.handles[0]
    request = compute_dlq_request(GROUP, TOPIC, handle, "m0")
    assert (request.delay_level, request.max_reconsume_times, request.offset) == (-1, 0, handle.commit_log_offset)
    direct_broker, direct = on_consumer_send_msg_back(state.broker, state.config,
                                                      SendBackRequest(GROUP, TOPIC, handle.commit_log_offset, -1,
                                                                      "m0", 0), 2_000, random_int)
    after, forward = on_forward_to_dlq(state, GROUP, TOPIC, handle, "m0", 2_000, random_int)
    record_rules(forward.rules)
    assert (forward.result, after.broker) == (direct, direct_broker)
    assert forward.result.stored.topic == DLQ and forward.follow_up.kind == "ack"
    record_rules(["PC-04"])


def test_a_give_up_that_throws_sends_nothing_for_the_rest_of_the_request():
    """PC-01, PC-02: processConsumeResult walks the failed messages in order (ConsumeMessagePopConcurrentlyService
    5.3.3 L252-L262); a message at the maximum and younger than 10 s gets checkNeedAckOrDelay's level -1, and
    changePopInvisibleTime reads popDelayLevel[-1] before its try block (L287-L293), so the exception leaves the
    loop: the message after it, below the maximum, gets no change either."""
    now = 10**8
    actions = consume([16, 0], False, max_times=16, pop_time=now - 1, now=now, born=now - 5_000)
    assert [(a.kind, a.give_up) for a in actions] == [("none", True), ("none", True)]


@pytest.mark.parametrize("pop_time, invisible, now", [
    (0, 60_000, 1_000),  # no pop time: timed out though only 1 s passed
    (-1, 60_000, 1_000),
    (5_000, 0, 4_000),  # no invisible time: timed out even on a client clock behind the broker's popTime
    (5_000, -1, 4_000),
])
def test_a_pop_without_pop_time_or_invisible_time_counts_as_timed_out(pop_time, invisible, now):
    """PC-03: ConsumeRequest.isPopTimeout answers true when popTime <= 0 or invisibleTime <= 0, before it compares
    the client's clock with the broker's popTime (ConsumeMessagePopConcurrentlyService 5.3.3 L367-L374): the result
    sends neither ack nor change."""
    assert [a.kind for a in consume([0, 1], True, pop_time=pop_time, invisible=invisible, now=now)] == ["none"] * 2
