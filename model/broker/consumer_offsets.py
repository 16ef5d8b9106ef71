"""The broker's consumer offsets (ConsumerOffsetManager): the committed offset of each (group, topic, queue id)."""

from __future__ import annotations

from model.broker.state import Broker
from model.values.records import evolve


def commit_offset(broker: Broker, group: str, topic: str, queue_id: int, offset: int) -> Broker:
    """[OS-05] The broker stores a committed offset unconditionally: a smaller value replaces a larger one."""
    return evolve(broker, consumer_offsets=broker.consumer_offsets.set((group, topic, queue_id), offset))


def query_offset(broker: Broker, group: str, topic: str, queue_id: int) -> int:
    """The committed offset, or -1 when the group never committed one for that queue."""
    return broker.consumer_offsets.get((group, topic, queue_id), -1)


def on_query_consumer_offset(broker: Broker, group: str, topic: str, queue_id: int, min_offset: int = 0,
                             needs_stored_head: bool = False) -> int | None:
    """[RB-04] QUERY_CONSUMER_OFFSET: the committed offset; with none, 0 while the queue's first message is still
    stored (the model's store keeps every message in memory, so checkInDiskByConsumeOffset is false), else None:
    QUERY_NOT_FOUND. With `needs_stored_head` (5.1.0+: checkInMemByConsumeOffset) the first message must exist: a
    queue that never held one is QUERY_NOT_FOUND too."""
    stored = query_offset(broker, group, topic, queue_id)
    if stored >= 0:
        return stored
    if min_offset > 0 or (needs_stored_head and broker.store.get_max_offset_in_queue(topic, queue_id) <= 0):
        return None
    return 0
