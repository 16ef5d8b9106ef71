"""POP and its checkpoint on RocketMQ 5.3.3 and the model-backed server: a pop is refused before it reads; the
group's offset moves when a message is popped, not when it is acked, and past what the tag filter passes over;
at-least-once rests on the checkpoint alone (on the real broker: one per pop, in the revive topic); what acks of
unknown or out-of-range handles answer."""

from __future__ import annotations

import json
import time

import pytest

from conformance.codec import pop
from conformance.codec.codes import ResponseCode
from differential.pop_probe import INVISIBLE_MS, LONG_MS, facts, fresh, requires_5x, send_all, set_up, wait_until

pytestmark = requires_5x
__all__ = ["facts"]
REVIVE_TOPIC = "rmq_sys_REVIVE_LOG_DefaultCluster"  # PopAckConstants.buildClusterReviveTopic(cluster)


@pytest.mark.rules("PO-03")
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


@pytest.mark.rules("PO-07")
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


@pytest.mark.rules("PO-01")
def test_a_pop_is_refused_before_it_reads(pop_backend, facts):
    names = fresh("ref")
    set_up(pop_backend, names)
    send_all(pop_backend, names, ["k0"])
    codes = {"unknown topic": pop_backend.pop(names.group, names.topic + "-none", LONG_MS).code,
             "unknown group": pop_backend.pop(names.group + "-none", names.topic, LONG_MS).code,
             "33 messages": pop_backend.pop(names.group, names.topic, LONG_MS, max_nums=33).code,
             "queue 1 of a 1-queue topic": pop_backend.pop(names.group, names.topic, LONG_MS, queue_id=1).code}
    facts("POP_MESSAGE refusals", codes)
    assert codes == {"unknown topic": ResponseCode.TOPIC_NOT_EXIST,
                     "unknown group": ResponseCode.SUBSCRIPTION_GROUP_NOT_EXIST,
                     "33 messages": ResponseCode.INVALID_PARAMETER,
                     "queue 1 of a 1-queue topic": ResponseCode.INVALID_PARAMETER}
    # a refusal changed nothing: the group's first pop still finds k0 at offset 0
    assert [m.key for m in pop_backend.pop(names.group, names.topic, LONG_MS).messages] == ["k0"]


@pytest.mark.rules("RB-04")
def test_a_never_committed_empty_queue_is_not_found_on_5(pop_backend, facts):
    names = fresh("emptyq")
    set_up(pop_backend, names)
    empty = pop_backend.committed_offset(names.group, names.topic, 0)
    send_all(pop_backend, names, ["k0"])
    young = pop_backend.committed_offset(names.group, names.topic, 0)
    facts("QUERY_CONSUMER_OFFSET of a group with no offset: an empty queue, then with its first message",
          (empty, young))
    # checkInMemByConsumeOffset (5.1.0+) finds no first unit in an empty queue: QUERY_NOT_FOUND, read as -1
    assert (empty, young) == (-1, 0)


@pytest.mark.rules("PO-05")
def test_the_tag_filter_moves_the_offset_past_what_it_passes_over(pop_backend, facts):
    names = fresh("tagoff")
    set_up(pop_backend, names)
    for key in ("k0", "k1", "k2"):
        assert pop_backend.send(names.topic, 0, key.encode(), key, "a") == 0
    wait_until(lambda: pop_backend.max_offset(names.topic, 0) >= 3, 5.0)
    filtered = pop_backend.pop(names.group, names.topic, LONG_MS, exp="b")
    # the broker commits the offset past the scanned range without a checkpoint (addCkMock, within 5 ms)
    offset = wait_until(lambda: pop_backend.committed_offset(names.group, names.topic, 0) == 3 and 3, 2.0)
    later = pop_backend.pop(names.group, names.topic, LONG_MS)
    facts("POP tag b over three tag-a messages: code, committed offset, a later pop of *",
          (filtered.code, offset, [m.key for m in later.messages]))
    assert filtered.code == ResponseCode.POLLING_TIMEOUT and filtered.messages == ()
    assert later.messages == ()  # passed over for the group: never delivered to it


@pytest.mark.rules("PO-04")
def test_each_pop_writes_one_checkpoint_to_the_revive_topic(real_pop_backend, facts):
    """Real only: the model-backed server keeps its checkpoints in the model's state, not in a revive topic."""
    names = fresh("ck")
    set_up(real_pop_backend, names)
    send_all(real_pop_backend, names, ["k0", "k1"])
    answer = real_pop_backend.pop(names.group, names.topic, INVISIBLE_MS, max_nums=2)
    # the checkpoint is a timer message due 1 s before popTime + invisibleTime: with 1 s, at once
    found = wait_until(lambda: _read_checkpoints(real_pop_backend, names, answer.revive_qid), 5.0)
    facts("checkpoints in the revive queue after one POP of two messages (so, pt - header popTime, it, offsets)",
          [(c["so"], c["pt"] - answer.pop_time, c["it"], c.get("d")) for c in found])
    assert [(c["so"], c["pt"], c["it"], c["q"]) for c in found] == [(0, answer.pop_time, INVISIBLE_MS, 0)]


def _read_checkpoints(backend, names, revive_qid: int) -> list[dict]:
    """The checkpoints of this probe's group in revive queue `revive_qid` (tag ck, PopCheckPoint as JSON)."""
    stored = backend.read_topic(REVIVE_TOPIC, revive_qid)
    points = [json.loads(m.body) for m in stored if m.properties.get("TAGS") == "ck"]
    return [c for c in points if c.get("t") == names.topic and c.get("c") == names.group]
