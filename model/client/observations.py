"""What a user of a real cluster sees of the consumer group (spec/11-guarantees.md): listener invocations,
processed results, send-back outcomes, DLQ arrivals, offsets updated and committed, pulls, and notes of the other rules
a step exercised. The client's steps make them; `model.system.step.step` returns them.

The observations built at every consumed message are named tuples: read by name, built at a tuple's cost
(benchmarks/NOTES.md); the others are frozen attrs records.
"""

from __future__ import annotations

from typing import NamedTuple

from attrs import frozen

from model.client.listener import ConsumeStatus
from model.values.message import Message, MessageQueue


class ListenerInvoked(NamedTuple):
    """The listener is called with these messages, as it sees them (topic reset, CONSUME_START_TIME set)."""

    client_id: str
    request_id: int
    queue: MessageQueue
    messages: tuple[Message, ...]
    time: int
    rules: tuple[str, ...] = ()


class ConsumeProcessed(NamedTuple):
    request_id: int
    status: ConsumeStatus
    ack_index: int
    succeeded: tuple[Message, ...]
    failed: tuple[Message, ...]
    discarded: bool
    time: int
    rules: tuple[str, ...] = ()


class SendBackOutcome(NamedTuple):
    """One failed message's way back: `path` is "rpc", "fallback" or "failed" (local 5 s retry)."""

    message: Message
    path: str
    stored: Message | None
    delay_level: int
    time: int
    rules: tuple[str, ...] = ()


@frozen
class DlqArrival:
    message: Message
    time: int
    rules: tuple[str, ...] = ()


class OffsetUpdated(NamedTuple):
    """The client's in-memory offset of a queue (RemoteBrokerOffsetStore / LocalFileOffsetStore)."""

    client_id: str
    queue: MessageQueue
    offset: int
    time: int
    rules: tuple[str, ...] = ()
    # Which ProcessQueue lifetime: a re-added queue starts a new offset history (removeDirtyOffset).
    lifetime: tuple[int, int] = (0, 0)


@frozen
class OffsetCommitted:
    """The broker's persisted offset of a queue changed; `source` is "persist" (a one-way commit) or "pull" (the
    piggybacked offset); `lifetime` is the sending ProcessQueue's (incarnation, generation)."""

    queue: MessageQueue
    offset: int
    previous: int
    source: str
    time: int
    rules: tuple[str, ...] = ()
    lifetime: tuple[int, int] = (0, 0)


class PullObserved(NamedTuple):
    client_id: str
    queue: MessageQueue
    status: str
    offset: int
    next_offset: int
    found: int
    time: int
    rules: tuple[str, ...] = ()


@frozen
class Note:
    """Any other rule a step exercised (flow control back-off, a discarded result, a dropped queue, ...)."""

    what: str
    time: int
    rules: tuple[str, ...] = ()
