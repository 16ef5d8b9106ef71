"""Delay levels: parsing `messageDelayLevel` and the derivations the scheduler uses (spec/01-configuration.md,
spec/03-store.md)."""

from __future__ import annotations

import unicodedata

from model.values.errors import ConfigError

DEFAULT_MESSAGE_DELAY_LEVEL = "1s 5s 10s 30s 1m 2m 3m 4m 5m 6m 7m 8m 9m 10m 20m 30m 1h 2h"
TIME_UNIT_MILLIS = {"s": 1000, "m": 60_000, "h": 3_600_000, "d": 86_400_000}
UNKNOWN_LEVEL_DELAY_MILLIS = 1000
LONG_MIN, LONG_MAX = -(2**63), 2**63 - 1
DEFAULT_RETRY_LEVEL_BASE = 3  # "delayLevel = 3 + reconsumeTimes": the first retry waits level 3 (10 s)


def parse_java_long(text: str) -> int | None:
    """Java's `Long.parseLong(text)`: an optional sign and at least one decimal digit (any Unicode decimal digit,
    as `Character.digit` takes), within a signed 64-bit long; None where Java throws NumberFormatException."""
    digits = text[1:] if text[:1] in ("+", "-") else text
    if not digits or any(unicodedata.decimal(ch, None) is None for ch in digits):
        return None
    value = int("".join(str(unicodedata.decimal(ch)) for ch in digits)) * (-1 if text[:1] == "-" else 1)
    return value if LONG_MIN <= value <= LONG_MAX else None


def compute_java_split(text: str) -> list[str]:
    """Java's `text.split(" ")`: split on every single space, then drop the trailing empty strings."""
    parts = text.split(" ")
    while parts and parts[-1] == "":
        parts.pop()
    return parts if text else [""]


def compute_long_product(a: int, b: int) -> int:
    """Java's `long` multiplication: the product wraps around to a signed 64-bit value."""
    return (a * b - LONG_MIN) % 2**64 + LONG_MIN


def parse_delay_level(text: object) -> tuple[int, ...]:
    """[CFG-03] `messageDelayLevel` as ScheduleMessageService.parseDelayLevel reads it: `split(" ")` (trailing
    empty entries dropped), each entry a `Long.parseLong` count and a unit s, m, h or d, times the unit in a Java
    long. Level i + 1 is the i-th entry; the maximum level is the number of entries. Returns the delays in ms.

    Where Java throws (an empty entry before the last non-empty one, an unknown unit, a count parseLong refuses)
    the broker does not start, and this raises ConfigError. A text of spaces only parses to no level in Java; the
    model needs at least one and refuses it too.
    """
    allowed = "space-separated entries like '10s' (a Java long and a unit s, m, h or d)"
    if not isinstance(text, str):
        raise ConfigError("message_delay_level", text, allowed)
    entries = compute_java_split(text)
    if not entries:
        raise ConfigError("message_delay_level", text, f"{allowed}; RocketMQ accepts no level at all, the model not")
    delays = []
    for position, entry in enumerate(entries):
        unit = TIME_UNIT_MILLIS.get(entry[-1:])
        count = parse_java_long(entry[:-1])
        if unit is None or count is None:
            raise ConfigError("message_delay_level", text, f"{allowed}; entry {position + 1} is {entry!r}")
        delays.append(compute_long_product(count, unit))
    return tuple(delays)


def compute_delay_millis(delays: tuple[int, ...], level: int) -> int:
    """[ST-03] The delay of a known level; an unknown level counts as 1000 ms (computeDeliverTimestamp)."""
    if 1 <= level <= len(delays):
        return delays[level - 1]
    return UNKNOWN_LEVEL_DELAY_MILLIS


def compute_deliver_timestamp(delays: tuple[int, ...], level: int, store_timestamp: int) -> int:
    """[ST-03] A delayed message is due at its store time plus the delay of its level."""
    return store_timestamp + compute_delay_millis(delays, level)


def delay_level_to_queue_id(level: int) -> int:
    """[ST-02] Level n is kept in queue n - 1 of SCHEDULE_TOPIC_XXXX."""
    return level - 1


def queue_id_to_delay_level(queue_id: int) -> int:
    """[ST-02] Queue q of SCHEDULE_TOPIC_XXXX holds level q + 1."""
    return queue_id + 1
