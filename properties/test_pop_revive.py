"""Properties of spec/15-revive.md, rules IV-01 to IV-08: when and as what a popped message comes back."""

from __future__ import annotations

from hypothesis import find, given, settings
from hypothesis import strategies as st

from model.broker.delay_timer import process_schedule_until
from model.broker.pop.ack import AckRequest, on_ack
from model.broker.pop.config import PopConfig
from model.broker.pop.pop import PopRequest, on_pop
from model.broker.pop.revive import on_revive
from model.broker.pop.state import set_broker
from model.broker.store import put_message
from model.values.message import create_message
from model.values.pop_names import get_pop_retry_topic, parse_normal_topic
from model.values.records import evolve
from properties.coverage import record_rules
from properties.pop_brokers import new_pop_broker, produce, produce_many, stored_in
from properties.pop_strategies import GROUP, INVISIBLE, RANDOM_Q, RETRY_V1, REVIVE_MARGIN, TOPIC

NAMES = st.text(alphabet="ab_", min_size=1, max_size=4)


def pop(state, now, n=32, invisible=10_000, random_q=50):
    return on_pop(state, PopRequest(GROUP, TOPIC, -1, n, invisible), now, random_q)


@given(pop_time=st.integers(0, 10**6), invisible=st.integers(0, 120_000), wait=st.integers(0, 10_000))
def test_no_revive_before_the_margin(pop_time, invisible, wait):
    """IV-01: a run of the revive service stores the copy iff it runs more than 2 s after pop time + invisible
    time — never before the invisible time ends."""
    state, _ = pop(produce(new_pop_broker(), "m0"), pop_time, n=1, invisible=invisible)
    now = pop_time + invisible + wait
    state, revived = on_revive(state, now)
    record_rules(revived.rules)
    assert [m.uniq_key for m in revived.stored] == (["m0"] if wait > REVIVE_MARGIN else [])
    assert all(m.store_timestamp >= pop_time + invisible for m in revived.stored)


@given(n=st.integers(1, 6), acked=st.sets(st.integers(0, 5)), invisible=INVISIBLE)
def test_revive_copies_exactly_the_unacked_offsets(n, acked, invisible):
    """IV-02: the copies are those of the unacked offsets, once: a second run stores nothing."""
    state, answer = pop(produce_many(new_pop_broker(), n), 1_000, invisible=invisible)
    for handle in answer.handles:
        if handle.offset in acked:
            state, _ = on_ack(state, AckRequest(GROUP, TOPIC, 0, handle.offset, handle), 2_000)
    due = 1_000 + invisible + REVIVE_MARGIN + 1
    state, revived = on_revive(state, due)
    state, again = on_revive(state, due + 60_000)
    record_rules(revived.rules)
    assert sorted(m.uniq_key for m in revived.stored) == sorted(f"m{i}" for i in range(n) if i not in acked)
    assert again.stored == ()


@given(v2=st.booleans(), random_q=RANDOM_Q, rounds=st.integers(1, 3))
def test_retry_topic_names(v2, random_q, rounds):
    """IV-03: copies of T go to %RETRY%G_T (v1) or %RETRY%G+T (v2); a copy of a copy goes to the same retry
    topic."""
    state = produce(new_pop_broker(pop_config=PopConfig(enable_retry_topic_v2=v2,
                                                        retrieve_message_from_pop_retry_topic_v1=False)), "m0")
    now, topics = 1_000, []
    for _ in range(rounds):
        state, answer = pop(state, now, random_q=random_q)
        now += 10_000 + REVIVE_MARGIN + 1
        state, revived = on_revive(state, now)
        record_rules(revived.rules)
        topics += [m.topic for m in revived.stored]
    assert topics == ["%RETRY%G+T" if v2 else "%RETRY%G_T"] * rounds
    assert get_pop_retry_topic(TOPIC, GROUP, v2) == topics[0]


def read_at(group: str, topic: str, index: int) -> tuple[str, str] | None:
    """Another (group, topic) reading of the v1 name's tail `group_topic`: split at its index-th '_' instead."""
    tail = f"{group}_{topic}"
    positions = [i for i, c in enumerate(tail) if c == "_"]
    if index >= len(positions):
        return None
    return tail[:positions[index]], tail[positions[index] + 1:]


def is_collision(case) -> bool:
    group, topic, index = case
    other = read_at(group, topic, index)
    return (other is not None and other != (group, topic) and all(other)
            and get_pop_retry_topic(other[1], other[0], False) == get_pop_retry_topic(topic, group, False))


def test_v1_retry_topic_names_collide():
    """IV-04, refuting "each group and topic has its own retry topic": Hypothesis finds a (group, topic) whose v1
    retry topic, split at another '_', is the retry topic of another valid (group, topic); parseNormalTopic reads
    a different topic for each."""
    group, topic, index = find(st.tuples(NAMES, NAMES, st.integers(0, 4)), is_collision,
                               settings=settings(database=None, max_examples=2000))
    other_group, other_topic = read_at(group, topic, index)
    name = get_pop_retry_topic(topic, group, False)
    assert name == get_pop_retry_topic(other_topic, other_group, False) and (group, topic) != (other_group, other_topic)
    assert parse_normal_topic(name, group) == topic and parse_normal_topic(name, other_group) == other_topic


