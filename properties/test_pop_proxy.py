"""Properties of spec/16-proxy.md: the proxy's receive, filter, forward to the DLQ, ack and change (PD-01 to
PD-06) and the group retry policies (RP-01 to RP-04)."""

from __future__ import annotations

from hypothesis import Phase, assume, find, given, settings
from hypothesis import strategies as st

from model.broker.pop.retry_policy import (
    CustomizedRetryPolicy,
    ExponentialRetryPolicy,
    GroupRetryPolicy,
    GroupRetryPolicyType,
    compute_customized_delay,
    compute_exponential_delay,
)
from model.broker.pop.revive import on_revive
from model.broker.pop.state import PopGroupConfig
from model.proxy.consumer import on_change_invisible_duration, on_proxy_ack
from model.proxy.dlq import on_forward_to_dlq, process_follow_up
from model.proxy.receive import ReceiveRequest, on_receive
from model.proxy.settings import compute_consumer_settings, compute_stop_renew_delay
from model.values.delay_levels import DEFAULT_MESSAGE_DELAY_LEVEL, parse_delay_level
from properties.coverage import record_rules
from properties.pop_brokers import new_pop_broker, produce, produce_many, stored_in
from properties.pop_strategies import DLQ, GROUP, INVISIBLE, RANDOM_Q, RETRY_V1, REVIVE_MARGIN, TOPIC

# The 4.x delay table, read independently of the policy module (chapter 04): level i waits DELAYS[i - 1] ms.
DELAYS = parse_delay_level(DEFAULT_MESSAGE_DELAY_LEVEL)
POLICY_TYPES = st.sampled_from(list(GroupRetryPolicyType))


def receive(state, now, batch=1, invisible=10_000, random_q=50, **more):
    return on_receive(state, ReceiveRequest(GROUP, TOPIC, batch, invisible, **more), now, random_q)


def follow_all(state, follow_ups, now, keep_acks=True):
    """Send every follow-up (and the acks of forwards, unless `keep_acks` is False: a proxy that stopped)."""
    pending = list(follow_ups)
    while pending:
        state, more = process_follow_up(state, pending.pop(0), now, 0)
        pending += [f for f in more if keep_acks]
    return state


@given(r=st.integers(-3, 40))
def test_customized_delay_is_the_delay_table_from_level_3(r):
    """RP-01: the default customized policy waits what a 4.x send-back's level 3 + r waits (level 18 at most)."""
    delay = compute_customized_delay(CustomizedRetryPolicy(), r)
    record_rules(("RP-01",))
    assert delay == DELAYS[min(3 + max(r, 0), 18) - 1]


@given(initial=st.integers(1, 10_000), maximum=st.integers(1, 10**8), multiplier=st.integers(1, 4),
       r=st.integers(-3, 50))
def test_exponential_delay_doubles_up_to_the_max(initial, maximum, multiplier, r):
    """RP-02: min(max, initial * multiplier^r), r clamped to [0, 32]."""
    policy = ExponentialRetryPolicy(initial, maximum, multiplier)
    record_rules(("RP-02",))
    assert compute_exponential_delay(policy, r) == min(maximum, initial * multiplier ** min(max(r, 0), 32))


def test_exponential_delay_stops_growing_at_32_retries():
    """RP-02 at its clamp: nextDelayDuration clamps reconsumeTimes to 32 (ExponentialRetryPolicy 5.3.3 L71-L79), so
    under a max it does not reach, 1 ms doubled grows to 2^32 ms at 32 retries and stays there."""
    policy = ExponentialRetryPolicy(1, 2**40, 2)
    assert [compute_exponential_delay(policy, r) for r in (31, 32, 33, 50)] == [2**31, 2**32, 2**32, 2**32]


