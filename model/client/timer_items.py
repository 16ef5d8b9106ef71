"""The client's timed work, put on the cluster's timer heap (`Cluster.timers`, keyed by (virtual ms, sequence)) and
fired by model/system/scheduler.py: pulls, rebalances, 5 s resubmissions, offset persistence, the consume service's
timers and the OFFSET_ILLEGAL repair."""

from __future__ import annotations

from typing import Any, NamedTuple

from attrs import frozen

from model.values.message import Message, MessageQueue


class PullDue(NamedTuple):
    """One pull of a queue falls due (a named tuple: one is scheduled per pull, benchmarks/NOTES.md)."""

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
