"""Properties of spec/17-fifo.md, rules FF-01 to FF-06: orderly pops, the order info, and FIFO consumers through the
proxy (a group with consumeMessageOrderly)."""

from __future__ import annotations

from collections import defaultdict
from typing import NamedTuple

import immutables
import pytest
from hypothesis import Phase, event, find, given, settings
from hypothesis import strategies as st
from hypothesis.stateful import RuleBasedStateMachine, initialize, rule

from model.broker.pop.ack import AckRequest, ChangeRequest, on_ack, on_change_invisible_time
from model.broker.pop.fifo import commit_and_next
from model.broker.pop.pop import PopRequest, on_pop
from model.broker.pop.restart import on_broker_restart, on_persist
from model.broker.pop.state import OrderInfo, PopGroupConfig
from model.proxy.consumer import on_change_invisible_duration, on_proxy_ack
from model.proxy.dlq import process_follow_up
from model.proxy.receive import ReceiveRequest, on_receive
from properties.coverage import record_rules
from properties.pop_brokers import new_pop_broker, produce, produce_many, stored_in
from properties.pop_strategies import DLQ, GROUP, TOPIC

ATTEMPTS = st.sampled_from([None, "A", "B", "C"])


def pop(state, now, attempt, n=2, invisible=10_000):
    return on_pop(state, PopRequest(GROUP, TOPIC, 0, n, invisible, order=True, attempt_id=attempt), now, 50)


def ack(state, handle, now):
    return on_ack(state, AckRequest(GROUP, TOPIC, 0, handle.offset, handle), now)


@given(n=st.integers(1, 4), acked=st.sets(st.integers(0, 3)), wait=st.integers(0, 20_000), same=st.booleans())
def test_queue_blocked_until_acked_or_visible(n, acked, wait, same):
    """FF-01: a second orderly pop finds nothing while an offset of the first is unacked and invisible, unless
    it repeats the attempt id (then the same messages again)."""
    state, first = pop(produce_many(new_pop_broker(), 8), 1_000, "A", n=n)
    for handle in first.handles:
        if handle.offset in acked:
            state, _ = ack(state, handle, 1_500)
    state, second = pop(state, 1_000 + wait, "A" if same else "B", n=n)
    record_rules(first.rules + second.rules)
    in_flight = [h.offset for h in first.handles if h.offset not in acked]
    if same:
        assert [h.offset for h in second.handles][:1] == in_flight[:1] or not in_flight
    elif in_flight and wait < 10_000:
        assert (second.code, second.messages) == ("POLLING_TIMEOUT", ())
    else:
        assert second.code == "SUCCESS"


@given(n=st.integers(1, 4), order=st.permutations(range(4)), count=st.integers(0, 4))
def test_acks_move_the_offset_to_the_first_unacked(n, order, count):
    """FF-02: acks in any order move the committed offset to the first unacked offset of the pop (past the last
    when all are); the next pop starts there."""
    state, first = pop(produce_many(new_pop_broker(), 6), 1_000, "A", n=n)
    done = [i for i in order if i < n][:count]
    for i in done:
        state, answer = ack(state, first.handles[i], 2_000)
        record_rules(answer.rules)
        assert (answer.code, answer.effective) == ("SUCCESS", True)  # commitAndNext gave an offset to commit
    expected = next((i for i in range(n) if i not in done), n)
    assert state.broker.consumer_offsets[(GROUP, TOPIC, 0)] == expected
    if expected == n:
        assert [h.offset for h in pop(state, 2_500, "B", n=1)[1].handles] == [n]


@given(attempts=st.lists(ATTEMPTS, min_size=1, max_size=6), n=st.integers(1, 3))
def test_attempts_are_counted_per_offset(attempts, n):
    """FF-03: re-popping a never-acked batch in place, each new attempt id adds 1 to every offset's count and a
    repeated one keeps it; the queue count is the least of the batch."""
    state, now, expected, previous = produce_many(new_pop_broker(), 3), 1_000, 0, object()
    for index, attempt in enumerate(attempts):
        state, answer = pop(state, now, attempt, n=n)
        record_rules(answer.rules)
        if index and not (attempt is not None and attempt == previous):
            expected += 1
        assert [h.offset for h in answer.handles] == list(range(n))
        assert answer.order_counts == ((expected, expected),) * n
        # orderCountInfo's per-offset entries (retry flag, queue, offset, count) and the handles' broker name
        assert answer.offset_counts == (tuple(("0", 0, o, expected) for o in range(n)) if expected else ())
        assert {h.broker_name for h in answer.handles} == {state.pop_config.broker_name}
        previous, now = attempt, now + 10_001


