"""Invisible time and revive on RocketMQ 5.3.3 and the model-backed server: no copy before popTime + invisibleTime,
how much later it comes and why (the revive service's intervals, differential/pop_probe.py), what a revived copy
carries and the retry topic it creates, which retry topic it goes to (enableRetryTopicV2), two groups sharing one v1
retry topic, and a delayed message's copy delayed again."""

from __future__ import annotations

import time

import pytest

from conformance.codec import pop
from differential import pop_probe as p
from differential.pop_probe import facts, requires_5x

pytestmark = requires_5x
__all__ = ["facts"]
SAMPLES = 6
STAGGER_S = 0.7  # pops spread over 4.2 s: the samples meet the revive rounds at different phases
LIMIT_S = (p.INVISIBLE_MS + p.REVIVE_LAG_MAX_MS + p.OBSERVE_MARGIN_MS) / 1000 + SAMPLES * STAGGER_S
DELAY_LEVEL, DELAY_S = 1, 1  # messageDelayLevel's first level at its default (1s 5s 10s ...), on both backends


@pytest.mark.rules("IV-01", "PG-03")
def test_no_copy_before_revive_time_and_the_revive_lag(pop_backend, facts):
    names = p.fresh("rev")
    p.set_up(pop_backend, names)
    keys = [f"k{i}" for i in range(SAMPLES)]
    p.send_all(pop_backend, names, keys)
    revive_at, seen = {}, {}
    deadline = time.monotonic() + LIMIT_S
    while len(revive_at) < SAMPLES and time.monotonic() < deadline:
        for message in pop_backend.pop(names.group, names.topic, p.INVISIBLE_MS, max_nums=1).messages:
            if message.key in revive_at:  # revived already, between two slow pops of a loaded machine
                seen.setdefault(message.key, p.now_ms())
            else:
                revive_at[message.key] = p.get_revive_time(message)
        time.sleep(STAGGER_S)
    polling_from = p.now_ms()
    deadline = time.monotonic() + LIMIT_S
    while len(seen) < SAMPLES and time.monotonic() < deadline:
        for message in pop_backend.pop(names.group, names.topic, p.LONG_MS).messages:
            seen.setdefault(message.key, p.now_ms())
        time.sleep(0.05)
    stored: dict[str, int] = {}
    for m in p.read_retry(pop_backend, names):  # a copy popped in the first loop and not acked is revived again:
        key = m.properties["UNIQ_KEY"]          # each key's first copy is the one measured
        stored[key] = min(stored.get(key, m.store_timestamp), m.store_timestamp)
    store_lags = sorted(stored[k] - revive_at[k] for k in keys if k in stored)
    seen_lags = sorted(seen[k] - revive_at[k] for k in seen)
    config = pop_backend.get_broker_config()
    facts("revive lag, retry copy stored - (popTime + invisibleTime), ms", store_lags)
    facts("revive lag, copy first popped - (popTime + invisibleTime), ms", seen_lags)
    facts("broker config", {k: config.get(k) for k in ("reviveInterval", "reviveMaxSlow", "popCkStayBufferTime",
                                                       "enablePopBufferMerge", "reviveQueueNum")})
    assert sorted(seen) == keys and len(store_lags) == SAMPLES
    assert all(p.REVIVE_LAG_MIN_MS <= lag <= p.REVIVE_LAG_MAX_MS for lag in store_lags), store_lags
    # a copy stored while the pops above were still staggered waits for the polling loop: not the broker's pickup
    pickups = sorted(seen[k] - stored[k] for k in keys if stored[k] >= polling_from)
    facts("pickup: copy first popped - its store time, ms (copies stored once the polling loop ran)", pickups)
    assert all(lag >= p.REVIVE_LAG_MIN_MS for lag in seen_lags), seen_lags
    assert pickups and all(0 <= pickup <= p.OBSERVE_MARGIN_MS for pickup in pickups)


@pytest.mark.rules("IV-05", "IV-07", "PO-06")
def test_a_revived_copy_carries_one_more_reconsume_time_and_the_first_pop_time(pop_backend, facts):
    names = p.fresh("copy")
    p.set_up(pop_backend, names)
    assert pop_backend.send(names.topic, 0, b"body", "k0", "TagA") == 0
    p.wait_until(lambda: pop_backend.max_offset(names.topic, 0) >= 1, 5)
    first = pop_backend.pop(names.group, names.topic, p.INVISIBLE_MS).messages[0]
    second = p.pop_until(pop_backend, names, p.REVIVE_LIMIT_S, p.INVISIBLE_MS)[0].messages[0]
    third = p.pop_until(pop_backend, names, p.REVIVE_LIMIT_S)[0].messages[0]
    stored = p.read_retry(pop_backend, names)
    facts("popped copies (topic, reconsumeTimes, handle's topic mark)",
          [(m.topic, m.reconsume_times, pop.decode_handle(m.handle).topic_mark) for m in (first, second, third)])
    facts("stored retry copies (topic, queue, reconsumeTimes, 1ST_POP_TIME - first popTime)",
          [(m.topic, m.queue_id, m.reconsume_times, int(m.properties["1ST_POP_TIME"]) - pop.decode_handle(
              first.handle).pop_time) for m in stored])
    assert [m.reconsume_times for m in (first, second, third)] == [0, 1, 2]
    assert {(m.key, m.body, m.tag, m.topic) for m in (first, second, third)} == {("k0", b"body", "TagA", names.topic)}
    assert [pop.decode_handle(m.handle).topic_mark for m in (first, second, third)] == ["0", "1", "1"]
    assert [(m.topic, m.queue_id, m.reconsume_times) for m in stored] == [
        (pop.get_retry_topic(names.group, names.topic), 0, 1), (pop.get_retry_topic(names.group, names.topic), 0, 2)]
    first_pop = str(pop.decode_handle(first.handle).pop_time)
    assert [m.properties["1ST_POP_TIME"] for m in stored] == [first_pop, first_pop]
    config = pop_backend.get_topic_config(pop.get_retry_topic(names.group, names.topic))
    facts("the retry topic's config after its first revive (read queues, write queues, perm)",
          (config["readQueueNums"], config["writeQueueNums"], config["perm"]))
    assert (config["readQueueNums"], config["writeQueueNums"], config["perm"]) == (1, 1, 6)


