"""Properties of spec/05-process-queue.md: the model against a naive oracle written from the reference's §2."""

from __future__ import annotations

import pytest
from hypothesis import event, find, given
from hypothesis import strategies as st
from hypothesis.stateful import RuleBasedStateMachine, invariant, precondition, rule
from immutables import Map

from model.client.process_queue import (
    commit,
    contains_message,
    create_process_queue,
    get_cached_msg_size_in_mib,
    get_expired_head_messages,
    get_max_span,
    is_lock_expired,
    is_pull_expired,
    make_message_to_consume_again,
    put_message,
    remove_message,
    rollback,
    take_messages,
)
from model.values.errors import IllegalTransition
from model.values.message import PROPERTY_CONSUME_START_TIMESTAMP, Message
from properties.coverage import record_rules


def make_message(offset: int, body_size: int = 5, start: int | None = None) -> Message:
    properties = {} if start is None else {PROPERTY_CONSUME_START_TIMESTAMP: str(start)}
    return Message("TopicA", body=b"x" * body_size, queue_offset=offset, properties=Map(properties))


@pytest.mark.parametrize("put_order", [(3, 5), (5, 3)])
def test_emptying_the_tree_returns_the_offset_after_the_last_put_and_an_empty_one_minus_1(put_order):
    """[PQ-04] [PQ-02] removeMessage: the call that empties the tree returns queueOffsetMax + 1 (the last newly put
    offset, not the highest), a later call on the empty tree -1, and one that leaves messages the lowest left."""
    pq, _ = put_message(create_process_queue(), [make_message(o) for o in put_order])
    pq, lowest = remove_message(pq, [make_message(put_order[0])], 1)
    assert lowest == put_order[1]
    pq, emptied = remove_message(pq, [make_message(put_order[1])], 2)
    assert emptied == put_order[-1] + 1
    assert remove_message(pq, [make_message(0)], 3)[1] == -1


class NaiveProcessQueue:
    """ProcessQueue as the reference's §2 describes it, with dicts and sorting: slow, mutable, obvious."""

    def __init__(self) -> None:
        self.tree: dict[int, Message] = {}
        self.consuming_map: dict[int, Message] = {}
        self.count = self.size = self.offset_max = 0
        self.consuming = False

    def put(self, msgs: list[Message]) -> bool:
        for msg in msgs:
            if msg.queue_offset not in self.tree:
                self.count += 1
                self.size += len(msg.body)
                self.offset_max = msg.queue_offset
            self.tree[msg.queue_offset] = msg
        if self.tree and not self.consuming:
            self.consuming = True
            return True
        return False

    def remove(self, msgs: list[Message]) -> int:
        if not self.tree:
            return -1
        for msg in msgs:
            if self.tree.pop(msg.queue_offset, None) is not None:
                self.count -= 1
                self.size -= len(msg.body)  # PQ L205: the body of the message passed in
        if self.count == 0:
            self.size = 0
        return min(self.tree) if self.tree else self.offset_max + 1

    def take(self, n: int) -> list[Message]:
        taken = [self.tree.pop(offset) for offset in sorted(self.tree)[:n]]
        self.consuming_map.update((msg.queue_offset, msg) for msg in taken)
        if not taken:
            self.consuming = False
        return taken

    def commit(self) -> int:
        offset = max(self.consuming_map) + 1
        self.count -= len(self.consuming_map)
        self.size = 0 if self.count == 0 else self.size - sum(len(m.body) for m in self.consuming_map.values())
        self.consuming_map.clear()
        return offset

    def rollback(self) -> None:
        self.tree.update(self.consuming_map)
        self.consuming_map.clear()

    def consume_again(self, msgs: list[Message]) -> None:
        for msg in msgs:
            self.consuming_map.pop(msg.queue_offset, None)
            self.tree[msg.queue_offset] = msg


OFFSETS = st.integers(0, 40)
MESSAGES = st.builds(make_message, OFFSETS, st.integers(0, 300))


