"""FIFO on RocketMQ 5.3.3 and the proxy's tag filter: an orderly pop blocks its queue while a popped message is in
flight, a message not acked comes back at its own offset (no retry topic) with a per-offset count; a message the
broker hands out for a subscription's tag hash but whose tag differs is acked by the proxy, never delivered."""

from __future__ import annotations

import time

from conformance.codec import pop
from conformance.codec.codes import ResponseCode
from conformance.codec.proxy import CODE_OK
from differential import pop_probe as p
from differential.pop_probe import facts, requires_5x

pytestmark = requires_5x
__all__ = ["facts"]
# Java's String.hashCode: "Aa" and "BB" are both 2112, the consume queue's tag code of either.
TAG, SAME_HASH_TAG = "Aa", "BB"


def test_an_orderly_pop_blocks_the_queue_while_a_message_is_in_flight(pop_backend, facts):
    names = p.fresh("fifo")
    p.set_up(pop_backend, names, fifo=True)
    p.send_all(pop_backend, names, ["k0", "k1", "k2"])

    def pop_order(invisible_ms: int, attempt: str):
        return pop_backend.pop(names.group, names.topic, invisible_ms, queue_id=0, max_nums=1, order=True,
                               attempt_id=attempt)

    first = pop_order(p.LONG_MS, "a1")
    blocked = pop_order(p.LONG_MS, "a2")
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


def _found_at(answer):
    return (answer, p.now_ms()) if answer.messages else None


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
