"""Ack and changeInvisibleTime on RocketMQ 5.3.3 and the model-backed server: an ack before the revive time keeps the
message from coming back, an ack after the revive does not stop the revived copy, a change gives a new handle (the
old one is then stale) and is not counted as an attempt — on the broker (remoting) and through the proxy (gRPC); a
change with an acked handle brings the message back; the proxy refuses an expired handle, and its handle after a
change keeps the batch's start offset, so a later ack of it misses."""

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
INVALID_RECEIPT_HANDLE = 40013  # apache.rocketmq.v2.Code


@pytest.mark.rules("PO-07", "IV-02")
def test_an_ack_before_the_revive_time_keeps_the_message_from_coming_back(pop_backend, facts):
    names = p.prepare(pop_backend, "ackin", ["k0", "k1"])
    acked, left = pop_backend.pop(names.group, names.topic, p.INVISIBLE_MS).messages
    assert pop_backend.ack(names.group, names.topic, acked.handle) == ResponseCode.SUCCESS
    copy = p.pop_until(pop_backend, names, p.REVIVE_LIMIT_S)[0].messages
    time.sleep(1.0)  # the acked k0's checkpoint is in the same revive round as k1's: give it a second more
    facts("keys revived after acking k0 and leaving k1", p.keys_of(p.read_retry(pop_backend, names)))
    assert [m.key for m in copy] == [left.key] == ["k1"]
    assert p.keys_of(p.read_retry(pop_backend, names)) == ["k1"]


@pytest.mark.rules("PO-07")
def test_an_ack_after_the_revive_does_not_stop_the_revived_copy(pop_backend, facts):
    names = p.prepare(pop_backend, "acklate")
    first = pop_backend.pop(names.group, names.topic, p.INVISIBLE_MS).messages[0]
    p.wait_until(lambda: p.read_retry(pop_backend, names), p.REVIVE_LIMIT_S)
    late = pop_backend.ack(names.group, names.topic, first.handle)
    copy = p.pop_until(pop_backend, names, p.REVIVE_LIMIT_S)[0].messages[0]
    facts("ack of the original handle after its revive: code, then the copy's reconsumeTimes",
          (late, copy.reconsume_times))
    assert late == ResponseCode.SUCCESS and (copy.key, copy.reconsume_times) == ("k0", 1)
    assert pop_backend.ack(names.group, names.topic, copy.handle) == ResponseCode.SUCCESS


@pytest.mark.rules("PO-08")
def test_change_invisible_time_gives_a_new_handle_and_is_not_an_attempt(pop_backend, facts):
    names = p.prepare(pop_backend, "chg")
    first = pop_backend.pop(names.group, names.topic, p.LONG_MS).messages[0]
    time.sleep(p.NEXT_MS_S)  # a change in the pop's millisecond gives the pop's own handle back (PO-11)
    code1, handle1 = pop_backend.change_invisible(names.group, names.topic, first.handle, p.LONG_MS)
    time.sleep(p.NEXT_MS_S)
    code2, handle2 = pop_backend.change_invisible(names.group, names.topic, handle1, p.INVISIBLE_MS)
    stale = pop_backend.ack(names.group, names.topic, first.handle)
    answer, seen_at = p.pop_until(pop_backend, names, p.REVIVE_LIMIT_S)
    copy = answer.messages[0]
    old, new = pop.decode_handle(first.handle), pop.decode_handle(handle2)
    facts("changeInvisibleTime x2 (60 s, then 1 s): codes, stale ack code, copy's reconsumeTimes, ms after new "
          "revive time", (code1, code2, stale, copy.reconsume_times, seen_at - new.revive_time))
    assert (code1, code2) == (ResponseCode.SUCCESS, ResponseCode.SUCCESS)
    assert len({first.handle, handle1, handle2}) == 3 and new.pop_time >= old.pop_time
    assert new.ck_offset == new.offset == old.offset and new.invisible_time == p.INVISIBLE_MS
    assert copy.reconsume_times == 1  # two changes, one revive: reconsumeTimes counts revives only
    assert seen_at - new.revive_time >= p.REVIVE_LAG_MIN_MS


