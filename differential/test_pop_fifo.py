"""FIFO on RocketMQ 5.3.3 and the model-backed server, and the proxy's tag filter: an orderly pop blocks its queue
while a popped message is in flight, a message not acked comes back at its own offset (no retry topic) with a
per-offset count; the offset moves only by acks, to the first unacked message; an orderly change moves one offset's
visible time and keeps the pop time; a message the broker hands out for a subscription's tag hash but whose tag
differs is acked by the proxy, never delivered."""

from __future__ import annotations

import time

import attrs
import pytest

from conformance.codec import pop
from conformance.codec.codes import ResponseCode
from conformance.codec.proxy import CODE_OK
from differential import pop_probe as p
from differential.pop_probe import facts, requires_5x

pytestmark = requires_5x
__all__ = ["facts"]
# Java's String.hashCode: "Aa" and "BB" are both 2112, the consume queue's tag code of either.
TAG, SAME_HASH_TAG = "Aa", "BB"
CHANGED_MS = 3_000
INVALID_RECEIPT_HANDLE = 40013  # apache.rocketmq.v2.Code


@pytest.mark.rules("FF-01", "FF-03", "FF-05")
def test_an_orderly_pop_blocks_the_queue_while_a_message_is_in_flight(pop_backend, facts):
    names = p.prepare(pop_backend, "fifo", ["k0", "k1", "k2"], fifo=True)

    def pop_order(invisible_ms: int, attempt: str):
        return pop_backend.pop(names.group, names.topic, invisible_ms, queue_id=0, max_nums=1, order=True,
                               attempt_id=attempt)

    first = pop_order(p.LONG_MS, "a1")
    blocked = pop_order(p.LONG_MS, "a2")
    time.sleep(p.NEXT_MS_S)  # a new pop time, or the first handle would not be stale (FF-05)
    same_attempt = pop_order(p.LONG_MS, "a1")  # a client retrying its pop with the same attempt id
    stale_ack = pop_backend.ack(names.group, names.topic, first.messages[0].handle)
    after_stale_ack = pop_order(p.LONG_MS, "a3")
    fresh_ack = pop_backend.ack(names.group, names.topic, same_attempt.messages[0].handle)
    after_ack = pop_order(p.INVISIBLE_MS, "a4")
    attempts = iter(range(1000))
    again, seen_at = p.wait_until(lambda: _found_at(pop_order(p.LONG_MS, f"b{next(attempts)}")), 10.0)
    keys = [[m.key for m in a.messages] for a in (first, blocked, same_attempt, after_stale_ack, after_ack, again)]
    facts("orderly pops: a1, a2 while k0 in flight, a1 again, after an ack of a1's first handle, after an ack of "
          "its second, after k1's invisible time (1 s)", keys)
    facts("orderly: blocked pop's code, stale/fresh ack codes, reviveQid, re-pop's order counts, ms after revive "
          "time, retry copies", (blocked.code, stale_ack, fresh_ack, first.revive_qid, again.order_counts,
                                 seen_at - p.get_revive_time(after_ack.messages[0]),
                                 len(p.read_retry(pop_backend, names))))
    assert keys == [["k0"], [], ["k0"], [], ["k1"], ["k1"]]
    assert (stale_ack, fresh_ack) == (ResponseCode.SUCCESS, ResponseCode.SUCCESS)  # the stale one changes nothing
    assert first.revive_qid == pop.ORDER_REVIVE_QUEUE and p.read_retry(pop_backend, names) == ()
    assert again.messages[0].reconsume_times == 1  # the per-offset count (orderCountInfo), not a revived copy's


# An order info without an invisible time (an orderly pop asked with 0) takes the invisible time of the first pop
# it refuses and keeps it (OrderInfo.needBlock 5.3.3 L498-L500): a later attempt is judged by that, not by its own.
STORED_MS = 4_000  # the refused pop's invisible time, which the order info keeps
OWN_MS = 1  # the later attempts' own invisible time: long past when they ask
JUDGED_S = 1.0  # when the third attempt asks: past its own invisible time, well within the kept one


