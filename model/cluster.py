"""The state of the whole modelled cluster — one broker, one consumer group of push-consumer instances — and the
events and observations of its step function (spec/11-guarantees.md).

`System` is a value. `model.system.step(system, event)` returns the next value and the observations a user of a
real cluster could see: listener invocations, send-back outcomes, DLQ arrivals, committed and persisted offsets.
Timed behaviour (pull loops, 5 s resubmissions, offset persistence, cleanExpiredMsg, the broker's delay timer)
sits in `System.timers`, a persistent heap keyed by (virtual ms, sequence).

The records built at every consumed message (events, requests, observations) are declared `@record`
(model/records.py: frozen, dict-based): attrs' `__init__` of a frozen slotted class calls `object.__setattr__` once
per field, a `@record`'s stores one dict (callgrind: 1.1 % fewer instructions per message in
benchmarks/bench_system.py, together with the store's and offset store's records).
"""

from __future__ import annotations

import enum
from typing import Any

import immutables
from attrs import field, frozen

from model.broker import Broker
from model.config import Config
from model.fifo import Fifo
from model.message import Message, MessageQueue
from model.records import bounded_repr, record
from model.store import compute_logged_message

GROUP = "please_rename_unique_group_name"
TOPIC = "TopicTest"


class ConsumeStatus(enum.Enum):
    """What a concurrently listener returns; `None` from the listener and an exception both mean RECONSUME_LATER."""

    CONSUME_SUCCESS = "CONSUME_SUCCESS"
    RECONSUME_LATER = "RECONSUME_LATER"
    EXCEPTION = "EXCEPTION"
    NULL = "NULL"


ACK_INDEX_DEFAULT = 2**31 - 1


@frozen
class ListenerResult:
    """One listener invocation's outcome and the context fields the application set (CCC defaults: 0, MAX)."""

    status: ConsumeStatus = ConsumeStatus.CONSUME_SUCCESS
    ack_index: int = ACK_INDEX_DEFAULT
    delay_level_when_next_consume: int = 0


# ---------------------------------------------------------------- external events (inputs of `step`)


@record
class Produce:
    """A producer sends one message to `TOPIC` queue `queue_id` (optionally with tags and a delay level)."""

    uniq_key: str
    queue_id: int = 0
    tags: str | None = None
    delay_level: int = 0


@record
class CompleteConsume:
    """A running listener invocation returns; the two flags inject a failing send-back RPC / fallback send."""

    request_id: int
    result: ListenerResult = ListenerResult()
    send_back_rpc_fails: bool = False
    fallback_fails: bool = False


@frozen
class Advance:
    """The virtual clock moves to `until`, firing every timer due on the way, in time order."""

    until: int


@frozen
class DeliverOneway:
    """A held one-way offset commit (index into `System.oneway`) reaches the broker now; `lose` drops it."""

    index: int
    lose: bool = False


@frozen
class SetMembers:
    """The group's live instances become `client_ids` (join, graceful leave); every live instance re-balances."""

    client_ids: tuple[str, ...]


@frozen
class Crash:
    """An instance dies hard: no persist, no shutdown hooks; its queues are re-balanced by the survivors."""

    client_id: str


@frozen
class LockRequestsFail:
    """From now on (`failing`) or no longer, the instance's lock requests to the broker fail before they arrive
    (a partition between the instance and the broker, a broker too busy to answer within 1 s): lockAll's lockBatch
    and lock(mq) throw, and the client changes nothing."""

    client_id: str
    failing: bool = True


@frozen
class ExpireQueueHead:
    """The broker deletes old commit-log files: offsets below `min_offset` of a queue are gone (OFFSET_ILLEGAL)."""

    queue: MessageQueue
    min_offset: int


# ---------------------------------------------------------------- timer items (inside `System.timers`)


@record
class PullDue:
    client_id: str
    incarnation: int
    queue: MessageQueue
    token: int
    # The broker held this pull (long polling) and now answers NO_NEW_MSG after 15 s without news.
    suspended: bool = False


@frozen
class RebalanceDue:
    """RebalanceService: every instance re-balances every 20 s (and at once on a membership change)."""

    client_id: str
    incarnation: int


@frozen
class Resubmit:
    """submitConsumeRequestLater: the messages come back to the consume service 5000 ms later."""

    client_id: str
    incarnation: int
    queue: MessageQueue
    generation: int
    messages: tuple[Message, ...]