@pytest.mark.rules("PO-08")
def test_grpc_change_invisible_duration_gives_a_new_handle_and_is_not_an_attempt(pop_backend, facts):
    names = p.prepare(pop_backend, "gchg")
    first = p.receive_until(pop_backend, names, 10.0)[0].messages[0]
    time.sleep(p.NEXT_MS_S)
    code1, handle1 = pop_backend.grpc_change_invisible(names.group, names.topic, first, p.LONG_MS)
    changed = attrs.evolve(first, handle=handle1)
    time.sleep(p.NEXT_MS_S)
    code2, handle2 = pop_backend.grpc_change_invisible(names.group, names.topic, changed, p.INVISIBLE_MS)
    answer, seen_at = p.receive_until(pop_backend, names, p.REVIVE_LIMIT_S)
    again = answer.messages[0]
    facts("gRPC ChangeInvisibleDuration x2: codes, attempts of the first and the next delivery, ms after revive time",
          (code1, code2, first.reconsume_times + 1, again.reconsume_times + 1, seen_at - p.get_revive_time(
              attrs.evolve(first, handle=handle2))))
    assert (code1, code2) == (CODE_OK, CODE_OK) and len({first.handle, handle1, handle2}) == 3
    assert (first.reconsume_times, again.reconsume_times) == (0, 1)
    assert pop_backend.grpc_ack(names.group, names.topic, again) == CODE_OK


@pytest.mark.rules("PO-09")
def test_a_change_with_an_acked_handle_brings_the_message_back(pop_backend, facts):
    names = p.prepare(pop_backend, "stale")
    message = pop_backend.pop(names.group, names.topic, p.LONG_MS).messages[0]
    acked = pop_backend.ack(names.group, names.topic, message.handle)
    code, _handle = pop_backend.change_invisible(names.group, names.topic, message.handle, p.INVISIBLE_MS)
    copy = p.pop_until(pop_backend, names, p.REVIVE_LIMIT_S)[0].messages[0]
    facts("ack, then a change with the same handle to 1 s: codes, then the message back (key, reconsumeTimes)",
          (acked, code, copy.key, copy.reconsume_times))
    assert (acked, code) == (ResponseCode.SUCCESS, ResponseCode.SUCCESS)
    assert (copy.key, copy.reconsume_times) == ("k0", 1)


@pytest.mark.rules("PD-05")
def test_the_proxy_refuses_an_expired_handle(pop_backend, facts):
    names = p.prepare(pop_backend, "expired")
    message = p.receive_until(pop_backend, names, 10.0, p.INVISIBLE_MS)[0].messages[0]
    time.sleep(p.INVISIBLE_MS / 1000 + 0.2)  # the handle's popTime + invisibleTime has passed; its revive has not
    acked = pop_backend.grpc_ack(names.group, names.topic, message)
    changed, _handle = pop_backend.grpc_change_invisible(names.group, names.topic, message, p.LONG_MS)
    facts("gRPC ack and change 1.2 s after a receive with 1 s", (acked, changed))
    assert acked == changed == INVALID_RECEIPT_HANDLE


@pytest.mark.rules("PD-06", "PG-04")
def test_the_proxys_changed_handle_keeps_the_batch_start_so_its_ack_misses(pop_backend, facts):
    """PG-04's smallest counterexample as the chapter gives it: receive two, nack the second, ack it with the handle
    the nack returned, wait: it comes back anyway."""
    names = p.prepare(pop_backend, "batch", ["k0", "k1"])
    received = p.receive_until(pop_backend, names, 10.0, p.LONG_MS, batch=2)[0].messages
    second = received[1]
    code, handle = pop_backend.grpc_change_invisible(names.group, names.topic, second, p.INVISIBLE_MS)
    acked = pop_backend.grpc_ack(names.group, names.topic, attrs.evolve(second, handle=handle))
    again = p.receive_until(pop_backend, names, p.REVIVE_LIMIT_S)[0].messages
    fields = handle.split(" ")
    start, offset = int(fields[0]), int(fields[7])
    facts("receive k0 k1, change k1 to 1 s, ack k1 with the new handle: new handle's start offset and offset, "
          "ack code, what comes back", (start, offset, acked, [(m.key, m.reconsume_times + 1) for m in again]))
    assert [m.key for m in received] == ["k0", "k1"] and (code, acked) == (CODE_OK, CODE_OK)
    assert (start, offset) == (0, 1)  # the broker's new checkpoint starts at 1: the ack names one that is not there
    assert [(m.key, m.reconsume_times) for m in again] == [("k1", 1)]