@given(kind=POLICY_TYPES, with_parameters=st.booleans(), r=st.integers(0, 20))
def test_settings_and_get_retry_policy_disagree_on_empty_exponential(kind, with_parameters, r):
    """RP-03: the settings' backoff and getRetryPolicy agree, except for an EXPONENTIAL group without parameters:
    exponential defaults in the settings, the customized default in getRetryPolicy."""
    exponential, customized = ExponentialRetryPolicy(1_000, 60_000, 3), CustomizedRetryPolicy((7_000, 8_000, 9_000))
    policy = GroupRetryPolicy(kind, exponential if with_parameters else None, customized if with_parameters else None)
    state = new_pop_broker(group_config=PopGroupConfig(retry_policy=policy))
    backoff = compute_consumer_settings(state, GROUP).backoff
    renew = compute_stop_renew_delay(state, GROUP, r)
    record_rules(("RP-03", "RP-04"))
    if kind is GroupRetryPolicyType.EXPONENTIAL and not with_parameters:
        assert backoff == ExponentialRetryPolicy(5_000, 7_200_000, 2)
        assert renew == DELAYS[min(3 + r, 18) - 1]
        assert compute_stop_renew_delay(state, GROUP, 0) == 10_000 != compute_exponential_delay(backoff, 0) == 5_000
    elif isinstance(backoff, ExponentialRetryPolicy):
        assert renew == compute_exponential_delay(backoff, r)
    else:
        assert renew == compute_customized_delay(backoff, r)


@given(retry_max_times=st.integers(0, 20), orderly=st.booleans())
def test_max_attempts_is_retry_max_times_plus_one(retry_max_times, orderly):
    """RP-03: maxAttempts = retryMaxTimes + 1, fifo = consumeMessageOrderly; an unknown group gets 17."""
    state = new_pop_broker(retry_max_times=retry_max_times,
                           group_config=PopGroupConfig(consume_message_orderly=orderly))
    settings_ = compute_consumer_settings(state, GROUP)
    record_rules(("RP-03",))
    assert (settings_.max_attempts, settings_.fifo) == (retry_max_times + 1, orderly)
    assert compute_consumer_settings(state, "OTHER").max_attempts == 17


@given(kind=POLICY_TYPES, r=st.integers(0, 20))
def test_stop_renew_delay_reads_the_group_policy(kind, r):
    """RP-04: when auto-renew gives up, the delay is the group policy's, for the message's reconsumeTimes."""
    exponential = ExponentialRetryPolicy(2_000, 100_000, 2)
    state = new_pop_broker(group_config=PopGroupConfig(retry_policy=GroupRetryPolicy(kind, exponential, None)))
    record_rules(("RP-04",))
    expected = (min(100_000, 2_000 * 2 ** r) if kind is GroupRetryPolicyType.EXPONENTIAL
                else DELAYS[min(3 + r, 18) - 1])
    assert compute_stop_renew_delay(state, GROUP, r) == expected


@given(invisible=st.integers(0, 13 * 3600 * 1000), auto_renew=st.booleans())
def test_receive_invisible_time_bounds(invisible, auto_renew):
    """PD-01: a receive's invisible time must lie in [10 s, 12 h] unless auto-renewed (then 60 s); the popped
    message is invisible for exactly that long."""
    state, answer = receive(produce(new_pop_broker(), "m0"), 1_000, invisible=invisible, auto_renew=auto_renew)
    record_rules(answer.rules)
    if auto_renew:
        assert answer.handles[0].invisible_time == 60_000
    elif 10_000 <= invisible <= 12 * 3600 * 1000:
        assert answer.handles[0].invisible_time == invisible
        assert answer.messages[0].get_property("1ST_POP_TIME") == "1000"
    else:
        assert (answer.code, answer.messages) == ("ILLEGAL_INVISIBLE_TIME", ())


@given(tags=st.lists(st.sampled_from(["a", "b", None]), min_size=1, max_size=6), subscribed=st.sampled_from(
    [None, frozenset({"a"}), frozenset({"a", "b"})]), retry_max_times=st.integers(0, 2), rounds=st.integers(1, 4),
    random_q=RANDOM_Q)
def test_filter_sorts_popped_messages(tags, subscribed, retry_max_times, rounds, random_q):
    """PD-02: every message the consumer sees matches its subscription and has reconsumeTimes < maxAttempts;
    the proxy acks every popped retry copy that does not match and forwards every one that reached maxAttempts."""
    state = new_pop_broker(retry_max_times=retry_max_times)
    for i, tag in enumerate(tags):
        state = produce(state, f"m{i}", tag=tag)
    now = 1_000
    for _ in range(rounds):
        state, first = receive(state, now, batch=32, random_q=random_q)  # "*": every copy, never acked
        state, answer = receive(state, now + 1, batch=32, random_q=random_q, tags=subscribed)
        record_rules(first.rules + answer.rules)
        for message in first.messages + answer.messages:
            assert message.reconsume_times < retry_max_times + 1
        for message in answer.messages:
            assert not subscribed or message.tags in subscribed
        for follow_up in first.follow_ups + answer.follow_ups:
            assert follow_up.kind == "dlq" or (subscribed and follow_up.handle.retry_flag == "1")
        state = follow_all(state, first.follow_ups + answer.follow_ups, now + 1)
        now += 10_000 + REVIVE_MARGIN + 2
        state, _ = on_revive(state, now)