@given(stored=st.sampled_from([0, 1]), invisible=st.integers(1, 60_000), at=st.integers(1, 60_000))
def test_an_order_info_without_an_invisible_time_blocks_for_the_asking_pops(stored, invisible, at):
    """FF-01: needBlock reads the order info's invisible time only when it is > 0, the asking pop's otherwise
    (OrderInfo.needBlock 5.3.3 L498-L500): after a pop with invisible time 0 the queue stays blocked for the next
    attempt's invisible time, after one with 1 ms for 1 ms."""
    state, _ = pop(produce_many(new_pop_broker(), 2), 1_000, "A", n=1, invisible=stored)
    state, second = pop(state, 1_000 + at, "B", n=1, invisible=invisible)
    record_rules(second.rules)
    blocked = at < (invisible if stored == 0 else stored)
    assert (second.code == "POLLING_TIMEOUT", [m.queue_offset for m in second.messages]) == (
        (True, []) if blocked else (False, [0]))


@given(stored=st.sampled_from([0, -1]), second=st.integers(2, 60_000), third=st.integers(1, 60_000),
       data=st.data())
def test_a_blocked_pop_leaves_its_invisible_time_in_an_order_info_without_one(stored, second, third, data):
    """FF-01: needBlock writes the asking pop's invisible time into an order info that has none (≤ 0) and keeps
    it (OrderInfo.needBlock 5.3.3 L498-L500, `this.invisibleTime = currentInvisibleTime`, on the live order info):
    after a pop with invisible time ≤ 0, a second attempt refused at `at` leaves its own invisible time there, so a
    third attempt is blocked for the second's invisible time from the first pop, whatever its own."""
    state, _ = pop(produce_many(new_pop_broker(), 2), 1_000, "A", n=1, invisible=stored)
    at = data.draw(st.integers(1, second - 1), label="at")
    state, refused = pop(state, 1_000 + at, "B", n=1, invisible=second)
    assert (refused.code, refused.messages) == ("POLLING_TIMEOUT", ())
    later = data.draw(st.integers(at, 70_000), label="later")
    state, answer = pop(state, 1_000 + later, "C", n=1, invisible=third)
    record_rules(refused.rules + answer.rules)
    blocked = later < second
    assert (answer.code == "POLLING_TIMEOUT", [m.queue_offset for m in answer.messages]) == (
        (True, []) if blocked else (False, [0]))


@pytest.mark.parametrize(("first", "acked", "again", "size", "carried"), [
    ("A", True, "A", 2, True),  # the same attempt id pops offsets the last pop did not: its counts are carried
    ("A", False, "A", 2, True),  # the same offset and one more
    ("A", False, "A", 1, False),  # the same offset again
    ("A", True, "B", 2, False),  # another attempt id counts afresh
    (None, True, None, 2, False),  # no attempt id: nothing is kept
])
def test_ff_06_is_cited_exactly_when_a_repeated_attempt_id_pops_other_offsets(first, acked, again, size, carried):
    """FF-06: a pop that repeats the last pop's attempt id and holds an offset that pop did not carries counts
    that belong to other offsets, and its answer cites FF-06; no other pop does."""
    state, popped = pop(produce_many(new_pop_broker(), 3), 1_000, first, n=1)
    if acked:
        state, _ = ack(state, popped.handles[0], 1_500)
    _, answer = pop(state, 12_000, again, n=size)
    assert answer.messages and ("FF-06" in answer.rules) == carried


