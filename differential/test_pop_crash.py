"""A broker crash and a graceful restart of RocketMQ 5.3.3 (proxy and broker in one JVM) on its store (PO-10, and
FF-05's crash half): a crash (`kill -9`) brings the consumer offsets and the FIFO order info back to their last
persist, so what was popped since is popped again, what was revived since is revived again (only the unacked
offsets), and an orderly ack of the second message of an in-flight batch commits past the first; a graceful restart
persists first and loses nothing.

Real backend only: the model-backed 5.x server has no restart of its POP state over the wire (its kill_broker and
restart_broker restart the 4.x broker's state; the POP half's `on_broker_restart` is the model's, checked by
properties/test_pop_broker.py and properties/test_pop_fifo.py). Each crash is arranged just after a persist can be
seen: the broker writes store/config/consumerOffset.json every flushConsumerOffsetInterval (5 s) and
consumerOrderInfo.json every 10 s, so the crash comes well within a period; a run whose files were written after the
state it is about (the crash came after a persist after all) is arranged again, at most CRASH_TRIES times.

These tests restart the session's broker: the session's POP backend reconnects after each, and tox runs this module
last (differential-broker-5).
"""

from __future__ import annotations

import time

import attrs
import pytest

from conformance.codec.codes import ResponseCode
from differential import pop_probe as p
from differential.pop_probe import facts, requires_5x

pytestmark = requires_5x
__all__ = ["facts"]
CRASH_TRIES = 3
# After a start the revive service scans from its persisted offset; its first round begins within a revive round of
# the start (reviveInterval 1 s, at most REVIVE_LAG_MAX_MS), and reads the revive topic back to that offset.
REVIVE_AGAIN_S = (p.REVIVE_LAG_MAX_MS + p.OBSERVE_MARGIN_MS) / 1000 + 10
# How long a revived message that should not come back is watched for: one more revive round.
QUIET_S = 3.0


@attrs.frozen
class Arranged:
    """The three groups just before the crash: `revived` (c0 c1 popped in one checkpoint, c1 acked, c0's copy
    revived), `popped` (a0 popped, a1 not), `ordered` (b0 b1 popped orderly, b2 not); the wall times (ms) of the
    revived copy's store and of the two pops."""

    revived: p.Names
    popped: p.Names
    ordered: p.Names
    first_copy: object
    popped_handle: object
    ordered_batch: tuple
    revived_ms: int
    popped_ms: int
    ordered_ms: int


def arrange(backend) -> Arranged:
    revived = p.prepare(backend, "crashc", ["c0", "c1"])
    popped = p.prepare(backend, "crasha", ["a0", "a1"])
    ordered = p.prepare(backend, "crashb", ["b0", "b1", "b2"], fifo=True)
    batch = backend.pop(revived.group, revived.topic, p.INVISIBLE_MS, queue_id=0, max_nums=2).messages
    assert [m.key for m in batch] == ["c0", "c1"]
    assert backend.ack(revived.group, revived.topic, batch[1].handle) == ResponseCode.SUCCESS
    copy = p.wait_until(lambda: p.read_retry(backend, revived), p.REVIVE_LIMIT_S)[0]
    first = backend.pop(popped.group, popped.topic, p.LONG_MS, queue_id=0, max_nums=1).messages
    popped_ms = p.now_ms()
    in_flight = backend.pop(ordered.group, ordered.topic, p.LONG_MS, queue_id=0, max_nums=2, order=True,
                            attempt_id="a1").messages
    ordered_ms = p.now_ms()
    assert [m.key for m in first] == ["a0"] and [m.key for m in in_flight] == ["b0", "b1"]
    return Arranged(revived, popped, ordered, copy, first[0], tuple(in_flight), copy.store_timestamp, popped_ms,
                    ordered_ms)


def is_before_persist(arranged: Arranged, persisted: dict[str, float]) -> bool:
    """No persist came after the state the crash is about: the offsets' file older than the revive's copy and the
    pop, the order info's older than the orderly pop."""
    offsets_ms, order_ms = persisted["consumerOffset"] * 1000, persisted["consumerOrderInfo"] * 1000
    return offsets_ms < arranged.revived_ms and offsets_ms < arranged.popped_ms and order_ms < arranged.ordered_ms


def get_since(persisted_s: float, at_ms: int) -> int | None:
    return round(at_ms - persisted_s * 1000) if persisted_s else None


