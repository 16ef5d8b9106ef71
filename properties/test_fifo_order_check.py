"""FF-01 at its edges (spec/17-fifo.md): checkBlock's verdict on an orderly pop and the order info as needBlock leaves
it, for an attempt id that repeats the last pop's, for pops without an attempt id, for an order info with an
invisible time of 1 ms, and for a queue an all-queue pop checks after it already has all the messages it wants.

Every expected value is read from RocketMQ 5.3.3 (cited per test): OrderInfo.needBlock
(broker/.../offset/ConsumerOrderInfoManager.java L489-L517), ConsumerOrderInfoManager.checkBlock and update
(L94-L124, L143-L159), PopMessageProcessor.popMsgFromTopic and popMsgFromQueue (L636-L650, L661-L800)."""

from __future__ import annotations

import pytest

from model.broker.pop.pop import PopRequest, on_pop
from properties.pop_brokers import new_pop_broker, produce_many
from properties.pop_strategies import GROUP, TOPIC

# on_pop's draw: 50 % 2 reads queue 0 first in an all-queue pop of a two-queue topic, 51 % 2 queue 1.
QUEUE_0_FIRST, QUEUE_1_FIRST = 50, 51


def pop(state, now, attempt, invisible, *, queue_id=0, random_q=QUEUE_0_FIRST):
    """An orderly pop of one message."""
    request = PopRequest(GROUP, TOPIC, queue_id, 1, invisible, order=True, attempt_id=attempt)
    return on_pop(state, request, now, random_q)


def popped(answer) -> tuple[str, list[tuple[int, int]]]:
    """The answer's code and (queue, queue offset) of each message."""
    return answer.code, [(m.queue_id, m.queue_offset) for m in answer.messages]


def test_a_repeated_attempt_id_pops_its_in_flight_message_again():
    """FF-01: needBlock never blocks the attempt id of the last pop (`this.attemptId != null &&
    this.attemptId.equals(attemptId)` returns false, L493-L495): "A" pops offset 0 at 1 s, invisible 10 s; "A"
    again at 2 s pops offset 0 again (the committed offset is still 0), "B" at 2 s finds the queue blocked
    (2 000 < 1 000 + 10 000)."""
    state, first = pop(produce_many(new_pop_broker(), 2), 1_000, "A", 10_000)
    assert popped(first) == ("SUCCESS", [(0, 0)])
    _, again = pop(state, 2_000, "A", 10_000)
    _, other = pop(state, 2_000, "B", 10_000)
    assert (popped(again), popped(other)) == (("SUCCESS", [(0, 0)]), ("POLLING_TIMEOUT", []))


def test_an_order_info_of_1_ms_keeps_its_own_invisible_time():
    """FF-01: only an invisible time ≤ 0 is replaced by the asking pop's (`this.invisibleTime == null ||
    this.invisibleTime <= 0`, L498-L500); 1 ms stays. "A" pops offset 0 at 1 s with invisible time 1 ms, so the
    offset is visible again at 1 001 ms: "B" asking then with 60 s is not blocked (1 001 < 1 001 is false, L501-L514)
    and pops offset 0, where a needBlock that took B's 60 s would block it until 61 s."""
    state, _ = pop(produce_many(new_pop_broker(), 2), 1_000, "A", 1)
    _, answer = pop(state, 1_001, "B", 60_000)
    assert popped(answer) == ("SUCCESS", [(0, 0)])


@pytest.mark.parametrize(("at", "expected"), [
    (1_500, ("POLLING_TIMEOUT", [])),  # 1 500 < 1 000 + 10 000: blocked
    (10_999, ("POLLING_TIMEOUT", [])),
    (11_000, ("SUCCESS", [(0, 0)])),  # visible again
])
def test_pops_without_an_attempt_id_are_judged_by_the_asking_pops_invisible_time(at, expected):
    """FF-01: a pop without an attempt id (the header's attemptId is optional, @CFNullable) never counts as the
    same attempt (`this.attemptId != null && ...`, L493), so an order info without an invisible time (a first pop
    with 0 ms) takes the second pop's 10 s (L498-L500) and blocks it until 1 000 + 10 000 ms."""
    state, first = pop(produce_many(new_pop_broker(), 2), 1_000, None, 0)
    assert popped(first) == ("SUCCESS", [(0, 0)])
    _, answer = pop(state, at, None, 10_000)
    assert popped(answer) == expected


def test_a_queue_checked_after_the_pop_is_full_keeps_an_order_info_its_attempt_id_left_alone():
    """FF-01 on a queue a pop only checks: popMsgFromQueue runs checkBlock before it looks whether the pop already
    has maxMsgNums messages (PopMessageProcessor L718-L733), and popMsgFromTopic visits every queue (L641-L648).
    Two queues, one message each. "A" pops queue 1's message at 1 s with invisible time 0, so queue 1's order info
    has no invisible time. At 2 s "A" pops again, queue 0 first: queue 0's message fills it, then queue 1 is checked
    with A's own attempt id — needBlock returns at L493-L495, before it writes A's 60 s into the info. So at 5 s "C"
    asking queue 1 with 1 s is judged by its own 1 s (L498-L500): 5 000 >= 1 000 + 1 000, not blocked, and it pops
    queue 1's offset 0 (still the committed offset, unacked). Had the second pop written 60 s, queue 1 would be
    blocked until 61 s."""
    state = produce_many(new_pop_broker(queues=2), 2, queues=2)
    state, first = pop(state, 1_000, "A", 0, queue_id=-1, random_q=QUEUE_1_FIRST)
    assert popped(first) == ("SUCCESS", [(1, 0)])
    state, second = pop(state, 2_000, "A", 60_000, queue_id=-1, random_q=QUEUE_0_FIRST)
    assert popped(second) == ("SUCCESS", [(0, 0)])
    _, third = pop(state, 5_000, "C", 1_000, queue_id=1)
    assert popped(third) == ("SUCCESS", [(1, 0)])