class ProcessQueueMachine(RuleBasedStateMachine):
    """The model and the naive oracle see the same events and must agree on every answer and every field."""

    def __init__(self) -> None:
        super().__init__()
        self.pq = create_process_queue()
        self.oracle = NaiveProcessQueue()

    def step(self, outcome, expected):
        """Keep the new queue, compare the answer, and check that the previous value was not mutated."""
        before, snapshot = self.pq, list(self.pq.msg_tree_map.items())
        self.pq = outcome.state
        record_rules(outcome.rules)
        assert outcome.value == expected
        assert list(before.msg_tree_map.items()) == snapshot

    @rule(msgs=st.lists(MESSAGES, max_size=8))
    def pull_batch(self, msgs):
        """PQ-01, PQ-02, PQ-03: batches in any order, with duplicates."""
        self.step(put_message(self.pq, msgs), self.oracle.put(msgs))

    @rule(data=st.data())
    def consume_done(self, data):
        """PQ-04: some cached messages (or unknown ones, or copies with another body) finish."""
        candidates = list(self.oracle.tree.values()) + [make_message(41)]
        msgs = data.draw(st.lists(st.sampled_from(candidates) | MESSAGES, max_size=5))
        event("PQ-04 empty on entry" if not self.oracle.tree else "PQ-04")
        self.step(remove_message(self.pq, msgs, now=7), self.oracle.remove(msgs))
        assert self.pq.last_consume_timestamp == 7

    @rule(n=st.integers(0, 6))
    def take(self, n):
        """PQ-06, PQ-03"""
        event("PQ-03")
        self.step(take_messages(self.pq, n), tuple(self.oracle.take(n)))

    @precondition(lambda self: self.oracle.consuming_map)
    @rule()
    def commit_taken(self):
        """PQ-07"""
        self.step(commit(self.pq), self.oracle.commit())

    @precondition(lambda self: not self.oracle.consuming_map)
    @rule()
    def commit_nothing_is_illegal(self):
        """PQ-07: Java's lastKey() throws on an empty consuming map."""
        event("PQ-07")
        with pytest.raises(IllegalTransition):
            commit(self.pq)

    @rule()
    def roll_back(self):
        """PQ-08"""
        event("PQ-08")
        self.pq = rollback(self.pq)
        self.oracle.rollback()

    @rule(data=st.data())
    def consume_again(self, data):
        """PQ-09: some taken messages (or others) are made to consume again."""
        event("PQ-09")
        candidates = list(self.oracle.consuming_map.values()) + [make_message(3)]
        msgs = data.draw(st.lists(st.sampled_from(candidates), max_size=4))
        self.pq = make_message_to_consume_again(self.pq, msgs)
        self.oracle.consume_again(msgs)

    @invariant()
    def fields_match_the_oracle(self):
        oracle, pq = self.oracle, self.pq
        assert list(pq.msg_tree_map.items()) == sorted(oracle.tree.items())
        assert list(pq.consuming_msg_orderly_tree_map.items()) == sorted(oracle.consuming_map.items())
        assert (pq.msg_count, pq.msg_size, pq.queue_offset_max, pq.consuming) == (
            oracle.count, oracle.size, oracle.offset_max, oracle.consuming)

    @invariant()
    def span_is_last_minus_first(self):
        """PQ-05"""
        tree = self.oracle.tree
        assert get_max_span(self.pq) == (max(tree) - min(tree) if tree else 0)
        if tree:
            event("PQ-05")

    @invariant()
    def contains_matches_the_oracle(self):
        """PQ-10"""
        for offset in range(0, 42, 7):
            assert contains_message(self.pq, make_message(offset)) == (offset in self.oracle.tree)
            if offset in self.oracle.tree:
                event("PQ-10")
        assert not contains_message(self.pq, None)


TestProcessQueueMachine = ProcessQueueMachine.TestCase


def test_cached_message_count_and_size():
    """PQ-01: RocketMQ's ProcessQueueTest.testCachedMessageCount and testCachedMessageSize."""
    pq, _ = put_message(create_process_queue(), [make_message(offset, 123) for offset in range(100)])
    assert (pq.msg_count, pq.msg_size) == (100, 100 * 123)
    pq, _ = take_messages(pq, 10)
    pq, _ = commit(pq)
    assert (pq.msg_count, pq.msg_size) == (90, 90 * 123)
    pq, _ = remove_message(pq, [make_message(pq.msg_tree_map.last_key(), 123)], now=0)
    assert (pq.msg_count, pq.msg_size) == (89, 89 * 123)


def test_fill_process_queue_info():
    """PQ-13, PQ-07: RocketMQ's testFillProcessQueueInfo (102 400 messages of 123 B; MiB rounded down)."""
    pq, _ = put_message(create_process_queue(), [make_message(offset, 123) for offset in range(102_400)])
    assert get_cached_msg_size_in_mib(pq) == 12
    for taken, mib in [(10_000, 10), (10_000, 9), (80_000, 0)]:
        pq, _ = take_messages(pq, taken)
        pq, _ = commit(pq)
        assert get_cached_msg_size_in_mib(pq) == mib