@pytest.mark.rules("FF-01")
def test_a_refused_orderly_pop_leaves_its_invisible_time_in_an_order_info_without_one(pop_backend, facts):
    names = p.prepare(pop_backend, "fifoi", ["k0"], fifo=True)

    def pop_order(invisible_ms: int, attempt: str):
        return pop_backend.pop(names.group, names.topic, invisible_ms, queue_id=0, max_nums=1, order=True,
                               attempt_id=attempt)

    first = pop_order(0, "a1")
    refused = pop_order(STORED_MS, "a2")
    time.sleep(JUDGED_S)
    third = pop_order(OWN_MS, "a3")
    attempts = iter(range(1000))
    again, seen_at = p.wait_until(lambda: _found_at(pop_order(OWN_MS, f"b{next(attempts)}")), 10.0)
    since = seen_at - p.get_revive_time(first.messages[0])  # its pop time: the first pop's invisible time is 0
    keys = [[m.key for m in a.messages] for a in (first, refused, third, again)]
    facts(f"orderly pops: a1 with invisible time 0, a2 with {STORED_MS} ms, a3 with {OWN_MS} ms {JUDGED_S} s later, "
          f"then attempts with {OWN_MS} ms until one pops; ms from the first pop to that one", (keys, since))
    assert keys == [["k0"], [], [], ["k0"]]
    assert STORED_MS - p.CLOCK_SLACK_MS <= since < STORED_MS + p.OBSERVE_MARGIN_MS


def _found_at(answer):
    return (answer, p.now_ms()) if answer.messages else None


@pytest.mark.rules("PD-02", "PO-05")
def test_the_proxy_acks_what_its_tag_filter_drops(pop_backend, facts):
    names, other = p.fresh("tag"), p.fresh("tagb")
    p.set_up(pop_backend, names)
    pop_backend.set_group(other.group)
    assert pop_backend.send(names.topic, 0, b"x", "k0", SAME_HASH_TAG) == 0
    assert pop_backend.send(names.topic, 0, b"y", "k1", TAG) == 0
    p.wait_until(lambda: pop_backend.max_offset(names.topic, 0) >= 2, 5.0)
    broker = pop_backend.pop(other.group, names.topic, p.LONG_MS, exp=TAG)
    received = p.receive_until(pop_backend, names, 10.0, p.INVISIBLE_MS, exp=TAG)[0]
    assert all(pop_backend.grpc_ack(names.group, names.topic, m) == CODE_OK for m in received.messages)
    time.sleep(p.REVIVE_LIMIT_S)
    later = pop_backend.receive(names.group, names.topic, p.LONG_MS, exp=TAG)
    facts(f"subscription {TAG!r}: keys the broker's POP returns / the proxy delivers / later / retry copies",
          ([m.key for m in broker.messages], [m.key for m in received.messages], [m.key for m in later.messages],
           len(p.read_retry(pop_backend, names))))
    assert [m.key for m in broker.messages] == ["k0", "k1"]
    assert [m.key for m in received.messages] == ["k1"] and later.messages == ()
    assert p.read_retry(pop_backend, names) == () and pop_backend.committed_offset(names.group, names.topic, 0) == 2


def pop_order(pop_backend, names: p.Names, invisible_ms: int, attempt: str | None, max_nums: int = 1):
    return pop_backend.pop(names.group, names.topic, invisible_ms, queue_id=0, max_nums=max_nums, order=True,
                           attempt_id=attempt)


@pytest.mark.rules("FF-02")
def test_orderly_acks_move_the_offset_to_the_first_unacked(pop_backend, facts):
    names = p.prepare(pop_backend, "fifoack", ["k0", "k1", "k2"], fifo=True)
    batch = pop_order(pop_backend, names, p.LONG_MS, "a1", max_nums=2).messages
    offsets = [pop_backend.committed_offset(names.group, names.topic, 0)]
    assert pop_backend.ack(names.group, names.topic, batch[1].handle) == ResponseCode.SUCCESS
    offsets.append(pop_backend.committed_offset(names.group, names.topic, 0))
    assert pop_backend.ack(names.group, names.topic, batch[0].handle) == ResponseCode.SUCCESS
    offsets.append(pop_backend.committed_offset(names.group, names.topic, 0))
    after = pop_order(pop_backend, names, p.LONG_MS, "a2").messages
    facts("orderly pop of k0 k1: committed offset after the pop / the ack of k1 / the ack of k0, then the next pop",
          (offsets, [m.key for m in after]))
    assert [m.key for m in batch] == ["k0", "k1"] and offsets == [0, 0, 2] and [m.key for m in after] == ["k2"]


