"""What the system step itself reports (spec/11-guarantees.md): a produced message as stored, and a livelock
stopped at one virtual instant (SY-12)."""

from __future__ import annotations

from typing import NamedTuple

from attrs import frozen

from model.broker.commit_log import CommitLogRecord, compute_logged_message
from model.values.message import Message


class Produced(NamedTuple):
    """A producer's message as the broker stored it (its msg id is the ORIGIN_MESSAGE_ID of its retries).

    It holds the commit-log record; `message` decodes it when read (a producer's observation is often dropped
    unread, and decoding builds the message and its property map), as model.broker.delay_timer.Delivery does.
    """

    record: CommitLogRecord
    time: int
    rules: tuple[str, ...] = ()

    @property
    def message(self) -> Message:
        return compute_logged_message(self.record)


@frozen
class Livelock:
    """[SY-12] More than MAX_TRANSITIONS_PER_INSTANT timers fell due at one virtual instant: the step stopped
    there instead of looping. `kinds` counts the kinds of timer that fired at that instant — the events of the
    cycle (a 5.2.0+ OFFSET_ILLEGAL repair, PL-10, shows OffsetIllegalFix and PullDue)."""

    time: int
    transitions: int
    kinds: tuple[tuple[str, int], ...]
    rules: tuple[str, ...] = ("SY-12",)
