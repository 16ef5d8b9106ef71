"""The edges of spec/14-pop.md's PO-07 to PO-11 drawn on purpose: refused acks and changes, an ack after the revive
replayed by a crash, the handle a change answers, and the exact revive-time distances at which one revive scan
merges two checkpoints of one key or an ack with a checkpoint. The drawn properties of test_pop_broker.py reach
these distances only by chance.

Every expectation is worked out by hand from RocketMQ 5.3.3 as chapter 15 reads the revive scan (IV-01): a
checkpoint enters its revive queue at its revive time - 1 s
([ChangeInvisibleTimeProcessor L327](https://github.com/apache/rocketmq/blob/rocketmq-all-5.3.3/broker/src/main/java/org/apache/rocketmq/broker/processor/ChangeInvisibleTimeProcessor.java#L327),
[PopMessageProcessor L930](https://github.com/apache/rocketmq/blob/rocketmq-all-5.3.3/broker/src/main/java/org/apache/rocketmq/broker/processor/PopMessageProcessor.java#L930)),
an ack at its handle's pop time + invisible time
([AckMessageProcessor L292](https://github.com/apache/rocketmq/blob/rocketmq-all-5.3.3/broker/src/main/java/org/apache/rocketmq/broker/processor/AckMessageProcessor.java#L292),
[ChangeInvisibleTimeProcessor L284](https://github.com/apache/rocketmq/blob/rocketmq-all-5.3.3/broker/src/main/java/org/apache/rocketmq/broker/processor/ChangeInvisibleTimeProcessor.java#L284));
the scan keeps the last checkpoint it read per key and marks an ack in the one its key holds then
([PopReviveService L358-L398](https://github.com/apache/rocketmq/blob/rocketmq-all-5.3.3/broker/src/main/java/org/apache/rocketmq/broker/processor/PopReviveService.java#L358-L398)),
and revives a checkpoint only once it has read past 2 s after its revive time: `endTime - reviveTime <=
ackTimeInterval + SECOND` stops it
([L483](https://github.com/apache/rocketmq/blob/rocketmq-all-5.3.3/broker/src/main/java/org/apache/rocketmq/broker/processor/PopReviveService.java#L483)).
Entries due in the same millisecond come out of the timer in the order they were written
([TimerMessageStore L926-L960](https://github.com/apache/rocketmq/blob/rocketmq-all-5.3.3/store/src/main/java/org/apache/rocketmq/store/timer/TimerMessageStore.java#L926-L960)),
and a change writes its checkpoint before its ack of the origin
([ChangeInvisibleTimeProcessor L302-L351](https://github.com/apache/rocketmq/blob/rocketmq-all-5.3.3/broker/src/main/java/org/apache/rocketmq/broker/processor/ChangeInvisibleTimeProcessor.java#L302-L351)).
"""

from __future__ import annotations

import pytest

from model.broker.pop.ack import AckRequest, ChangeRequest, on_ack, on_change_invisible_time
from model.broker.pop.pop import PopRequest, on_pop
from model.broker.pop.restart import on_broker_restart, on_persist
from model.broker.pop.revive import on_revive
from properties.pop_brokers import new_pop_broker, produce_many
from properties.pop_strategies import GROUP, REVIVE_MARGIN, TOPIC


def pop(state, now, n=32, queue_id=0, invisible=10_000):
    return on_pop(state, PopRequest(GROUP, TOPIC, queue_id, n, invisible), now, 50)


def ack(state, handle, now, topic=TOPIC, queue_id=None, offset=None):
    queue_id = handle.queue_id if queue_id is None else queue_id
    offset = handle.offset if offset is None else offset
    return on_ack(state, AckRequest(GROUP, topic, queue_id, offset, handle), now)


def change(state, handle, invisible, now, topic=TOPIC, queue_id=None, offset=None):
    queue_id = handle.queue_id if queue_id is None else queue_id
    offset = handle.offset if offset is None else offset
    return on_change_invisible_time(state, ChangeRequest(GROUP, topic, queue_id, offset, handle, invisible), now)


def revived_keys(state, now) -> list[str]:
    state, answer = on_revive(state, now)
    return [m.uniq_key for m in answer.stored]


REFUSALS = [("TOPIC_NOT_EXIST", {"topic": "X"}), ("MESSAGE_ILLEGAL", {"queue_id": 1}),
            ("NO_MESSAGE", {"offset": 5})]


