"""Edges of model/values' containers and wire values that the model's own use never reaches: a Fifo whose head has
moved, a log of named tuples made and read in the test, a SortedMap's default, a handle whose broker name holds a
non-space separator, and the group a change request names."""

from __future__ import annotations

from typing import NamedTuple

from model.values.append_log import AppendLog
from model.values.fifo import Fifo
from model.values.pop_wire import ChangeRequest, Handle, compute_change_request, decode_handle
from model.values.sorted_map import SortedMap


def test_a_fifo_whose_head_moved_iterates_and_compares_its_items():
    """`System.oneway`'s Fifo after its front was delivered: it holds only the later items, compares by content
    (a same-length Fifo with other items is different) and hashes as its items do."""
    fifo = Fifo().append("c0").append("c1").append("c2").delete(0)
    assert list(fifo) == ["c1", "c2"] and len(fifo) == 2
    assert fifo == Fifo().append("c1").append("c2") and hash(fifo) == hash(Fifo().append("c1").append("c2"))
    assert fifo != Fifo().append("c1").append("c3") and fifo != Fifo().append("c1")


class Entry(NamedTuple):
    offset: int
    topic: str


def test_a_log_of_named_tuples_gives_back_named_tuples_and_can_be_rebuilt_from_its_parts():
    """A log of a `kind` stores plain tuples and gives back the kind's named tuples — by index and by
    `get_entries` (a pulled batch), from a full chunk and from the tail; a log made from another's chunks, tail
    and length holds the same entries."""
    log = AppendLog(kind=Entry)
    for offset in range(40):  # a full chunk of 32, then a tail of 8
        log = log.append(Entry(offset, f"T{offset % 3}"))
    entries = log.get_entries([33, 0, 31, 39])
    assert entries == [Entry(33, "T0"), Entry(0, "T0"), Entry(31, "T1"), Entry(39, "T0")]
    assert all(type(entry) is Entry for entry in entries) and type(log[5]) is Entry
    assert log.get_stored([1]) == [(1, "T1")] and type(log.get_stored([1])[0]) is tuple
    rebuilt = AppendLog(log.chunks, log.tail, log.length, Entry)
    assert rebuilt == log and rebuilt.get_entries([0, 39]) == [Entry(0, "T0"), Entry(39, "T0")]
    assert type(rebuilt[0]) is Entry and list(rebuilt)[32] == Entry(32, "T2")


def test_a_sorted_map_gives_the_default_for_a_missing_key():
    """`get` as dict.get: the value when present (even None), else the default given."""
    offsets = SortedMap([(1, "a"), (2, None)])
    assert offsets.get(3, "d") == "d" and SortedMap().get(1, 0) == 0
    assert offsets.get(1, "d") == "a" and offsets.get(2, "d") is None and offsets.get(3) is None


def test_a_handle_is_split_at_single_spaces_only():
    """ExtraInfoUtil.split is `extraInfo.split(" ")` (rocketmq-all-5.3.3
    remoting/src/main/java/org/apache/rocketmq/remoting/protocol/header/ExtraInfoUtil.java L33-L38, KEY_SEPARATOR
    MessageConst L89): a tab in the broker name stays in the broker name."""
    handle = decode_handle("0 1000 60000 2 1 broker\ta 3 5", 77)
    assert handle == Handle(0, 1000, 60000, 2, "1", "broker\ta", 3, 5, 77)


def test_a_change_request_names_the_group_and_the_handles_real_topic():
    """DefaultMQPushConsumerImpl.changePopInvisibleTimeAsync (rocketmq-all-5.3.3
    client/src/main/java/org/apache/rocketmq/client/impl/consumer/DefaultMQPushConsumerImpl.java L857-L881): the
    header's topic is ExtraInfoUtil.getRealTopic — a v1 retry handle ("1") names %RETRY%{group}_{topic} (KeyBuilder
    L40-L42) — its queue and offset the handle's, its consumerGroup the consumer's group."""
    handle = Handle(0, 1000, 60000, 2, "1", "broker-a", 3, 5)
    assert compute_change_request("G", "T", handle, 5000) == ChangeRequest("G", "%RETRY%G_T", 3, 5, handle, 5000)