@frozen
class PersistDue:
    client_id: str
    incarnation: int


@frozen
class ServiceTimer:
    """A timer of a consume service (cleanExpiredMsg for concurrently; lockAll / suspend for orderly)."""

    client_id: str
    incarnation: int
    kind: str
    payload: Any = None


@frozen
class OffsetIllegalFix:
    client_id: str
    incarnation: int
    queue: MessageQueue
    generation: int
    offset: int


# ---------------------------------------------------------------- state


@record
class ConsumeRequest:
    """A listener invocation in flight: which messages (as in the ProcessQueue), of which PQ generation."""

    request_id: int
    client_id: str
    incarnation: int
    queue: MessageQueue
    generation: int
    messages: tuple[Message, ...]
    started_at: int


@record  # copied several times per event: model.records.evolve copies its __dict__
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


@frozen
class OnewayCommit:
    """An UPDATE_CONSUMER_OFFSET one-way request in the network (held only when `System.hold_oneway`)."""

    client_id: str
    queue: MessageQueue
    offset: int
    sent_at: int
    lifetime: tuple[int, int] = (0, 0)


@record  # copied several times per event: model.records.evolve copies its __dict__
class System:
    __repr__ = bounded_repr  # [SY-12] a failure report never prints the whole state

    config: Config
    broker: Broker
    now: int = 0
    consumers: immutables.Map = field(factory=immutables.Map)
    members: tuple[str, ...] = ()
    timers: Any = None
    timer_seq: int = 0
    requests: immutables.Map = field(factory=immutables.Map)
    next_request_id: int = 1
    parked: immutables.Map = field(factory=immutables.Map)
    # Pulls held back by the count, size or span check: (client, queue) -> (first check, incarnation, token).
    flow_parked: immutables.Map = field(factory=immutables.Map)
    oneway: Fifo = field(factory=Fifo)
    hold_oneway: bool = False
    min_offsets: immutables.Map = field(factory=immutables.Map)
    pending_resubmits: int = 0
    topic_queue_nums: int = 2
    # The subscription's tag strings (None = "*") and their String.hashCode values, as the broker filters.
    subscription: frozenset | None = None
    subscription_codes: frozenset = frozenset()
    incarnations: int = 0
    # Instances whose lock requests currently fail (LockRequestsFail).
    lock_faults: frozenset = frozenset()


# ---------------------------------------------------------------- observations (outputs of `step`)


@record
class Produced:
    """A producer's message as the broker stored it (its msg id is the ORIGIN_MESSAGE_ID of its retries).

    It holds the commit-log record; `message` decodes it when read (a producer's observation is often dropped
    unread, and decoding builds the message and its property map), as model.schedule.Delivery does.
    """

    record: tuple
    time: int
    rules: tuple[str, ...] = ()

    @property
    def message(self) -> Message:
        return compute_logged_message(self.record)


@record
class ListenerInvoked:
    """The listener is called with these messages, as it sees them (topic reset, CONSUME_START_TIME set)."""

    client_id: str
    request_id: int
    queue: MessageQueue
    messages: tuple[Message, ...]
    time: int
    rules: tuple[str, ...] = ()


@record
class ConsumeProcessed:
    request_id: int
    status: ConsumeStatus
    ack_index: int
    succeeded: tuple[Message, ...]
    failed: tuple[Message, ...]
    discarded: bool
    time: int
    rules: tuple[str, ...] = ()


@record
class SendBackOutcome:
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


@record
class OffsetUpdated:
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


@record
class PullObserved:
    client_id: str
    queue: MessageQueue
    status: str
    offset: int
    next_offset: int
    found: int
    time: int
    rules: tuple[str, ...] = ()


@frozen
class Livelock:
    """[SY-12] More than MAX_TRANSITIONS_PER_INSTANT timers fell due at one virtual instant: the step stopped
    there instead of looping. `kinds` counts the kinds of timer that fired at that instant — the events of the
    cycle (a 5.2.0+ OFFSET_ILLEGAL repair, PL-10, shows OffsetIllegalFix and PullDue)."""

    time: int
    transitions: int
    kinds: tuple[tuple[str, int], ...]
    rules: tuple[str, ...] = ("SY-12",)


@frozen
class Note:
    """Any other rule a step exercised (flow control back-off, a discarded result, a dropped queue, ...)."""

    what: str
    time: int
    rules: tuple[str, ...] = ()