@given(retry_max_times=st.integers(0, 3), invisible=INVISIBLE)
def test_forward_to_dlq_is_a_send_back_then_an_ack(retry_max_times, invisible):
    """PD-03: a message never acked is delivered maxAttempts times; then the proxy's send-back stores one DLQ
    copy and its ack finishes the checkpoint: nothing comes back."""
    state, now, seen = produce(new_pop_broker(retry_max_times=retry_max_times), "m0"), 1_000, []
    for _ in range(retry_max_times + 3):
        state, answer = receive(state, now, invisible=max(invisible, 10_000))
        record_rules(answer.rules)
        seen += [m.reconsume_times for m in answer.messages]
        state = follow_all(state, answer.follow_ups, now)
        now += max(invisible, 10_000) + REVIVE_MARGIN + 1
        state, _ = on_revive(state, now)
    assert seen == list(range(retry_max_times + 1))
    assert [m.uniq_key for m in stored_in(state, DLQ)] == ["m0"] and not state.pop.checkpoints


@given(retry_max_times=st.integers(0, 2), lost=st.integers(1, 3))
def test_lost_dlq_ack_dead_letters_twice(retry_max_times, lost):
    """PD-03: each time the ack after the send-back is lost, the message is revived and dead-lettered once more."""
    state, now = produce(new_pop_broker(retry_max_times=retry_max_times), "m0"), 1_000
    forwards = 0
    for _ in range(retry_max_times + 1 + lost + 1):
        state, answer = receive(state, now)
        record_rules(answer.rules)
        keep = forwards >= lost
        forwards += len(answer.follow_ups)
        state = follow_all(state, answer.follow_ups, now, keep_acks=keep)
        now += 10_000 + REVIVE_MARGIN + 1
        state, _ = on_revive(state, now)
    assert len(stored_in(state, DLQ)) == lost + 1


@given(retry_max_times=st.integers(0, 2))
def test_group_without_retry_queue_loses_the_dead_letter(retry_max_times):
    """PD-03 with SB-03: for a group with retryQueueNums 0 the send-back answers SUCCESS and stores nothing, the
    proxy acks, and the message is gone: no DLQ copy, nothing pending, nothing delivered again."""
    state = produce(new_pop_broker(retry_max_times=retry_max_times, retry_queue_nums=0), "m0")
    now, delivered = 1_000, 0
    for _ in range(retry_max_times + 4):
        state, answer = receive(state, now)
        delivered += len(answer.messages)
        for follow_up in answer.follow_ups:
            state, forward = on_forward_to_dlq(state, GROUP, TOPIC, follow_up.handle, "m0", now, 0)
            record_rules(forward.rules)
            assert (forward.result.code.name, forward.result.stored) == ("SUCCESS", None)
            state = follow_all(state, (forward.follow_up,), now)
        now += 10_000 + REVIVE_MARGIN + 1
        state, _ = on_revive(state, now)
    assert (delivered, stored_in(state, DLQ), len(state.pop.checkpoints)) == (retry_max_times + 1, [], 0)


@given(retry_max_times=st.integers(0, 3))
def test_dlq_copy_carries_attempts_and_retry_topic(retry_max_times):
    """PD-04: the DLQ copy has reconsumeTimes maxAttempts + 1, RETRY_TOPIC %RETRY%G_T (or T when the message
    never left T), the producer's UNIQ_KEY and the offset id of the copy it came from as ORIGIN_MESSAGE_ID."""
    state, now = produce(new_pop_broker(retry_max_times=retry_max_times), "m0"), 1_000
    while not stored_in(state, DLQ):
        state, answer = receive(state, now)
        state = follow_all(state, answer.follow_ups, now)
        now += 10_000 + REVIVE_MARGIN + 1
        state, _ = on_revive(state, now)
    (dead,) = stored_in(state, DLQ)
    source = [m for m in stored_in(state, RETRY_V1) if m.reconsume_times == retry_max_times + 1]
    record_rules(("PD-04",))
    assert (dead.reconsume_times, dead.get_property("RETRY_TOPIC"), dead.uniq_key) == (
        retry_max_times + 2, RETRY_V1, "m0")
    assert dead.get_property("ORIGIN_MESSAGE_ID") == source[0].msg_id


