"""Properties of spec/14-pop.md, rules PO-01 to PO-10: POP_MESSAGE, ACK_MESSAGE, CHANGE_MESSAGE_INVISIBLETIME and a
broker restart, driven through the broker's POP functions (a remoting client's view)."""

from __future__ import annotations

import immutables
import pytest
from hypothesis import Phase, assume, find, given, settings
from hypothesis import strategies as st

from model.broker.pop.ack import AckRequest, ChangeRequest, on_ack, on_change_invisible_time
from model.broker.pop.pop import PopRequest, on_pop
from model.broker.pop.restart import on_broker_restart, on_persist
from model.broker.pop.revive import on_revive
from model.broker.pop.state import PopGroupConfig, create_pop_broker, set_broker
from model.values.config import Config
from model.values.errors import ConfigError
from model.values.pop_wire import decode_handle
from model.values.records import evolve
from properties.coverage import record_rules
from properties.pop_brokers import new_pop_broker, produce, produce_many
from properties.pop_strategies import GROUP, INVISIBLE, RANDOM_Q, RETRY_V1, REVIVE_MARGIN, TOPIC


def pop(state, now, n=32, queue_id=0, invisible=10_000, random_q=50, **more):
    return on_pop(state, PopRequest(GROUP, TOPIC, queue_id, n, invisible, **more), now, random_q)


def ack(state, handle, now, topic=TOPIC):
    return on_ack(state, AckRequest(GROUP, topic, handle.queue_id, handle.offset, handle), now)


def change(state, handle, invisible, now, topic=TOPIC):
    return on_change_invisible_time(state, ChangeRequest(GROUP, topic, handle.queue_id, handle.offset, handle,
                                                         invisible), now)


@given(readable=st.booleans(), n=st.integers(1, 40), topic=st.sampled_from([TOPIC, "X"]), queue_id=st.integers(-1, 3),
       group=st.sampled_from([GROUP, "OTHER"]), consume_enable=st.booleans())
def test_pop_refusals_come_first_and_change_nothing(readable, n, topic, queue_id, group, consume_enable):
    """PO-01: the refusals in PopMessageProcessor's order; a refused pop leaves the broker as it was."""
    state = produce_many(new_pop_broker(queues=2, group_config=PopGroupConfig(consume_enable=consume_enable)), 3, 2)
    if not readable:
        state = set_broker(state, evolve(state.broker, perm=2))
    expected = ("NO_PERMISSION" if not readable else "INVALID_PARAMETER" if n > 32
                else "TOPIC_NOT_EXIST" if topic != TOPIC else "INVALID_PARAMETER" if queue_id >= 2
                else "SUBSCRIPTION_GROUP_NOT_EXIST" if group != GROUP else "NO_PERMISSION" if not consume_enable
                else None)
    after, answer = on_pop(state, PopRequest(group, topic, queue_id, n, 10_000), 1_000, 50)
    record_rules(answer.rules)
    if expected is None:
        assert answer.code == "SUCCESS"
    else:
        assert (answer.code, answer.messages, after) == (expected, (), state)


@given(random_q=RANDOM_Q, topic_has_messages=st.booleans(), order=st.booleans())
def test_retry_topic_is_read_first_only_on_a_low_draw(random_q, topic_has_messages, order):
    """PO-02: with both topics holding messages, a pop of one reads the retry topic iff randomQ < 20; with the
    topic empty it reads the retry topic anyway; an orderly pop never reads it."""
    state = produce(new_pop_broker(), "old")
    state, _ = pop(state, 1_000, n=1)
    state, revived = on_revive(state, 1_000 + 10_000 + REVIVE_MARGIN + 1)
    assert [m.topic for m in revived.stored] == [RETRY_V1]
    if topic_has_messages:
        state = produce(state, "new", now=20_000)
    state, answer = pop(state, 20_000, n=1, random_q=random_q, order=order)
    record_rules(answer.rules)
    from_retry = [m.uniq_key for m in answer.messages] == ["old"]
    assert from_retry == (not order and (random_q < 20 or not topic_has_messages))


@given(n=st.integers(0, 12), batches=st.lists(st.integers(1, 5), min_size=1, max_size=6))
def test_pop_moves_the_offset_past_what_it_read(n, batches):
    """PO-03: successive pops read the queue in order from the committed offset, which moves past each batch at
    once — no ack needed, and nothing is popped twice before its invisible time."""
    state, now, seen = produce_many(new_pop_broker(), n), 1_000, []
    for size in batches:
        state, answer = pop(state, now, n=size)
        record_rules(answer.rules)
        offsets = [m.queue_offset for m in answer.messages]
        assert offsets == list(range(len(seen), min(len(seen) + size, n)))
        seen += offsets
        assert state.broker.consumer_offsets[(GROUP, TOPIC, 0)] == len(seen)
        now += 100


