"""POP and its checkpoint on RocketMQ 5.3.3: the group's offset moves when a message is popped, not when it is
acked; at-least-once rests on the checkpoint alone; what acks of unknown or out-of-range handles answer."""

from __future__ import annotations

import time

from conformance.codec import pop
from conformance.codec.codes import ResponseCode
from differential.pop_probe import INVISIBLE_MS, LONG_MS, facts, fresh, requires_5x, send_all, set_up, wait_until

pytestmark = requires_5x
__all__ = ["facts"]


def test_pop_moves_the_group_offset_before_any_ack(pop_backend, facts):
    names = fresh("off")
    set_up(pop_backend, names)
    send_all(pop_backend, names, ["k0", "k1", "k2"])
    before = pop_backend.committed_offset(names.group, names.topic, 0)
    answer = pop_backend.pop(names.group, names.topic, LONG_MS, max_nums=2)
    popped_at = time.monotonic()
    # the commit follows the checkpoint's write, which the broker may do after it answered (appendCkAsync)
    after_pop = wait_until(lambda: pop_backend.committed_offset(names.group, names.topic, 0) == 2 and 2, 2.0)
    facts("ms from the POP's answer until the group offset shows the popped messages",
          round((time.monotonic() - popped_at) * 1000))
    assert [m.key for m in answer.messages] == ["k0", "k1"]
    assert pop_backend.ack(names.group, names.topic, answer.messages[1].handle) == ResponseCode.SUCCESS
    after_ack = pop_backend.committed_offset(names.group, names.topic, 0)
    facts("group offset before pop / after popping 2 of 3 / after acking the 2nd", (before, after_pop, after_ack))
    assert (after_pop, after_ack) == (2, 2)
    # the unacked k0 is not popped again while invisible: the offset is past it, only its checkpoint holds it
    assert [m.key for m in pop_backend.pop(names.group, names.topic, LONG_MS).messages] == ["k2"]


def test_ack_answers_for_unknown_and_out_of_range_handles(pop_backend, facts):
    names = fresh("ack")
    set_up(pop_backend, names)
    send_all(pop_backend, names, ["k0"])
    message = pop_backend.pop(names.group, names.topic, LONG_MS).messages[0]
    parsed = pop.decode_handle(message.handle)
    beyond = pop.encode_handle(pop.Handle(5, parsed.pop_time, parsed.invisible_time, parsed.revive_qid, "0",
                                          parsed.broker_name, 0, 5))
    never_popped = pop.encode_handle(pop.Handle(0, parsed.pop_time - 1, INVISIBLE_MS, parsed.revive_qid, "0",
                                                parsed.broker_name, 0, 0))
    codes = {"offset beyond the queue": pop_backend.ack(names.group, names.topic, beyond),
             "a handle no pop gave": pop_backend.ack(names.group, names.topic, never_popped),
             "the real handle": pop_backend.ack(names.group, names.topic, message.handle),
             "the real handle again": pop_backend.ack(names.group, names.topic, message.handle)}
    facts("ACK_MESSAGE response codes", codes)
    assert codes["the real handle"] == ResponseCode.SUCCESS
    assert codes["offset beyond the queue"] != ResponseCode.SUCCESS
