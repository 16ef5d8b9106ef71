"""The state of one push-consumer instance (spec/11-guarantees.md): its ProcessQueues, offsets and pull tokens, and
the listener invocations it has in flight."""

from __future__ import annotations

from typing import Any, NamedTuple

import immutables
from attrs import field

from model.values.message import Message, MessageQueue
from model.values.records import bounded_repr, record


class ConsumeRequest(NamedTuple):
    """A listener invocation in flight: which messages (as in the ProcessQueue), of which PQ generation.

    A named tuple: one is built per consumed message (benchmarks/NOTES.md)."""

    request_id: int
    client_id: str
    incarnation: int
    queue: MessageQueue
    generation: int
    messages: tuple[Message, ...]
    started_at: int


@record  # copied several times per event: model.values.records.evolve copies its __dict__
class ConsumerInstance:
    """One push-consumer instance (MQClientInstance + DefaultMQPushConsumerImpl of the group).

    `generations[mq]` identifies the ProcessQueue object: a request or timer of an older generation belongs to a
    dropped ProcessQueue. `service_state` is free for the consume service (the orderly service keeps its
    per-queue consume locks and suspensions there).
    """

    __repr__ = bounded_repr  # [SY-12] a failure report never prints the whole state
    client_id: str
    incarnation: int
    offset_store: Any
    process_queues: immutables.Map = field(factory=immutables.Map)
    generations: immutables.Map = field(factory=immutables.Map)
    next_offsets: immutables.Map = field(factory=immutables.Map)
    pull_tokens: immutables.Map = field(factory=immutables.Map)
    service_state: immutables.Map = field(factory=immutables.Map)