@given(sizes=st.lists(st.integers(0, 2**21), min_size=1, max_size=8), taken=st.integers(1, 8))
def test_cached_size_is_whole_mib_rounded_down(sizes, taken):
    """PQ-13: cachedMsgSizeInMiB is the bytes still cached // 1 048 576, before and after a take and commit."""
    event("PQ-13")
    pq, _ = put_message(create_process_queue(), [make_message(offset, size) for offset, size in enumerate(sizes)])
    assert get_cached_msg_size_in_mib(pq) == sum(sizes) // 2**20
    pq, _ = take_messages(pq, taken)
    pq, _ = commit(pq)
    assert get_cached_msg_size_in_mib(pq) == sum(sizes[taken:]) // 2**20


@given(st.permutations(range(101, 111)))
def test_committed_offsets_of_an_out_of_order_batch(finish_order):
    """PQ-04: finishing an ascending batch in any order reports the smallest unfinished offset, then last + 1."""
    event("PQ-04")
    pq, _ = put_message(create_process_queue(), [make_message(offset) for offset in range(101, 111)])
    unfinished = set(range(101, 111))
    for offset in finish_order:
        pq, reported = remove_message(pq, [make_message(offset)], now=0)
        unfinished.discard(offset)
        assert reported == (min(unfinished) if unfinished else 111)


def emptying_answer(offsets: list[int]) -> int:
    pq, _ = put_message(create_process_queue(), [make_message(offset) for offset in offsets])
    return remove_message(pq, [make_message(offset) for offset in offsets], now=0).value


@given(st.lists(OFFSETS, min_size=1, max_size=10))
def test_out_of_order_batch_reports_a_stale_offset(offsets):
    """PQ-02: queueOffsetMax is the last newly inserted offset, so emptying answers it + 1."""
    event("PQ-02")
    last_new = [offset for index, offset in enumerate(offsets) if offset not in offsets[:index]][-1]
    assert emptying_answer(offsets) == last_new + 1


def test_emptying_answer_is_not_always_the_next_offset():
    """PQ-02 (refutation, #10870): "emptying the queue answers max offset + 1" is false for out-of-order batches."""
    counterexample = find(st.lists(OFFSETS, min_size=1, max_size=10),
                          lambda offsets: emptying_answer(offsets) != max(offsets) + 1)
    assert emptying_answer(counterexample) < max(counterexample) + 1


def clean_expired_like_java(starts: list[int | None], now: int, timeout_minutes: int) -> list[int]:
    """cleanExpiredMsg's loop as the reference §1.7 states it, over a dict, every send-back succeeding."""
    tree = dict(enumerate(starts))
    cleaned = []
    for _ in range(min(len(tree), 16)):
        head = min(tree)
        start = tree[head]
        if start is None or not now - start > timeout_minutes * 60 * 1000:
            break
        cleaned.append(head)
        del tree[head]
    return cleaned


@given(starts=st.lists(st.none() | st.integers(0, 3_000_000), max_size=40), now=st.integers(0, 4_000_000),
       timeout=st.integers(1, 60), orderly=st.booleans())
def test_clean_expired_selection_matches_the_reference(starts, now, timeout, orderly):
    """PQ-12: head only, at most 16, strict >, no start time never expires, orderly never cleans."""
    event("PQ-12")
    msgs = [make_message(offset, start=start) for offset, start in enumerate(starts)]
    pq, _ = put_message(create_process_queue(), msgs)
    selected = get_expired_head_messages(pq, now, timeout, orderly=orderly)
    expected = [] if orderly else clean_expired_like_java(starts, now, timeout)
    assert [msg.queue_offset for msg in selected] == expected


@given(created=st.integers(0, 10**9), elapsed=st.integers(0, 300_000))
def test_lock_and_pull_expiry_are_strict(created, elapsed):
    """PQ-11: lock stale after > 30 000 ms, pull idle after > 120 000 ms."""
    event("PQ-11")
    pq = create_process_queue(now=created)
    assert is_lock_expired(pq, created + elapsed) == (elapsed > 30_000)
    assert is_pull_expired(pq, created + elapsed) == (elapsed > 120_000)