@given(n=st.integers(1, 12), queues=st.integers(1, 4), size=st.integers(1, 32), invisible=INVISIBLE,
       random_q=st.integers(20, 99))
def test_every_pop_that_found_messages_stores_one_checkpoint(n, queues, size, invisible, random_q):
    """PO-04: one checkpoint per queue that answered, with exactly that queue's popped offsets, the pop time and the
    revive time pop time + invisible time."""
    state = produce_many(new_pop_broker(queues=queues), n, queues)
    state, answer = pop(state, 5_000, n=size, queue_id=-1, invisible=invisible, random_q=random_q)
    record_rules(answer.rules)
    by_queue = {}
    for message in answer.messages:
        by_queue.setdefault(message.queue_id, []).append(message.queue_offset)
    checkpoints = {ck.queue_id: ck for ck in state.pop.checkpoints.values()}
    assert len(state.pop.checkpoints) == len(by_queue)
    for queue_id, offsets in by_queue.items():
        ck = checkpoints[queue_id]
        assert (ck.offsets, ck.start_offset, ck.pop_time, ck.revive_time) == (
            tuple(offsets), offsets[0], 5_000, 5_000 + invisible)


@given(tags=st.lists(st.sampled_from(["a", "b", None]), min_size=1, max_size=10), size=st.integers(1, 4))
def test_tag_filtered_messages_move_the_offset_without_a_checkpoint(tags, size):
    """PO-05: a pop subscribed to tag a returns only tag-a messages; the others below the new offset are passed
    over — never returned by a later pop of the group — and no checkpoint covers them."""
    state = new_pop_broker()
    for i, tag in enumerate(tags):
        state = produce(state, f"m{i}", tag=tag)
    returned, skipped, now = [], [], 1_000
    for _ in range(len(tags)):
        state, answer = pop(state, now, n=size, tags=frozenset({"a"}))
        record_rules(answer.rules)
        returned += [m.uniq_key for m in answer.messages]
        skipped += [m.uniq_key for m in answer.skipped]
        now += 10
    assert returned == [f"m{i}" for i, tag in enumerate(tags) if tag == "a"]
    assert sorted(skipped) == sorted(f"m{i}" for i, tag in enumerate(tags) if tag != "a")
    covered = {offset for ck in state.pop.checkpoints.values() for offset in ck.offsets}
    assert covered == {i for i, tag in enumerate(tags) if tag == "a"}


@given(n=st.integers(1, 6), random_q=RANDOM_Q, commit_log_offset=st.integers(-1, 10**6))
def test_handle_round_trips_and_names_the_checkpoint(n, random_q, commit_log_offset):
    """PO-06: POP_CK decodes to the handle; the handle's start offset and pop time name a stored checkpoint holding
    its offset; a retry copy is answered under T with retry flag 1."""
    state = produce_many(new_pop_broker(), n)
    state, first = pop(state, 1_000, n=1)
    state, _ = on_revive(state, 1_000 + 10_000 + REVIVE_MARGIN + 1)
    state, answer = pop(state, 20_000, n=n, random_q=random_q)
    record_rules(answer.rules)
    for message, handle in zip(answer.messages, answer.handles, strict=True):
        assert decode_handle(message.get_property("POP_CK"), handle.commit_log_offset) == handle
        assert decode_handle(handle.encode(), commit_log_offset) == handle._replace(commit_log_offset=commit_log_offset)
        topic = RETRY_V1 if handle.retry_flag == "1" else TOPIC
        ck = state.pop.checkpoints[(topic, GROUP, handle.queue_id, handle.start_offset, handle.pop_time)]
        assert handle.offset in ck.offsets and message.topic == TOPIC
        assert (handle.retry_flag == "1") == (message.uniq_key == "m0" and message.reconsume_times == 1)