@pytest.mark.parametrize(("code", "request_fields"), REFUSALS)
def test_a_refused_ack_or_change_answers_its_code_and_leaves_the_checkpoint_to_revive(code, request_fields):
    """PO-07, PO-08: an ack or a change naming an unknown topic, a queue outside the read queues or an offset past
    the queue answers TOPIC_NOT_EXIST, MESSAGE_ILLEGAL or NO_MESSAGE and returns before it writes anything — no
    ack, no checkpoint
    ([AckMessageProcessor L125-L156](https://github.com/apache/rocketmq/blob/rocketmq-all-5.3.3/broker/src/main/java/org/apache/rocketmq/broker/processor/AckMessageProcessor.java#L125-L156),
    [ChangeInvisibleTimeProcessor L110-L136](https://github.com/apache/rocketmq/blob/rocketmq-all-5.3.3/broker/src/main/java/org/apache/rocketmq/broker/processor/ChangeInvisibleTimeProcessor.java#L110-L136));
    so neither reached the checkpoint, the change answers no new pop time or invisible time (the client builds a
    new handle only on SUCCESS,
    [MQClientAPIImpl L955-L965](https://github.com/apache/rocketmq/blob/rocketmq-all-5.3.3/client/src/main/java/org/apache/rocketmq/client/impl/MQClientAPIImpl.java#L955-L965)),
    and the message comes back at the pop's revive time."""
    state = produce_many(new_pop_broker(), 1)
    state, popped = pop(state, 1_000, n=1)
    handle = popped.handles[0]
    after_ack, acked = ack(state, handle, 2_000, **request_fields)
    after_change, changed = change(state, handle, 30_000, 2_000, **request_fields)
    assert (acked.code, acked.effective) == (code, False)
    assert (changed.code, changed.pop_time, changed.invisible_time, changed.was_pending) == (code, None, None, False)
    assert after_ack == state and after_change == state
    assert revived_keys(after_change, 11_000 + REVIVE_MARGIN + 1) == ["m0"]


def test_a_change_cites_po_09_exactly_when_its_handles_checkpoint_was_no_longer_pending():
    """PO-08, PO-09: a change with a fresh handle acks a pending checkpoint and cites PO-08 alone; the same handle
    again, its offset now acked by that change, still writes a checkpoint (the broker never looks at the old one,
    [ChangeInvisibleTimeProcessor L133-L178](https://github.com/apache/rocketmq/blob/rocketmq-all-5.3.3/broker/src/main/java/org/apache/rocketmq/broker/processor/ChangeInvisibleTimeProcessor.java#L133-L178))
    and cites PO-09: the message will come back once more."""
    state = produce_many(new_pop_broker(), 1)
    state, popped = pop(state, 1_000, n=1)
    state, first = change(state, popped.handles[0], 5_000, 2_000)
    state, second = change(state, popped.handles[0], 5_000, 3_000)
    assert (first.code, first.was_pending, first.rules) == ("SUCCESS", True, ("PO-08",))
    assert (second.code, second.was_pending, second.rules) == ("SUCCESS", False, ("PO-08", "PO-09"))


def test_an_ack_after_the_revive_is_read_again_with_its_checkpoint_after_a_crash():
    """PO-07, PO-10: an ack after its checkpoint was revived answers SUCCESS and stops nothing, but it is in the
    revive topic behind that checkpoint. A crash before the next persist makes the revive service read both again
    from its committed offset
    ([PopReviveService L307-L316](https://github.com/apache/rocketmq/blob/rocketmq-all-5.3.3/broker/src/main/java/org/apache/rocketmq/broker/processor/PopReviveService.java#L307-L316))
    and merge the ack into the checkpoint (L373-L398): of m0 and m1 popped together, with m1 acked late, only m0
    is revived a second time."""
    state = on_persist(produce_many(new_pop_broker(), 2))
    state, popped = pop(state, 1_000, n=2)
    revive_at = 11_000 + REVIVE_MARGIN + 1
    state, first = on_revive(state, revive_at)
    state, late = ack(state, popped.handles[1], revive_at + 1_000)
    assert [m.uniq_key for m in first.stored] == ["m0", "m1"]
    assert (late.code, late.effective) == ("SUCCESS", False)
    assert revived_keys(on_broker_restart(state, graceful=False), revive_at + 1_001) == ["m0"]


def test_an_ack_with_the_handle_a_same_millisecond_change_answered_finishes_the_new_checkpoint():
    """PO-08, PO-11: a change of the batch's first message in its pop's millisecond writes a checkpoint with the
    pop's key (start offset 0, pop time 1000); due 10 s after the pop's, it is read long after the pop's checkpoint
    was finished by the change's ack (at 11 s) and revived. The handle the client builds from the answer — the
    message's offset, the answer's pop time, invisible time and revive queue
    ([MQClientAPIImpl L955-L965](https://github.com/apache/rocketmq/blob/rocketmq-all-5.3.3/client/src/main/java/org/apache/rocketmq/client/impl/MQClientAPIImpl.java#L955-L965))
    — acks by that same key, due at 21 s, after the new checkpoint was read at 20 s: the ack finishes it and the
    message never comes back."""
    state = produce_many(new_pop_broker(), 1)
    state, popped = pop(state, 1_000, n=1)
    handle = popped.handles[0]
    state, changed = change(state, handle, 20_000, 1_000)
    new_handle = handle._replace(start_offset=handle.offset, pop_time=changed.pop_time,
                                 invisible_time=changed.invisible_time, revive_queue_id=changed.revive_queue_id)
    state, acked = ack(state, new_handle, 2_000)
    assert (changed.code, changed.rules, acked.code, acked.effective) == ("SUCCESS", ("PO-08",), "SUCCESS", True)
    assert revived_keys(state, 21_000 + REVIVE_MARGIN + 1) == []