@pytest.mark.rules("FF-04")
def test_an_orderly_change_moves_the_visible_time_and_keeps_the_pop_time(pop_backend, facts):
    names = p.prepare(pop_backend, "fifochg", fifo=True)
    first = pop_order(pop_backend, names, p.INVISIBLE_MS, "a1").messages[0]
    changed_at = p.now_ms()
    code, handle = pop_backend.change_invisible(names.group, names.topic, first.handle, CHANGED_MS)
    time.sleep(p.INVISIBLE_MS / 1000 + 0.5)
    blocked = pop_order(pop_backend, names, p.LONG_MS, "a2")
    attempts = iter(range(1000))
    again, seen_at = p.wait_until(lambda: _found_at(pop_order(pop_backend, names, p.LONG_MS, f"b{next(attempts)}")),
                                  CHANGED_MS / 1000 + 3)
    old, new = pop.decode_handle(first.handle), pop.decode_handle(handle)
    facts(f"orderly pop with 1 s, changed to {CHANGED_MS} ms: new handle's popTime - old, its invisibleTime - "
          "(change time - popTime), a pop after 1.5 s, ms from the change to the message again",
          (new.pop_time - old.pop_time, new.invisible_time - (changed_at - old.pop_time), blocked.code,
           seen_at - changed_at))
    assert code == ResponseCode.SUCCESS and new.pop_time == old.pop_time and blocked.messages == ()
    assert CHANGED_MS - p.CLOCK_SLACK_MS <= new.invisible_time - (changed_at - old.pop_time) <= CHANGED_MS + 100
    assert [m.key for m in again.messages] == ["k0"] and seen_at - changed_at >= CHANGED_MS - p.CLOCK_SLACK_MS



def run_repeated_attempt(pop_backend, retry_max_times: int, last: str):
    """FIFO k0, k1: receive k0 (no attempt id, 1 s), once visible receive it with attempt id A — acked by us, or
    dead-lettered by the proxy when that count reaches maxAttempts —, then a receive with attempt id `last`. The
    keys of the three receives, the last one's reconsumeTimes and the DLQ's keys."""
    names = p.prepare(pop_backend, "fifoatt", ["k0", "k1"], retry_max_times=retry_max_times, fifo=True)
    first = pop_backend.receive(names.group, names.topic, p.INVISIBLE_MS, batch=1)
    time.sleep(p.INVISIBLE_MS / 1000 + 0.2)
    again = pop_backend.receive(names.group, names.topic, p.LONG_MS, batch=1, attempt_id="A")
    for message in again.messages:
        assert pop_backend.grpc_ack(names.group, names.topic, message) == CODE_OK
    # the proxy's forward and its ack go out after the answer: k0 is settled once the offset moved to 1
    p.wait_until(lambda: pop_backend.committed_offset(names.group, names.topic, 0) == 1, 5.0)
    third = pop_backend.receive(names.group, names.topic, p.LONG_MS, batch=1, attempt_id=last)
    dead = 1 + (not third.messages) if retry_max_times == 0 else 0
    p.wait_until(lambda: len(p.read_dlq(pop_backend, names)) == dead, 5.0)
    return ([[m.key for m in a.messages] for a in (first, again, third)], [m.reconsume_times for m in third.messages],
            p.keys_of(p.read_dlq(pop_backend, names)))


@pytest.mark.rules("FF-06")
def test_a_repeated_attempt_id_gives_a_newcomer_the_old_counts(pop_backend, facts):
    """FF-06: a receive that repeats the attempt id of its queue's last pop keeps that pop's counts — k0's — and the
    proxy reads them as k1's: with maxAttempts 1, k1 is dead-lettered on its first pop, never delivered; with
    maxAttempts 3 it is delivered first with reconsumeTimes 1. A fresh attempt id gives it 0."""
    outcomes = {f"{n} {last}": run_repeated_attempt(pop_backend, n, last) for n, last in ((0, "A"), (0, "B"), (2, "A"))}
    facts("FIFO k0 k1: retryMaxTimes, the third receive's attempt id -> keys of receive 1 / 2 (attempt A, after 1 s) "
          "/ 3, reconsumeTimes of 3's messages, DLQ keys", outcomes)
    assert outcomes["0 A"] == ([["k0"], [], []], [], ["k0", "k1"])
    assert outcomes["0 B"] == ([["k0"], [], ["k1"]], [0], ["k0"])
    assert outcomes["2 A"] == ([["k0"], ["k0"], ["k1"]], [1], [])