@given(pair_a=st.tuples(NAMES, NAMES), pair_b=st.tuples(NAMES, NAMES))
def test_v2_retry_topic_names_are_unique(pair_a, pair_b):
    """IV-04: with '+' (never in a group or topic name) the v2 names of two pairs are equal only for one pair."""
    same = get_pop_retry_topic(pair_a[1], pair_a[0], True) == get_pop_retry_topic(pair_b[1], pair_b[0], True)
    assert same == (pair_a == pair_b)
    assert parse_normal_topic(get_pop_retry_topic(pair_a[1], pair_a[0], True), pair_a[0]) == pair_a[1]
    record_rules(["IV-04"])


@given(body=st.binary(max_size=8), tag=st.sampled_from(["a", None]), flag=st.integers(0, 3),
       born=st.integers(0, 10**6), extra=st.dictionaries(st.sampled_from(["k1", "k2"]), st.text("xyz", max_size=3)))
def test_revived_copy_carries_the_message(body, tag, flag, born, extra):
    """IV-05: a copy keeps body, tags, flag, born time and every property, counts reconsumeTimes + 1, gains
    1ST_POP_TIME once (the first pop's time, kept by later copies), and no RETRY_TOPIC or ORIGIN_MESSAGE_ID."""
    state = new_pop_broker()
    message = create_message(TOPIC, "m0", body=body, tags=tag, born_timestamp=born)._replace(flag=flag)
    for key, value in extra.items():
        message = message.put_property(key, value)
    store, original = put_message(state.broker.store, message, 0, state.config.delay_levels)
    state, copies, now = set_broker(state, evolve(state.broker, store=store)), [], 1_000
    for _ in range(2):
        state, _ = pop(state, now)
        now += 10_000 + REVIVE_MARGIN + 1
        state, revived = on_revive(state, now)
        record_rules(revived.rules)
        copies += revived.stored
    for times, copy in enumerate(copies, start=1):
        assert (copy.topic, copy.queue_id, copy.body, copy.tags, copy.flag, copy.born_timestamp) == (
            RETRY_V1, 0, body, tag, flag, born)
        assert copy.reconsume_times == times and copy.msg_id != original.msg_id
        assert dict(copy.properties) == {**dict(original.properties), "1ST_POP_TIME": "1000"}


@given(level=st.integers(1, 18), invisible=INVISIBLE)
def test_delayed_message_is_parked_again_on_revive(level, invisible):
    """IV-06: the copy of a message produced with a delay level is parked in SCHEDULE_TOPIC_XXXX at that level,
    bound for the retry topic."""
    state = new_pop_broker()
    store, _ = put_message(state.broker.store, create_message(TOPIC, "m0", delay_level=level), 0,
                           state.config.delay_levels)
    broker, _ = process_schedule_until(evolve(state.broker, store=store), state.config, 10**8)
    state, answer = pop(set_broker(state, broker), 10**8, invisible=invisible)
    assert [m.uniq_key for m in answer.messages] == ["m0"]
    state, revived = on_revive(state, 10**8 + invisible + REVIVE_MARGIN + 1)
    record_rules(revived.rules)
    (parked,) = revived.stored
    assert (parked.topic, parked.get_property("REAL_TOPIC"), parked.delay_time_level) == (
        "SCHEDULE_TOPIC_XXXX", RETRY_V1, level)
    assert stored_in(state, RETRY_V1) == []
    record_rules(["IV-06"])


@given(rounds=st.integers(1, 3))
def test_retry_topic_created_once_with_offset_zero(rounds):
    """IV-07: the first revive creates %RETRY%G_T with one queue, read-write, and the group's offset on it at 0;
    later revives keep that topic."""
    state, now = produce(new_pop_broker(), "m0"), 1_000
    assert RETRY_V1 not in state.broker.topics
    for _ in range(rounds):
        state, _ = pop(state, now, random_q=99)
        now += 10_000 + REVIVE_MARGIN + 1
        state, revived = on_revive(state, now)
        record_rules(revived.rules)
        config = state.broker.topics[RETRY_V1]
        assert (config.read_queue_nums, config.write_queue_nums, config.perm) == (1, 1, 6)
    assert len(stored_in(state, RETRY_V1)) == rounds


@given(retry_max_times=st.integers(0, 3), rounds=st.integers(1, 8), invisible=INVISIBLE)
def test_broker_pop_path_never_dead_letters(retry_max_times, rounds, invisible):
    """IV-08: a message popped and never acked is revived every time with reconsumeTimes one higher, whatever
    retryMaxTimes says; no %DLQ% copy and no other delay appear."""
    state, now, seen = produce(new_pop_broker(retry_max_times=retry_max_times), "m0"), 1_000, []
    for _ in range(rounds):
        state, answer = pop(state, now, invisible=invisible)
        seen += [m.reconsume_times for m in answer.messages]
        now += invisible + REVIVE_MARGIN + 1
        state, revived = on_revive(state, now)
        record_rules(revived.rules)
        assert [m.store_timestamp for m in revived.stored] == [now]
    assert seen == list(range(rounds))
    assert not any(topic.startswith("%DLQ%") for topic in state.broker.topics)