@pytest.mark.rules("IV-03", "PO-06")
def test_retry_topic_v2_name_follows_enable_retry_topic_v2(pop_backend, facts):
    names = p.prepare(pop_backend, "v2")
    pop_backend.set_broker_config(enableRetryTopicV2="true")
    try:
        first = pop_backend.pop(names.group, names.topic, p.INVISIBLE_MS).messages[0]
        copy = p.pop_until(pop_backend, names, p.REVIVE_LIMIT_S)[0].messages[0]
    finally:
        pop_backend.set_broker_config(enableRetryTopicV2="false")
    v2, v1 = p.read_retry(pop_backend, names, v2=True), p.read_retry(pop_backend, names)
    facts("enableRetryTopicV2=true: copies in %RETRY%{group}+{topic} / in %RETRY%{group}_{topic}", (len(v2), len(v1)))
    assert first.reconsume_times == 0 and copy.reconsume_times == 1
    assert pop.decode_handle(copy.handle).topic_mark == pop.RETRY_MARK_V2
    assert [m.topic for m in v2] == [pop.get_retry_topic(names.group, names.topic, v2=True)] and v1 == ()
    assert pop_backend.ack(names.group, names.topic, copy.handle) == 0


@pytest.mark.rules("IV-04")
def test_v1_retry_topic_names_collide_across_groups(pop_backend, facts):
    """Group a_b of topic c and group a of topic b_c revive into one retry topic, %RETRY%a_b_c: each group pops the
    other's copy, a message of a topic it never subscribed."""
    stamp = p.fresh("").topic.split("T-", 1)[1].replace("-", "")
    first, second = p.Names(f"z{stamp}", f"c{stamp}_y"), p.Names(f"y_z{stamp}", f"c{stamp}")
    assert pop.get_retry_topic(first.group, first.topic) == pop.get_retry_topic(second.group, second.topic)
    for names, key in ((first, "k1"), (second, "k2")):
        p.set_up(pop_backend, names)
        p.send_all(pop_backend, names, [key])
        assert [m.key for m in pop_backend.pop(names.group, names.topic, p.INVISIBLE_MS).messages] == [key]
    p.wait_until(lambda: len(p.read_retry(pop_backend, first)) >= 2, p.REVIVE_LIMIT_S)
    got = {names.group: sorted(m.key for m in p.pop_until(pop_backend, names, p.REVIVE_LIMIT_S)[0].messages)
           for names in (first, second)}
    facts("v1 retry topic shared by group a_b (topic c) and group a (topic b_c): keys each group pops back", got)
    assert got == {first.group: ["k1", "k2"], second.group: ["k1", "k2"]}


@pytest.mark.rules("IV-06")
def test_a_delayed_messages_copy_waits_for_its_delay_again(pop_backend, facts):
    names = p.fresh("delay")
    p.set_up(pop_backend, names)
    assert pop_backend.send(names.topic, 0, b"late", "k0", delay_level=DELAY_LEVEL) == 0
    first = p.pop_until(pop_backend, names, 10.0, p.INVISIBLE_MS)[0].messages[0]
    copy = p.pop_until(pop_backend, names, p.REVIVE_LIMIT_S + DELAY_S)[0].messages[0]
    stored = p.read_retry(pop_backend, names)
    lag = stored[0].store_timestamp - p.get_revive_time(first)
    facts(f"delay level {DELAY_LEVEL} ({DELAY_S} s): the copy's store time in the retry topic - the revive time, "
          "its DELAY property and reconsumeTimes", (lag, stored[0].properties.get("DELAY"), copy.reconsume_times))
    assert copy.key == "k0" and copy.reconsume_times == 1 and stored[0].properties.get("DELAY") == str(DELAY_LEVEL)
    assert p.REVIVE_LAG_MIN_MS + DELAY_S * 1000 <= lag <= p.REVIVE_LAG_MAX_MS + DELAY_S * 1000 + 1000
