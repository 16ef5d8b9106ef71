"""Delay levels: parsing `messageDelayLevel` and what the scheduler derives from it (spec/01-configuration.md)."""

from __future__ import annotations

from model.errors import ConfigError

DEFAULT_MESSAGE_DELAY_LEVEL = "1s 5s 10s 30s 1m 2m 3m 4m 5m 6m 7m 8m 9m 10m 20m 30m 1h 2h"
TIME_UNIT_MILLIS = {"s": 1000, "m": 60_000, "h": 3_600_000, "d": 86_400_000}
UNKNOWN_LEVEL_DELAY_MILLIS = 1000


def parse_delay_level(text: object) -> tuple[int, ...]:
    """[CFG-03] `messageDelayLevel` is split on single spaces; each entry is a count and a unit s, m, h or d.

    Level i + 1 is the i-th entry; the maximum level is the number of entries. Returns the delays in ms.
    """
    allowed = "space-separated entries like '10s' (a whole number and a unit s, m, h or d)"
    if not isinstance(text, str) or not text:
        raise ConfigError("message_delay_level", text, allowed)
    delays = []
    for position, entry in enumerate(text.split(" ")):
        unit = TIME_UNIT_MILLIS.get(entry[-1:])
        count = entry[:-1]
        if unit is None or not count.isascii() or not count.isdigit():
            where = f"{allowed}; entry {position + 1} is {entry!r}"
            raise ConfigError("message_delay_level", text, where)
        delays.append(int(count) * unit)
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