@given(n=st.integers(0, 5), offset=st.integers(-2, 8), queue_id=st.integers(-1, 2))
def test_ack_answers_success_for_any_offset_in_range(n, offset, queue_id):
    """PO-07: an ack is SUCCESS for any offset in [0, max] — the max itself included — whatever its handle names; a
    change refuses the max too (PO-08); both refuse a queue outside the topic first."""
    state = produce_many(new_pop_broker(), n)
    state, answer = pop(state, 1_000, n=1)
    handle = answer.handles[0] if answer.handles else decode_handle("0 1000 10000 0 0 broker-a 0 0")
    handle = handle._replace(queue_id=queue_id, offset=offset)
    _, acked = ack(state, handle, 2_000)
    _, changed = change(state, handle, 5_000, 2_000)
    record_rules(acked.rules + changed.rules)
    if queue_id != 0:
        assert (acked.code, changed.code) == ("MESSAGE_ILLEGAL", "MESSAGE_ILLEGAL")
    else:
        assert acked.code == ("SUCCESS" if 0 <= offset <= n else "NO_MESSAGE")
        assert changed.code == ("SUCCESS" if 0 <= offset < n else "NO_MESSAGE")


@given(invisible=INVISIBLE, late=st.integers(1, 60_000))
def test_ack_after_revive_changes_nothing(invisible, late):
    """PO-07: after the revive an ack still answers SUCCESS, is not effective, and the copy is delivered."""
    state = produce(new_pop_broker(), "m0")
    state, answer = pop(state, 1_000, n=1, invisible=invisible)
    revive_at = 1_000 + invisible + REVIVE_MARGIN + 1
    state, revived = on_revive(state, revive_at)
    before = state.pop.checkpoints
    state, acked = ack(state, answer.handles[0], revive_at + late)
    record_rules(acked.rules)
    assert (acked.code, acked.effective, state.pop.checkpoints) == ("SUCCESS", False, before)
    state, again = pop(state, revive_at + late, n=1)
    assert [(m.uniq_key, m.reconsume_times) for m in again.messages] == [("m0", 1)]


@given(n=st.integers(1, 4), index=st.integers(0, 3), invisible=st.integers(0, 60_000), at=st.integers(1, 9_000))
def test_change_writes_a_new_checkpoint_and_acks_the_old(n, index, invisible, at):
    """PO-08: a change (before the revive, at least 1 ms after the pop: PO-11) writes a one-offset checkpoint at now
    with the new invisible time and acks the old; the message then comes back once, after the new time, with
    reconsumeTimes 1 — a change is not an attempt."""
    assume(index < n)
    state = produce_many(new_pop_broker(), n)
    state, answer = pop(state, 1_000, n=n)
    handle = answer.handles[index]
    now = 1_000 + at
    state, changed = change(state, handle, invisible, now)
    record_rules(changed.rules)
    assert (changed.code, changed.pop_time, changed.invisible_time, changed.was_pending) == (
        "SUCCESS", now, invisible, True)
    ck = state.pop.checkpoints[(TOPIC, GROUP, 0, handle.offset, now)]
    assert (ck.offsets, ck.revive_time) == ((handle.offset,), now + invisible)
    old = state.pop.checkpoints.get((TOPIC, GROUP, 0, 0, 1_000))
    assert old is None if n == 1 else old.acked == 1 << index
    state, _ = on_revive(state, max(now + invisible, 11_000) + REVIVE_MARGIN + 1)
    copies = [m for m in state.broker.store.get_messages() if m.topic == RETRY_V1 and m.uniq_key == f"m{index}"]
    assert [m.reconsume_times for m in copies] == [1]


@given(first=st.sampled_from(["ack", "revive"]), invisible=st.integers(0, 30_000))
def test_change_with_a_stale_handle_brings_the_message_back(first, invisible):
    """PO-09: after an ack, or after its revive, a change with the same handle is still SUCCESS and adds a
    checkpoint: the message is revived (again)."""
    state = produce(new_pop_broker(), "m0")
    state, answer = pop(state, 1_000, n=1)
    handle, now = answer.handles[0], 2_000
    if first == "ack":
        state, _ = ack(state, handle, now)
    else:
        now = 1_000 + 10_000 + REVIVE_MARGIN + 1
        state, _ = on_revive(state, now)
    state, changed = change(state, handle, invisible, now)
    record_rules(changed.rules)
    assert (changed.code, changed.was_pending) == ("SUCCESS", False)
    state, _ = on_revive(state, now + invisible + REVIVE_MARGIN + 1)
    copies = [m.reconsume_times for m in state.broker.store.get_messages() if m.topic == RETRY_V1]
    assert copies == ([1] if first == "ack" else [1, 1])