# The invisible time X of a change of m0 in the millisecond of its pop (m0 and m1, 10 s), and what is revived. The
# pop's checkpoint is read at 10 s, the change's at X, the change's ack of the origin is due at 11 s.
SAME_KEY = [
    # X = 7 s: the change's checkpoint (due 8 s) can be revived only past 10 s; the pop's, read at 10 s, replaces
    # it; the ack at 11 s marks m0 there: m0 is lost, m1 comes back.
    (7_000, ["m1"]),
    # X = 10 s: both read at 10 s, the change's written later: it replaces the pop's; the ack finishes it.
    (10_000, []),
    # X = 11 s: the change's checkpoint and its ack both due at 11 s, the checkpoint written first: finished.
    (11_000, []),
    # X = 11.001 s: the ack (11 s) marks the pop's checkpoint, which the change's replaces 1 ms later: m0 back.
    (11_001, ["m0"]),
    # X = 13 s: read at 13 s = the pop's revive time + 2 s, when the pop's cannot yet be revived: it replaces it.
    (13_000, ["m0"]),
]


@pytest.mark.parametrize(("invisible", "expected"), SAME_KEY)
def test_a_same_millisecond_change_at_the_edges_of_one_revive_scan(invisible, expected):
    """PO-11 at the exact distances where one revive scan still holds both checkpoints of the key: 3 s either way
    (the later one is read 1 s before its revive time, the earlier one is revived only past 2 s after its own), the
    change's checkpoint winning a tie, and the change's ack reaching it when due at most 1 s before it is read."""
    state = produce_many(new_pop_broker(), 2)
    state, popped = pop(state, 1_000, n=2)
    state, changed = change(state, popped.handles[0], invisible, 1_000)
    assert changed.code == "SUCCESS" and "PO-11" in changed.rules
    assert revived_keys(state, 1_000 + max(invisible, 10_000) + REVIVE_MARGIN + 1) == expected


@pytest.mark.parametrize(("invisible", "expected"), [(8_000, []), (11_000, []), (11_001, ["m0"])])
def test_an_acked_messages_same_millisecond_change_is_finished_by_an_ack_due_within_its_scan(invisible, expected):
    """PO-09, PO-11: m0 acked, then changed with the same handle in its pop's millisecond (a checkpoint with the
    pop's key, due at 1 s + X). The change's ack of the origin is due at 11 s. X = 8 s: due 2 s after the new
    checkpoint's revive time, it is read before any scan may revive that checkpoint (`<=` at L483), and it finishes
    whichever checkpoint of the key the scan then holds (the new one, or the pop's own read at 10 s): nothing comes
    back. X = 11 s: due in the millisecond the new checkpoint is read, written after it: nothing comes back.
    X = 11.001 s: read before it: m0 comes back."""
    state = produce_many(new_pop_broker(), 1)
    state, popped = pop(state, 1_000, n=1)
    state, _ = ack(state, popped.handles[0], 1_000)
    state, changed = change(state, popped.handles[0], invisible, 1_000)
    assert (changed.code, changed.was_pending) == ("SUCCESS", not expected)
    assert revived_keys(state, 1_000 + max(invisible, 10_000) + REVIVE_MARGIN + 1) == expected


def test_a_checkpoint_replaced_by_a_later_one_holds_back_no_other_checkpoints_revive():
    """IV-01, PO-11: queue 0's pop checkpoint (due 11 s) is replaced in the same millisecond by a change to 12 s
    (due 13 s); queue 1's pop checkpoint is due 11.5 s. The scan sorts what it holds and revives every checkpoint
    more than 2 s past its revive time up to the first that is not (L470-L525): at 13.501 s queue 1's message comes
    back, queue 0's only past 15 s."""
    state = produce_many(new_pop_broker(queues=2), 2, 2)
    state, first = pop(state, 1_000, n=1, queue_id=0)
    state, _ = pop(state, 1_000, n=1, queue_id=1, invisible=10_500)
    state, changed = change(state, first.handles[0], 12_000, 1_000)
    state, early = on_revive(state, 13_501)
    state, late = on_revive(state, 15_001)
    assert "PO-11" in changed.rules
    assert ([m.uniq_key for m in early.stored], [m.uniq_key for m in late.stored]) == (["m1"], ["m0"])
