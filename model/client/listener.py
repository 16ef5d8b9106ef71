"""What the application's concurrently listener returns (ConsumeConcurrentlyStatus and the context fields it
may set, spec/08-concurrently.md)."""

from __future__ import annotations

import enum

from attrs import frozen


class ConsumeStatus(enum.Enum):
    """What a concurrently listener returns; `None` from the listener and an exception both mean RECONSUME_LATER."""

    CONSUME_SUCCESS = "CONSUME_SUCCESS"
    RECONSUME_LATER = "RECONSUME_LATER"
    EXCEPTION = "EXCEPTION"
    NULL = "NULL"


# The members as module names: reading an enum's member through its class (`ConsumeStatus.NULL`) is a Python-level
# lookup on CPython 3.11 (EnumType defines __getattr__), and every consumed message's result is classified.
CONSUME_SUCCESS, RECONSUME_LATER, EXCEPTION, NULL = ConsumeStatus

ACK_INDEX_DEFAULT = 2**31 - 1


@frozen
class ListenerResult:
    """One listener invocation's outcome and the context fields the application set (CCC defaults: 0, MAX)."""

    status: ConsumeStatus = ConsumeStatus.CONSUME_SUCCESS
    ack_index: int = ACK_INDEX_DEFAULT
    delay_level_when_next_consume: int = 0