@given(invisible=st.integers(0, 60_000), at=st.integers(1, 9_000), later=st.integers(0, 70_000))
def test_orderly_change_moves_the_visible_time(invisible, at, later):
    """FF-04: an orderly change makes the offset visible at now + invisible time (another attempt pops it from
    then on) and answers the old pop time."""
    state, first = pop(produce_many(new_pop_broker(), 1), 1_000, "A", n=1)
    handle, now = first.handles[0], 1_000 + at
    state, changed = on_change_invisible_time(state, ChangeRequest(GROUP, TOPIC, 0, 0, handle, invisible), now)
    record_rules(changed.rules)
    assert (changed.pop_time, changed.invisible_time) == (1_000, now + invisible - 1_000)
    # the handle's revive queue (ChangeInvisibleTimeProcessor 5.3.3 L246-L248); the order info took the new time
    assert (changed.revive_queue_id, changed.was_pending) == (handle.revive_queue_id, True)
    state, second = pop(state, now + later, "B", n=1)
    assert bool(second.messages) == (later >= invisible)


@given(invisible=st.integers(10_000, 60_000), at=st.integers(1, 9_000))
def test_an_orderly_change_with_an_older_pops_handle_moves_no_visible_time(invisible, at):
    """FF-04: updateNextVisibleTime changes the order info only for the handle of the last pop (popTime equal,
    ConsumerOrderInfoManager 5.3.3 L237-L257): a change with the handle of an earlier pop of the same offset
    answers SUCCESS and leaves the offset visible when the last pop's invisible time ends."""
    state, first = pop(produce_many(new_pop_broker(), 1), 1_000, "A", n=1)
    state, second = pop(state, 11_001, "B", n=1)  # m0 again once invisible: a newer pop time
    state, changed = on_change_invisible_time(state, ChangeRequest(GROUP, TOPIC, 0, 0, first.handles[0], invisible),
                                              11_001 + at)
    record_rules(changed.rules)
    assert (changed.code, changed.was_pending) == ("SUCCESS", False)
    assert [h.pop_time for h in second.handles] == [11_001]
    _, third = pop(state, 21_001, "C", n=1)
    assert [m.queue_offset for m in third.messages] == [0]


@given(invisible=st.integers(0, 60_000), at=st.integers(1, 9_000))
def test_orderly_change_of_an_acked_offset_answers_an_expired_handle(invisible, at):
    """FF-04, PD-05: through the proxy, a change of an acked orderly offset answers OK and a handle whose pop time,
    invisible time and revive queue are 0 (the broker set none): any later ack with it is refused."""
    state = produce_many(new_pop_broker(group_config=PopGroupConfig(consume_message_orderly=True)), 2)
    state, received = on_receive(state, ReceiveRequest(GROUP, TOPIC, 1, 10_000), 1_000, 50)
    state, _ = on_proxy_ack(state, GROUP, TOPIC, received.handles[0], 1_000 + at)
    state, changed = on_change_invisible_duration(state, GROUP, TOPIC, received.handles[0], invisible, 1_001 + at)
    record_rules(changed.rules)
    assert changed.code == "OK" and changed.handle[1:4] == (0, 0, 0) and changed.effective is False
    assert on_proxy_ack(state, GROUP, TOPIC, changed.handle, 1_002 + at)[1].code == "INVALID_RECEIPT_HANDLE"
    assert state.broker.consumer_offsets[(GROUP, TOPIC, 0)] == 1


@given(stale=st.sampled_from(["older pop", "below offset", "unknown offset"]))
def test_stale_orderly_handle_changes_nothing(stale):
    """FF-05: a handle of an earlier pop, an offset below the committed one, or an offset the pop did not return
    leave the committed offset where it is."""
    state, first = pop(produce_many(new_pop_broker(), 3), 1_000, "A", n=1)
    if stale == "older pop":
        state, _ = pop(state, 12_000, "B", n=1)  # m0 again, a newer pop time
        handle = first.handles[0]
    elif stale == "below offset":
        state, _ = ack(state, first.handles[0], 2_000)
        handle = first.handles[0]
    else:
        handle = first.handles[0]._replace(offset=2)
    before = state.broker.consumer_offsets[(GROUP, TOPIC, 0)]
    state, answer = ack(state, handle, 13_000)
    record_rules(answer.rules)
    assert state.broker.consumer_offsets[(GROUP, TOPIC, 0)] == before
    assert (answer.code, answer.effective) == ("MESSAGE_ILLEGAL" if stale == "unknown offset" else "SUCCESS", False)