def follow_one_message(steps) -> tuple[bool, bool]:
    """A remoting client pops one message and sends `steps` with its first handle ("ack", "change", "wait"); then
    time passes. Returns (acked, delivered again)."""
    state, now = produce(new_pop_broker(), "m0"), 1_000
    state, answer = pop(state, now, n=1)
    handle, acked = answer.handles[0], False
    for step in steps:
        now += 1_000
        if step == "ack":
            state, answer = ack(state, handle, now)
            acked = acked or answer.effective
        elif step == "change":
            state, _ = change(state, handle, 1_000, now)
        else:
            now += 12_000
            state, _ = on_revive(state, now)
    state, _ = on_revive(state, now + 60_000)
    state, again = pop(state, now + 60_000, n=1)
    return acked, bool(again.messages)


def test_acked_message_never_returns_is_refuted():
    """PO-09, refuting the folklore "an acked message is never delivered again": Hypothesis finds the smallest
    history — ack, then a change with the same handle — after which it is delivered again."""
    steps = find(st.lists(st.sampled_from(["ack", "change", "wait"]), max_size=4),
                 lambda steps: all(follow_one_message(steps)),
                 settings=settings(database=None, max_examples=500, phases=tuple(Phase)))
    assert steps == ["ack", "change"]


@given(n=st.integers(1, 8), before=st.integers(0, 4), after=st.integers(1, 4), graceful=st.booleans())
def test_a_crash_pops_again_what_was_popped_since_the_persist(n, before, after, graceful):
    """PO-10: a crash brings the offset back to the last persist, so the messages popped since are popped again at
    once; a graceful restart pops nothing twice."""
    state = produce_many(new_pop_broker(), n)
    state, first = pop(state, 1_000, n=before) if before else (state, None)
    state = on_persist(state)
    persisted = state.broker.consumer_offsets.get((GROUP, TOPIC, 0), 0)
    state, second = pop(state, 2_000, n=after)
    state = on_broker_restart(state, graceful=graceful)
    state, again = pop(state, 3_000, n=32)
    record_rules(("PO-10",))
    since = [m.queue_offset for m in second.messages]
    expected_first = persisted if not graceful else persisted + len(since)
    assert [m.queue_offset for m in again.messages] == list(range(expected_first, n))
    assert state.pop.revived == immutables.Map()


@given(invisible=INVISIBLE, random_q=RANDOM_Q)
def test_a_crash_revives_again_what_was_revived_since_the_persist(invisible, random_q):
    """PO-10: a checkpoint revived after the last persist is revived once more after a crash (its acked offsets
    excepted)."""
    state = on_persist(produce_many(new_pop_broker(), 2))
    state, answer = pop(state, 1_000, n=2, invisible=invisible, random_q=random_q)
    state, _ = ack(state, answer.handles[0], 1_500)
    due = 1_000 + invisible + REVIVE_MARGIN + 1
    state, first = on_revive(state, due)
    state, second = on_revive(on_broker_restart(state, graceful=False), due + 1)
    record_rules(first.rules + second.rules)
    assert [m.uniq_key for m in first.stored] == [m.uniq_key for m in second.stored] == ["m1"]


@given(invisible=INVISIBLE)
def test_a_crash_does_not_revive_again_what_was_revived_before_the_persist(invisible):
    """PO-10: the persist writes the revive offset past a checkpoint revived before it, so a crash after the
    persist revives nothing of it again (only what was revived since the persist comes back)."""
    state = produce(new_pop_broker(), "m0")
    state, _ = pop(state, 1_000, n=1, invisible=invisible)
    due = 1_000 + invisible + REVIVE_MARGIN + 1
    state, first = on_revive(state, due)
    state = on_broker_restart(on_persist(state), graceful=False)
    state, again = on_revive(state, due + 1)
    record_rules(first.rules + again.rules)
    assert [m.uniq_key for m in first.stored] == ["m0"] and again.stored == ()


def test_a_crash_keeps_the_persisted_order_info():
    """PO-10, FF-01: the persist writes the order info too (consumerOrderInfo.json), so after a crash the queue an
    orderly pop left unacked is still blocked for another attempt until its invisible time ends."""
    state = produce_many(new_pop_broker(), 2)
    state, first = pop(state, 1_000, n=1, order=True, attempt_id="A")
    state = on_broker_restart(on_persist(state), graceful=False)
    _, blocked = pop(state, 2_000, n=1, order=True, attempt_id="B")
    _, visible = pop(state, 11_000, n=1, order=True, attempt_id="B")
    assert [m.queue_offset for m in first.messages] == [0]
    assert (blocked.messages, [m.queue_offset for m in visible.messages]) == ((), [0])