@given(invisible=st.integers(10_000, 60_000), wait=st.integers(0, 70_000), change=st.booleans())
def test_expired_handle_is_refused_by_the_proxy(invisible, wait, change):
    """PD-05: an ack or a change at or after pop time + invisible time is INVALID_RECEIPT_HANDLE and leaves the
    broker as it was; before, it reaches the broker."""
    state, answer = receive(produce(new_pop_broker(), "m0"), 1_000, invisible=invisible)
    now = 1_000 + wait
    if change:
        after, result = on_change_invisible_duration(state, GROUP, TOPIC, answer.handles[0], 10_000, now)
    else:
        after, result = on_proxy_ack(state, GROUP, TOPIC, answer.handles[0], now)
    record_rules(result.rules)
    if wait >= invisible:
        assert (result.code, after) == ("INVALID_RECEIPT_HANDLE", state)
    else:
        assert result.code == "OK" and result.effective


@given(batch=st.integers(1, 4), index=st.integers(0, 3), at=st.integers(1, 9_000))
def test_changed_handle_keeps_the_batch_start(batch, index, at):
    """PD-06: the proxy's new handle keeps the batch's start offset and gets the new pop time; the broker's new
    checkpoint starts at the message's offset."""
    assume(index < batch)
    state, answer = receive(produce_many(new_pop_broker(), batch), 1_000, batch=batch)
    handle = answer.handles[index]
    state, changed = on_change_invisible_duration(state, GROUP, TOPIC, handle, 20_000, 1_000 + at)
    record_rules(changed.rules)
    assert (changed.handle.start_offset, changed.handle.pop_time, changed.handle.offset) == (
        0, 1_000 + at, handle.offset)
    assert (TOPIC, GROUP, 0, handle.offset, 1_000 + at) in state.pop.checkpoints


def is_delivered_after_ack(case) -> bool:
    """Receive `batch` messages, change the one at `index`, ack it with the new handle: is it delivered again?"""
    batch, index = case
    state, answer = receive(produce_many(new_pop_broker(), batch), 1_000, batch=batch)
    state, changed = on_change_invisible_duration(state, GROUP, TOPIC, answer.handles[index], 10_000, 2_000)
    state, _ = on_proxy_ack(state, GROUP, TOPIC, changed.handle, 3_000)
    for handle in answer.handles[:index] + answer.handles[index + 1:]:
        state, _ = on_proxy_ack(state, GROUP, TOPIC, handle, 3_000)
    state, _ = on_revive(state, 20_000)
    state, again = receive(state, 21_000, batch=32)
    return bool(again.messages)


def test_ack_after_change_misses_for_a_later_message():
    """PD-06, refuting "a message acked with the handle its change returned is done": Hypothesis finds the
    smallest case, the second message of a batch of two."""
    batch, index = find(st.tuples(st.integers(1, 4), st.integers(0, 3)).filter(lambda c: c[1] < c[0]),
                        is_delivered_after_ack, settings=settings(database=None, max_examples=200, phases=tuple(Phase)))
    assert (batch, index) == (2, 1)
    assert not is_delivered_after_ack((batch, 0))


@given(skipped=st.integers(1, 3), at=st.integers(1, 9_000))
def test_tag_filter_ahead_makes_a_single_receive_miss_too(skipped, at):
    """PD-06 without a batch: a receive of one message subscribed to tag a, behind messages tagged b that the
    broker passed over, gets a handle starting at the first of them; nacked and then acked with the changed handle,
    the message is delivered again."""
    state = new_pop_broker()
    for i in range(skipped):
        state = produce(state, f"b{i}", tag="b")
    state, answer = receive(produce(state, "a0", tag="a"), 1_000, tags=frozenset({"a"}))
    handle = answer.handles[0]
    assert (handle.start_offset, handle.offset) == (0, skipped)
    state, changed = on_change_invisible_duration(state, GROUP, TOPIC, handle, 10_000, 1_000 + at)
    state, acked = on_proxy_ack(state, GROUP, TOPIC, changed.handle, 1_000 + at + 1)
    record_rules(changed.rules + acked.rules)
    state, _ = on_revive(state, 1_000 + at + 10_000 + REVIVE_MARGIN + 1)
    state, again = receive(state, 30_000, tags=frozenset({"a"}))
    assert (acked.code, acked.effective, [m.uniq_key for m in again.messages]) == ("OK", False, ["a0"])