def test_an_order_info_without_offsets_answers_an_ack_message_illegal():
    """FF-05: commitAndNext answers -1 (MESSAGE_ILLEGAL) for an order info whose offset list is empty, before it
    looks at the pop time (ConsumerOrderInfoManager 5.3.3 L191-L195), and offset + 1 without an order info."""
    empty = OrderInfo(None, 1_000, 10_000, (), 0, immutables.Map(), immutables.Map())
    assert commit_and_next(empty, 3, 1_000) == (empty, -1)
    assert commit_and_next(empty, 3, 2_000) == (empty, -1)
    assert commit_and_next(None, 3, 1_000) == (None, 4)


def run_fifo_consumer(steps) -> bool:
    """A FIFO consumer through the proxy over three messages of one queue: receive (one or two), ack the oldest
    or the newest handle it holds, wait 15 s, or crash the broker (after a persist at the start). Returns whether
    a message was first delivered while an earlier one of the queue was neither acked nor in its batch."""
    state = on_persist(produce_many(new_pop_broker(group_config=PopGroupConfig(consume_message_orderly=True)), 3))
    now, held, acked = 1_000, [], set()
    for step in steps:
        now += 1
        if step.startswith("receive"):
            size = 2 if step.endswith("two") else 1
            state, answer = on_receive(state, ReceiveRequest(GROUP, TOPIC, size, 10_000), now, 50)
            batch = {h.offset for h in answer.handles}
            if any(j not in acked and j not in batch for h in answer.handles for j in range(h.offset)):
                return True
            held += list(answer.handles)
        elif step.startswith("ack") and held:
            handle = held.pop(0 if step.endswith("first") else -1)
            state, answer = on_proxy_ack(state, GROUP, TOPIC, handle, now)
            acked |= {handle.offset} if answer.code == "OK" else set()
        elif step == "wait":
            now += 15_000
        elif step == "crash":
            state = on_broker_restart(state, graceful=False)
    return False


def test_restart_lets_a_later_ack_skip_an_unacked_message():
    """FF-05, refuting "a FIFO queue is consumed in order": after a broker crash lost the order info, an ack of the
    second message of a batch commits past the first, and the next receive delivers the third while the first
    was never acked — Hypothesis finds that history, and none without a crash."""
    steps = ["receive", "receive two", "ack first", "ack last", "wait", "crash"]
    found = find(st.lists(st.sampled_from(steps), max_size=5), run_fifo_consumer,
                 settings=settings(database=None, max_examples=3000, phases=tuple(Phase)))
    assert found[:3] == ["receive two", "crash", "ack last"] and len(found) == 4
    assert not run_fifo_consumer(["receive two", "ack last", "receive"])


def count_fifo_deliveries(case) -> int:
    """A FIFO message that always fails, in a group with retryMaxTimes `max_times`, received once alone and then,
    every 11 s, in a batch of `batches[i]` with one more message produced each time (none acked): how often it is
    delivered before the proxy dead-letters it."""
    max_times, batches = case
    state = produce(new_pop_broker(retry_max_times=max_times,
                                   group_config=PopGroupConfig(consume_message_orderly=True)), "m0")
    now, delivered = 1_000, 0
    for index, batch in enumerate([1, *batches]):
        state = produce(state, f"m{index + 1}", now=now)
        state, answer = on_receive(state, ReceiveRequest(GROUP, TOPIC, batch, 10_000), now, 50)
        delivered += [m.uniq_key for m in answer.messages].count("m0")
        if any(f.message_id == "m0" for f in answer.follow_ups):
            break
        now += 11_000
    return delivered


def test_proxy_queue_count_hides_fifo_attempts():
    """FF-03, refuting "a FIFO message is delivered at most maxAttempts times": the local proxy reports the
    queue's least count, 0 while the batch holds a message popped for the first time, so Hypothesis finds a poison
    message delivered once more than maxAttempts — re-popped with a newcomer in a batch of two."""
    max_times, batches = find(st.tuples(st.integers(0, 2), st.lists(st.integers(1, 3), max_size=4)),
                              lambda case: count_fifo_deliveries(case) > case[0] + 1,
                              settings=settings(database=None, max_examples=500, phases=tuple(Phase)))
    assert max_times == 0 and len(batches) == 1 and batches[0] >= 2
    assert count_fifo_deliveries((0, [2])) == 2 and count_fifo_deliveries((0, [1])) == 1