@pytest.mark.rules("FF-06")
def test_a_repeated_orderly_pop_attempt_reports_counts_of_offsets_it_did_not_pop(pop_backend, facts):
    """FF-06 by remoting POP: k0 popped, popped again with attempt id A once visible (count 1) and acked; a pop
    that repeats A returns k1 with orderCountInfo still of offset 0 — the remoting client finds no count for
    offset 1 and takes the queue's: k1's reconsumeTimes is 1 on its first pop."""
    names = p.prepare(pop_backend, "fifoqo", ["k0", "k1", "k2"], fifo=True)
    first = pop_order(pop_backend, names, p.INVISIBLE_MS, None)
    time.sleep(p.INVISIBLE_MS / 1000 + 0.2)
    again = pop_order(pop_backend, names, p.LONG_MS, "A")
    assert pop_backend.ack(names.group, names.topic, again.messages[0].handle) == ResponseCode.SUCCESS
    third = pop_order(pop_backend, names, p.LONG_MS, "A")
    pops = [(a.order_counts, [(m.key, m.reconsume_times) for m in a.messages]) for a in (first, again, third)]
    facts("orderly pops of k0 (no attempt id), k0 (A, after 1 s, then acked), A again: orderCountInfo, "
          "(key, reconsumeTimes)", pops)
    assert pops == [({"0@0": 0}, [("k0", 0)]), ({"0@qo0%0": 1, "0@0": 1}, [("k0", 1)]),
                    ({"0@qo0%0": 1, "0@0": 1}, [("k1", 1)])]


@pytest.mark.rules("FF-04")
def test_an_orderly_change_below_the_committed_offset_answers_an_expired_handle(pop_backend, facts):
    """FF-04: a change of an acked orderly offset (below the committed one) changes nothing and sets no field of
    the answer: by remoting the header reads popTime, invisibleTime and reviveQid 0, and through the proxy the new
    handle has them 0 — expired at once: its ack is refused; the queue goes on with the next message."""
    names = p.prepare(pop_backend, "fifolow", ["k0", "k1", "k2"], fifo=True)
    first = pop_order(pop_backend, names, p.LONG_MS, "a1").messages[0]
    assert pop_backend.ack(names.group, names.topic, first.handle) == ResponseCode.SUCCESS
    code, handle = pop_backend.change_invisible(names.group, names.topic, first.handle, CHANGED_MS)
    decoded = pop.decode_handle(handle)
    changed = (decoded.pop_time, decoded.invisible_time, decoded.revive_qid)
    received = pop_backend.receive(names.group, names.topic, p.LONG_MS, batch=1).messages[0]
    assert pop_backend.grpc_ack(names.group, names.topic, received) == CODE_OK
    grpc_code, grpc_handle = pop_backend.grpc_change_invisible(names.group, names.topic, received, CHANGED_MS)
    stale = pop_backend.grpc_ack(names.group, names.topic, attrs.evolve(received, handle=grpc_handle))
    after = pop_backend.receive(names.group, names.topic, p.LONG_MS, batch=1).messages
    facts("orderly change of an acked offset: remoting code and (popTime, invisibleTime, reviveQid) of the answer; "
          "gRPC code, the new handle's invisible time, its ack's code, the next receive",
          (code, changed, grpc_code, grpc_handle.split(" ")[2], stale, [m.key for m in after]))
    assert (code, changed) == (ResponseCode.SUCCESS, (0, 0, 0))
    assert (grpc_code, grpc_handle.split(" ")[2:4], stale) == (CODE_OK, ["0", "0"], INVALID_RECEIPT_HANDLE)
    assert [received.key] + [m.key for m in after] == ["k1", "k2"]