def test_a_4x_profile_has_no_pop_broker():
    """A 5.x broker of a profile without server-side retry is a ConfigError naming the setting, the value and
    what is allowed."""
    with pytest.raises(ConfigError) as error:
        create_pop_broker(Config(profile="4.9.8"), GROUP, {TOPIC: 1})
    assert (error.value.field, error.value.value) == ("profile", "4.9.8")
    assert str(error.value) == ("profile='4.9.8' is not allowed: expected a profile with server-side retry"
                                " (5.0.0 or later)")


@given(invisible=INVISIBLE, late=st.integers(1, 60_000))
def test_a_second_crash_does_not_revive_what_was_acked_after_the_first(invisible, late):
    """PO-10: a crash brings back a checkpoint revived since the persist; once its message is acked, a second crash
    before any persist brings back nothing: the revive topic, read again from the same persisted offset, holds that
    ack too (PopReviveService merges the acks it reads with their checkpoint)."""
    state = on_persist(produce(new_pop_broker(), "m0"))
    state, answer = pop(state, 1_000, n=1, invisible=invisible)
    due = 1_000 + invisible + REVIVE_MARGIN + 1
    state, first = on_revive(state, due)
    state, acked = ack(on_broker_restart(state, graceful=False), answer.handles[0], due + late)
    state, again = on_revive(on_broker_restart(state, graceful=False), due + late + invisible + 60_000)
    record_rules(first.rules + acked.rules + again.rules)
    assert [m.uniq_key for m in first.stored] == ["m0"] and again.stored == ()


@given(invisible=st.integers(0, 60_000), changed=st.integers(0, 60_000))
def test_an_ack_reaches_only_a_checkpoint_it_meets_in_a_revive_scan(invisible, changed):
    """PO-09 and PO-11: after an ack, a change with the same handle in the pop's millisecond writes a checkpoint with
    the pop's key; the change's ack of the origin, read at the origin's revive time, finishes it only when it is
    read from 1 s before to 2 s after the new checkpoint's own revive time — else the acked message comes back. (Due
    2 to 3 s before the origin, the model is not asked: there the finished origin itself would replace it.)"""
    assume(not -3_000 <= changed - invisible < -2_000)
    state = produce(new_pop_broker(), "m0")
    state, answer = pop(state, 1_000, n=1, invisible=invisible)
    state, _ = ack(state, answer.handles[0], 1_000)
    state, changed_answer = change(state, answer.handles[0], changed, 1_000)
    record_rules(changed_answer.rules)
    state, revived = on_revive(state, 1_000 + max(invisible, changed) + REVIVE_MARGIN + 1)
    met = -2_000 <= changed - invisible <= 1_000
    assert [m.uniq_key for m in revived.stored] == ([] if met else ["m0"])


@given(n=st.integers(1, 4), invisible=st.integers(0, 60_000))
def test_change_in_the_pop_millisecond_loses_what_one_revive_scan_merges(n, invisible):
    """PO-11: a change of the batch's first message (invisible time 10 s) in the millisecond of its pop makes a
    checkpoint with the pop's own key. One revive scan reads both when their revive times lie within 3 s: the
    later-due one replaces the other, and the change's ack of the origin finishes the survivor when it is read after
    it (the change due at most 1 s later) — nothing is revived —, else it lands on the replaced one and only m0
    comes back; a change due earlier is itself replaced: m0 is lost. Further apart, both are revived on their own."""
    state = produce_many(new_pop_broker(), n)
    state, answer = pop(state, 1_000, n=n)
    state, changed = change(state, answer.handles[0], invisible, 1_000)
    record_rules(changed.rules)
    state, revived = on_revive(state, 1_000 + max(invisible, 10_000) + REVIVE_MARGIN + 1)
    batch = {f"m{i}" for i in range(n)}
    if 10_000 <= invisible <= 11_000:
        expected = set()
    elif 11_000 < invisible <= 13_000:
        expected = {"m0"}
    elif 7_000 <= invisible < 10_000:
        expected = batch - {"m0"}
    else:
        expected = batch
    assert changed.code == "SUCCESS" and ("PO-11" in changed.rules) == (7_000 <= invisible <= 13_000)
    assert {m.uniq_key for m in revived.stored} == expected and len(revived.stored) == len(expected)
    assert state.pop.checkpoints == immutables.Map()
