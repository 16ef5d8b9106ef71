"""CFG-05's validators and converters (model.values.config.in_range, one_of), made inside each test.

`Config`'s validators are made once, when model.values.config is imported; mutmut runs a mutant in a process that has
imported it already, so only a validator made by the test itself reaches `in_range` or `one_of`. Each test makes a
small record with the field RocketMQ checks and checks what it accepts and the one-line error it raises otherwise:
the field, the value and what is allowed (the guide's rule for a bad setting).
"""

from __future__ import annotations

import pytest
from attrs import field, frozen

from model.values.config import ConsumeMode, MessageModel, in_range, one_of
from model.values.errors import ConfigError


def assert_refused(cls: type, name: str, value: object, allowed: str) -> None:
    """`cls(name=value)` raises one ConfigError naming the field, the value (as given) and what is allowed."""
    with pytest.raises(ConfigError) as refused:
        cls(**{name: value})
    error = refused.value
    assert (error.field, error.value, type(error.value), error.allowed) == (name, value, type(value), allowed)
    assert str(error) == f"{name}={value!r} is not allowed: expected {allowed}"
    assert error.__cause__ is None and error.__suppress_context__ == (error.__context__ is not None)


def make_topic_thresholds() -> type:
    """checkConfig's pullThresholdForTopic and pullThresholdSizeForTopic: -1 (off) or in [1, 6553500] and [1, 102400]
    (DefaultMQPushConsumerImpl.checkConfig, rocketmq-all-4.9.8
    client/src/main/java/org/apache/rocketmq/client/impl/consumer/DefaultMQPushConsumerImpl.java L786-L811)."""

    @frozen
    class TopicThresholds:
        pull_threshold_for_topic: int = field(default=-1, validator=in_range(1, 6553500, disabled=-1))
        pull_threshold_size_for_topic: int = field(default=-1, validator=in_range(1, 102400, disabled=-1))

    return TopicThresholds


def test_a_topic_threshold_is_minus_one_or_in_its_range():
    """CFG-05: -1 and both ends are accepted; 0, -2 and one past the top are refused."""
    thresholds = make_topic_thresholds()
    for value in (-1, 1, 6553500, 1000):
        assert thresholds(pull_threshold_for_topic=value).pull_threshold_for_topic == value
    for value in (0, -2, 6553501):
        assert_refused(thresholds, "pull_threshold_for_topic", value, "an integer in [1, 6553500] or -1")
    assert_refused(thresholds, "pull_threshold_size_for_topic", 102401, "an integer in [1, 102400] or -1")


def make_pull_settings() -> type:
    """checkConfig's pullInterval in [0, 65535] and pullBatchSize in [1, 1024], with no "off" value (L813-L837)."""

    @frozen
    class PullSettings:
        pull_interval: int = field(default=0, validator=in_range(0, 65535))
        pull_batch_size: int = field(default=32, validator=in_range(1, 1024))

    return PullSettings


def test_a_range_without_an_off_value_accepts_its_ends_and_only_integers():
    """CFG-05: [0, 65535] accepts 0 and 65535 and refuses -1 (no "or -1" in its message); a float, even one inside
    the range, a text and a bool are not integers (Java's fields are ints)."""
    settings = make_pull_settings()
    assert settings(pull_interval=0, pull_batch_size=1) == settings(0, 1)
    assert settings(pull_interval=65535, pull_batch_size=1024).pull_batch_size == 1024
    for value in (-1, 1.5, 3.0, "5", True):
        assert_refused(settings, "pull_interval", value, "an integer in [0, 65535]")
    assert_refused(settings, "pull_batch_size", 0, "an integer in [1, 1024]")


def make_consumer_modes() -> type:
    """The consumer's messageModel (MessageModel: BROADCASTING, CLUSTERING, rocketmq-all-4.9.8
    common/src/main/java/org/apache/rocketmq/common/protocol/heartbeat/MessageModel.java L26-L35) and its listener
    kind (concurrently or orderly), as members or their values."""

    @frozen
    class ConsumerModes:
        message_model: MessageModel = field(default=MessageModel.CLUSTERING,
                                            converter=one_of("message_model", MessageModel))
        consume_mode: ConsumeMode = field(default=ConsumeMode.CONCURRENTLY,
                                          converter=one_of("consume_mode", ConsumeMode))

    return ConsumerModes


def test_a_mode_is_a_member_or_its_value_and_anything_else_is_refused_naming_the_members():
    """CFG-05: one_of converts a value to its member; anything else raises one ConfigError that lists the values."""
    modes = make_consumer_modes()
    assert modes("broadcasting", "orderly") == modes(MessageModel.BROADCASTING, ConsumeMode.ORDERLY)
    assert modes(message_model="clustering").message_model is MessageModel.CLUSTERING
    for value in ("BROADCASTING", None, 1):
        assert_refused(modes, "message_model", value, "one of clustering, broadcasting")
    assert_refused(modes, "consume_mode", "fifo", "one of concurrently, orderly")