def crash_after(rocketmq5, backend, facts) -> Arranged:
    """Arrange, `kill -9`, and start again; again while a persist came in between (at most CRASH_TRIES)."""
    for attempt in range(1, CRASH_TRIES + 1):
        arranged = arrange(backend)
        rocketmq5.kill()
        persisted = rocketmq5.get_persist_times()
        rocketmq5.start()
        backend.reconnect()
        facts("crash: attempt, ms from the offsets' last persist to the revived copy / to the pop, from the order "
              "info's to the orderly pop (None: not persisted since the start), start seconds",
              (attempt, get_since(persisted["consumerOffset"], arranged.revived_ms),
               get_since(persisted["consumerOffset"], arranged.popped_ms),
               get_since(persisted["consumerOrderInfo"], arranged.ordered_ms), round(rocketmq5.start_seconds, 1)))
        if is_before_persist(arranged, persisted):
            return arranged
    pytest.fail(f"a persist came between the arranged state and the crash in each of {CRASH_TRIES} tries")


def count_revived(backend, names: p.Names, expected: int) -> list[str]:
    """The keys of the retry topic once it holds `expected` copies (or after REVIVE_AGAIN_S), then QUIET_S more."""
    try:
        p.wait_until(lambda: len(p.read_retry(backend, names)) >= expected, REVIVE_AGAIN_S)
    except TimeoutError:
        pass
    time.sleep(QUIET_S)
    return p.keys_of(p.read_retry(backend, names))


@pytest.mark.rules("PO-10", "FF-05")
def test_a_crash_pops_again_revives_again_and_lets_an_orderly_ack_skip_ahead(rocketmq5, real_pop_backend, facts):
    backend = real_pop_backend
    arranged = crash_after(rocketmq5, backend, facts)
    popped, ordered = arranged.popped, arranged.ordered
    again = p.pop_until(backend, popped, 30.0, p.LONG_MS, queue_id=0, max_nums=1)[0].messages
    skip_ack = backend.ack(ordered.group, ordered.topic, arranged.ordered_batch[1].handle)
    committed = backend.committed_offset(ordered.group, ordered.topic, 0)
    next_orderly = p.pop_until(backend, ordered, 10.0, p.LONG_MS, queue_id=0, max_nums=1, order=True,
                               attempt_id="a2")[0].messages
    revived = count_revived(backend, arranged.revived, 2)
    facts("after a crash: popped again (key, reconsumeTimes) / retry copies of the revived group / orderly ack of "
          "b1's old handle, committed offset, next orderly pop",
          ([(m.key, m.reconsume_times) for m in again], revived, skip_ack, committed,
           [m.key for m in next_orderly]))
    assert [(m.key, m.reconsume_times) for m in again] == [("a0", 0)]  # a0 popped again while its handle is out
    assert revived == ["c0", "c0"]  # the checkpoint revived again, its acked c1 not
    assert skip_ack == ResponseCode.SUCCESS and committed == 2  # no order info: the ack commits past b0
    assert [m.key for m in next_orderly] == ["b2"]  # b0 is never delivered again


@pytest.mark.rules("PO-10")
def test_a_graceful_restart_pops_nothing_again(rocketmq5, real_pop_backend, facts):
    backend = real_pop_backend
    popped = p.prepare(backend, "grace", ["a0", "a1"])
    ordered = p.prepare(backend, "graceb", ["b0", "b1", "b2"], fifo=True)
    first = backend.pop(popped.group, popped.topic, p.LONG_MS, queue_id=0, max_nums=1).messages
    in_flight = backend.pop(ordered.group, ordered.topic, p.LONG_MS, queue_id=0, max_nums=2, order=True,
                            attempt_id="a1").messages
    rocketmq5.restart()
    backend.reconnect()
    after = p.pop_until(backend, popped, 30.0, p.LONG_MS, queue_id=0, max_nums=1)[0].messages
    blocked = backend.pop(ordered.group, ordered.topic, p.LONG_MS, queue_id=0, max_nums=1, order=True,
                          attempt_id="a2")
    ack_b1 = backend.ack(ordered.group, ordered.topic, in_flight[1].handle)
    committed = backend.committed_offset(ordered.group, ordered.topic, 0)
    facts("after a graceful restart: first pop (a0 in flight) / an orderly pop (b0 b1 in flight) / ack of b1, "
          "committed offset, start seconds",
          ([m.key for m in after], [m.key for m in blocked.messages], ack_b1, committed,
           round(rocketmq5.start_seconds, 1)))
    assert [m.key for m in first] == ["a0"] and [m.key for m in in_flight] == ["b0", "b1"]
    assert [m.key for m in after] == ["a1"]  # a0's pop offset was persisted at the shutdown
    assert blocked.messages == ()  # the order info too: the queue is still blocked by b0 b1
    assert ack_b1 == ResponseCode.SUCCESS and committed <= 0  # and b1's ack does not skip b0