class OrderCounts(NamedTuple):
    """What FF-03 says the broker remembers of a queue's last orderly pop that found messages: its attempt id,
    its offsets and the attempt count of each offset popped again."""

    attempt: str | None
    offsets: tuple
    counts: dict


def count_order_pop(previous: OrderCounts | None, attempt: str | None, offsets: tuple) -> tuple[OrderCounts, int]:
    """FF-03, FF-06 as the chapter states them: a new attempt id adds 1 to each offset popped again, the last
    pop's attempt id keeps its counts whatever offsets they were of; the proxy's count is their least, 0 while
    there are fewer counts than offsets."""
    if previous is None:
        counts = {}
    elif attempt is not None and attempt == previous.attempt:
        counts = previous.counts
    else:
        counts = {o: previous.counts.get(o, 0) + 1 for o in offsets if o in previous.offsets}
    return OrderCounts(attempt, offsets, counts), min(counts.values()) if len(counts) == len(offsets) else 0


def count_attempts(attempts: list) -> int:
    """The deliveries of a message that were new attempts: the first, and each whose attempt id is none or not
    the one it was delivered with just before (FF-03 counts no more)."""
    return sum(1 for i, a in enumerate(attempts) if i == 0 or a is None or a != attempts[i - 1])


class FifoConsumers(RuleBasedStateMachine):
    """FIFO consumers of group G (consumeMessageOrderly) through the proxy, over two queues: receive with attempt
    ids, ack, nack, crash (handles dropped), time passing; no broker crash. Every first delivery follows its queue's
    order (FF-01, FF-02); each message is shown, and dead-lettered by, its queue's count (FF-03); at quiescence
    every message is acked or dead-lettered, a poison one after at least maxAttempts attempts — unless the count
    that dead-lettered it was not its own, which only a repeated attempt id brings about (FF-06)."""

    @initialize(retry_max_times=st.integers(0, 2))
    def start(self, retry_max_times):
        self.state = new_pop_broker(queues=2, retry_max_times=retry_max_times,
                                    group_config=PopGroupConfig(consume_message_orderly=True))
        self.max_attempts, self.now = retry_max_times + 1, 1_000
        self.held = {consumer: [] for consumer in range(2)}
        self.keys, self.poison, self.resolved = {}, set(), set()
        self.pops = defaultdict(list)  # key -> the attempt ids of the receives that delivered it
        self.orders: dict[int, OrderCounts] = {}  # queue id -> its last orderly pop that found messages
        self.borrowed = set()  # keys dead-lettered by a count that was not their own (FF-06)

    @rule(queue_id=st.integers(0, 1), poison=st.booleans())
    def produce(self, queue_id, poison):
        self.now += 1
        key = f"m{len(self.keys)}"
        self.state = produce(self.state, key, queue_id=queue_id, now=self.now)
        offset = sum(1 for q, _ in self.keys.values() if q == queue_id)
        self.keys[key] = (queue_id, offset)
        if poison:
            self.poison.add(key)

    @rule(consumer=st.integers(0, 1), batch=st.integers(1, 3), attempt=ATTEMPTS, random_q=st.integers(0, 99))
    def receive(self, consumer, batch, attempt, random_q):
        """FF-01, FF-02: nothing behind an unresolved message of a queue is delivered."""
        self.now += 1
        self.state, answer = on_receive(self.state, ReceiveRequest(GROUP, TOPIC, batch, 10_000, attempt_id=attempt),
                                        self.now, random_q)
        record_rules(answer.rules)
        self.check_received(answer, attempt)
        self.held[consumer] += [(m.uniq_key, h) for m, h in zip(answer.messages, answer.handles, strict=True)]
        self.forward(answer.follow_ups)

    def check_received(self, answer, attempt) -> None:
        """FF-01, FF-02 (order), FF-03 (each message shows its queue's count, and is dead-lettered instead of
        delivered exactly when that count reached maxAttempts), FF-06 (a count not its own came with the last
        pop's attempt id)."""
        self.check_order(answer.messages)
        popped = [(m.uniq_key, m) for m in answer.messages] + [(f.message_id, None) for f in answer.follow_ups]
        for queue_id in (0, 1):
            mine = sorted((self.keys[key][1], key, m) for key, m in popped if self.keys[key][0] == queue_id)
            if not mine:
                continue
            previous = self.orders.get(queue_id)
            self.orders[queue_id], count = count_order_pop(previous, attempt, tuple(o for o, _, _ in mine))
            for offset, key, message in mine:
                assert (message is None) == (count >= self.max_attempts), f"{key} shown count {count}"
                if message is not None:
                    assert message.reconsume_times == count
                    self.pops[key].append(attempt)
                elif self.orders[queue_id].counts.get(offset, 0) < self.max_attempts:
                    assert attempt is not None and attempt == previous.attempt
                    self.borrowed.add(key)
                    event("FF-06")

    def check_order(self, messages) -> None:
        batch = {self.keys[m.uniq_key] for m in messages}
        for message in messages:
            queue_id, offset = self.keys[message.uniq_key]
            earlier = {(queue_id, j) for j in range(offset)}
            assert earlier <= self.resolved | batch, f"{message.uniq_key} delivered before an earlier message"
            assert message.reconsume_times < self.max_attempts

    def forward(self, follow_ups) -> None:
        for follow_up in follow_ups:
            assert follow_up.kind == "dlq"
            self.state, acks = process_follow_up(self.state, follow_up, self.now, 0)
            for ack_ in acks:
                self.state, _ = process_follow_up(self.state, ack_, self.now, 0)
            self.resolved.add(self.keys[follow_up.message_id])

    @rule(consumer=st.integers(0, 1), data=st.data(), nack=st.booleans(), invisible=st.integers(0, 20_000))
    def settle(self, consumer, data, nack, invisible):
        """FF-04, FF-05: the consumer acks one message it holds, or nacks it (poison messages are always nacked)."""
        if not self.held[consumer]:
            return
        key, handle = self.held[consumer].pop(data.draw(st.integers(0, len(self.held[consumer]) - 1)))
        self.now += 1
        if nack or key in self.poison:
            self.state, _ = on_change_invisible_duration(self.state, GROUP, TOPIC, handle, invisible, self.now)
            return
        self.state, answer = on_proxy_ack(self.state, GROUP, TOPIC, handle, self.now)
        if answer.effective:
            self.resolved.add(self.keys[key])

    @rule(consumer=st.integers(0, 1))
    def crash_consumer(self, consumer):
        self.held[consumer] = []

    @rule(elapsed=st.integers(1, 25_000))
    def wait(self, elapsed):
        self.now += elapsed

    def teardown(self):
        """FF-03 at quiescence: each message acked, or dead-lettered once — a poison message after maxAttempts
        new attempts, unless a count not its own dead-lettered it (FF-06)."""
        if not hasattr(self, "state"):
            return
        for _ in range(4 * (self.max_attempts + 2) * max(len(self.keys), 1)):
            self.now += 30_000
            self.state, answer = on_receive(self.state, ReceiveRequest(GROUP, TOPIC, 32, 10_000), self.now, 50)
            self.check_received(answer, None)
            self.forward(answer.follow_ups)
            for message, handle in zip(answer.messages, answer.handles, strict=True):
                if message.uniq_key not in self.poison:
                    self.state, acked = on_proxy_ack(self.state, GROUP, TOPIC, handle, self.now)
                    self.resolved.add(self.keys[message.uniq_key])
            if len(self.resolved) == len(self.keys):
                break
        dead = [m.uniq_key for m in stored_in(self.state, DLQ)]
        assert len(self.resolved) == len(self.keys)
        assert len(dead) == len(set(dead))
        for key in self.poison:  # FF-03: never fewer than maxAttempts attempts (more when the proxy's count is 0)
            assert key in dead and (key in self.borrowed or count_attempts(self.pops[key]) >= self.max_attempts)


TestFifoConsumers = FifoConsumers.TestCase
