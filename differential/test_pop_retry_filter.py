"""The tag filter of a POP over the group's retry topic, on RocketMQ 5.3.3 and the model-backed server: the one
filter of a request is handed to the retry topic's reads too (PopMessageProcessor 5.3.3 L509-L541), and a revived
copy keeps its tags, so a pop subscribed to another tag passes the copy over (PO-05)."""

from __future__ import annotations

import pytest

from conformance.codec import pop
from differential import pop_probe as p
from differential.pop_probe import facts, requires_5x

pytestmark = requires_5x
__all__ = ["facts"]


@pytest.mark.rules("PO-05")
def test_a_tag_filter_passes_over_a_retry_copy_of_another_tag(pop_backend, facts):
    names = p.fresh("rtag")
    p.set_up(pop_backend, names)
    p.send_all(pop_backend, names, ["k0"], tag="b")
    first = pop_backend.pop(names.group, names.topic, p.INVISIBLE_MS)
    stored = p.wait_until(lambda: p.read_retry(pop_backend, names), p.REVIVE_LIMIT_S)
    tagged = pop_backend.pop(names.group, names.topic, p.LONG_MS, exp="a")
    retry = pop.get_retry_topic(names.group, names.topic)
    moved = p.wait_until(lambda: pop_backend.committed_offset(names.group, retry, 0) == 1, 5.0)
    everything = pop_backend.pop(names.group, names.topic, p.LONG_MS)
    facts("a tag-a pop over the retry copy of a tag-b message: (keys, code), then the group's retry offset",
          ([m.key for m in tagged.messages], tagged.code, pop_backend.committed_offset(names.group, retry, 0)))
    assert [m.key for m in first.messages] == ["k0"] and [m.properties.get("TAGS") for m in stored] == ["b"]
    assert (tagged.messages, moved, everything.messages) == ((), True, ())
