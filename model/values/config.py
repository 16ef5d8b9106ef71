"""The one frozen configuration of a modelled consumer group and its broker (spec/01-configuration.md).

Field names are RocketMQ's own, in snake_case; defaults are RocketMQ 4.9.8's. Every field is checked by one
validator that raises `ConfigError` naming the field, the value and the allowed range.
"""

from __future__ import annotations

import enum

from attrs import field, frozen

from model.values.delay_levels import DEFAULT_MESSAGE_DELAY_LEVEL, parse_delay_level
from model.values.errors import ConfigError
from model.values.profiles import BASELINE, Profile, get_profile

INTEGER_MAX_VALUE = 2**31 - 1


class MessageModel(enum.Enum):
    CLUSTERING = "clustering"
    BROADCASTING = "broadcasting"


class ConsumeMode(enum.Enum):
    CONCURRENTLY = "concurrently"
    ORDERLY = "orderly"


# Read once: an enum member read through its class is a Python-level lookup on CPython 3.11 (EnumType.__getattr__),
# and every event asks the configuration for its model and mode.
CLUSTERING, ORDERLY = MessageModel.CLUSTERING, ConsumeMode.ORDERLY


class ConsumeFromWhere(enum.Enum):
    CONSUME_FROM_LAST_OFFSET = "last"
    CONSUME_FROM_FIRST_OFFSET = "first"
    CONSUME_FROM_TIMESTAMP = "timestamp"


def in_range(low: int, high: int, *, disabled: int | None = None):
    """[CFG-05] A validator for an int field in [low, high] (or exactly `disabled`, RocketMQ's "-1 = off")."""
    allowed = f"an integer in [{low}, {high}]" + (f" or {disabled}" if disabled is not None else "")

    def check(_instance, attribute, value):
        if type(value) is not int or not (low <= value <= high or value == disabled):
            raise ConfigError(attribute.name, value, allowed)

    return check


def one_of(name: str, kind: type[enum.Enum]):
    """A converter for field `name` that accepts an enum member or its value and rejects everything else."""
    allowed = f"one of {', '.join(member.value for member in kind)}"

    def convert(value):
        if isinstance(value, kind):
            return value
        try:
            return kind(value)
        except (ValueError, TypeError):
            raise ConfigError(name, value, allowed) from None

    return convert


def to_profile(value: object) -> Profile:
    return value if isinstance(value, Profile) else get_profile(value)


def is_bool(_instance, attribute, value):
    if type(value) is not bool:
        raise ConfigError(attribute.name, value, "true or false")


@frozen
class Config:
    """[CFG-01] Every knob of the reference (§1.8, §4.1, §5.1, §10), with RocketMQ 4.9.8's defaults."""

    profile: Profile = field(default=BASELINE, converter=to_profile)
    message_model: MessageModel = field(
        default=MessageModel.CLUSTERING, converter=one_of("message_model", MessageModel)
    )
    consume_mode: ConsumeMode = field(
        default=ConsumeMode.CONCURRENTLY, converter=one_of("consume_mode", ConsumeMode)
    )
    consume_from_where: ConsumeFromWhere = field(
        default=ConsumeFromWhere.CONSUME_FROM_LAST_OFFSET, converter=one_of("consume_from_where", ConsumeFromWhere)
    )
    consume_thread_min: int = field(default=20, validator=in_range(1, 1000))
    consume_thread_max: int = field(default=20, validator=in_range(1, 1000))
    consume_message_batch_max_size: int = field(default=1, validator=in_range(1, 1024))
    pull_batch_size: int = field(default=32, validator=in_range(1, 1024))
    pull_interval: int = field(default=0, validator=in_range(0, 65535))
    pull_threshold_for_queue: int = field(default=1000, validator=in_range(1, 65535))
    pull_threshold_size_for_queue: int = field(default=100, validator=in_range(1, 1024))
    pull_threshold_for_topic: int = field(default=-1, validator=in_range(1, 6553500, disabled=-1))
    pull_threshold_size_for_topic: int = field(default=-1, validator=in_range(1, 102400, disabled=-1))
    consume_concurrently_max_span: int = field(default=2000, validator=in_range(1, 65535))
    consume_timeout: int = field(default=15, validator=in_range(1, 35_791))  # minutes; period of a fixed-rate task
    max_reconsume_times: int = field(default=-1, validator=in_range(-1, INTEGER_MAX_VALUE))
    suspend_current_queue_time_millis: int = field(default=1000, validator=in_range(0, INTEGER_MAX_VALUE))
    persist_consumer_offset_interval: int = field(default=5000, validator=in_range(1, INTEGER_MAX_VALUE))
    pull_time_delay_mills_when_exception: int = field(default=1000, validator=in_range(0, INTEGER_MAX_VALUE))
    client_version_at_least_3_4_9: bool = field(default=True, validator=is_bool)
    retry_queue_nums: int = field(default=1, validator=in_range(0, 65535))
    retry_max_times: int = field(default=16, validator=in_range(0, INTEGER_MAX_VALUE))
    message_delay_level: str = field(default=DEFAULT_MESSAGE_DELAY_LEVEL)
    flush_delay_offset_interval: int = field(default=10_000, validator=in_range(1, INTEGER_MAX_VALUE))
    delay_levels: tuple[int, ...] = field(init=False, eq=False, repr=False)

    def __attrs_post_init__(self) -> None:
        if self.consume_thread_min > self.consume_thread_max:
            raise ConfigError(
                "consume_thread_min", self.consume_thread_min, f"at most consume_thread_max={self.consume_thread_max}"
            )
        object.__setattr__(self, "delay_levels", parse_delay_level(self.message_delay_level))

    @property
    def max_delay_level(self) -> int:
        """[CFG-03] The number of configured delay levels (18 by default)."""
        return len(self.delay_levels)

    @property
    def is_clustering(self) -> bool:
        return self.message_model is CLUSTERING

    @property
    def is_orderly(self) -> bool:
        return self.consume_mode is ORDERLY


def get_max_reconsume_times(config: Config) -> int:
    """[CFG-02] maxReconsumeTimes -1 means 16 for a concurrently consumer and Integer.MAX_VALUE for an orderly one."""
    if config.max_reconsume_times != -1:
        return config.max_reconsume_times
    return INTEGER_MAX_VALUE if config.is_orderly else 16


def compute_suspend_millis(config: Config, context_millis: int = -1) -> int:
    """[CFG-04] An orderly suspend lasts the context's time (-1: the consumer's), clamped to [10, 30000] ms."""
    millis = config.suspend_current_queue_time_millis if context_millis == -1 else context_millis
    return min(max(millis, 10), 30_000)
