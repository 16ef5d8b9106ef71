"""The suite configuration: which profile, message model, consume mode and retry preset the machines run.

Set through environment variables (tox sets them per env; they work the same outside tox):
RMQSPEC_VERSION (a profile name, default 4.9.8), RMQSPEC_MESSAGE_MODEL (clustering | broadcasting),
RMQSPEC_CONSUME_MODE (concurrently | orderly), RMQSPEC_RETRY_PRESET (default | tight).

Machines run `get_machine_config()`: the suite's Config with flow-control thresholds small enough to bind within a
few steps. Nothing else is changed, so a machine under the default preset really has maxReconsumeTimes 16.
"""

from __future__ import annotations

import os

from attrs import evolve

from model.config import Config
from model.errors import ConfigError

RETRY_PRESETS = {
    "default": {},
    # Two retries, then the DLQ: a machine reaches it within a few failures and two clock jumps.
    "tight": {"max_reconsume_times": 2, "retry_max_times": 2},
}
# The group's retryQueueNums a machine draws from, per preset: 0 is SY-10's by-design loss (the broker answers
# SUCCESS and stores nothing), so the tight preset draws it in every third run.
RETRY_QUEUE_NUMS = {"default": (1, 1, 1, 2, 0), "tight": (0, 1, 1)}
# pullThresholdForQueue, pullBatchSize, consumeConcurrentlyMaxSpan, consumeMessageBatchMaxSize scaled down from
# 1000 / 32 / 2000 / 1 so that count, span and batch splitting all bind within a 30-step run.
MACHINE_THRESHOLDS = {
    "pull_threshold_for_queue": 6,
    "pull_batch_size": 4,
    "consume_concurrently_max_span": 8,
    "consume_message_batch_max_size": 2,
}


def get_retry_preset(environ: dict[str, str] | None = None) -> str:
    """RMQSPEC_RETRY_PRESET, checked; a bad value raises ConfigError."""
    env = os.environ if environ is None else environ
    preset = env.get("RMQSPEC_RETRY_PRESET", "default")
    if preset not in RETRY_PRESETS:
        raise ConfigError("retry_preset", preset, f"one of {', '.join(RETRY_PRESETS)}")
    return preset


def get_suite_config(environ: dict[str, str] | None = None) -> Config:
    """The Config that the environment selects; a bad value raises ConfigError naming the variable's field."""
    env = os.environ if environ is None else environ
    preset = get_retry_preset(env)
    return Config(
        profile=env.get("RMQSPEC_VERSION", "4.9.8"),
        message_model=env.get("RMQSPEC_MESSAGE_MODEL", "clustering"),
        consume_mode=env.get("RMQSPEC_CONSUME_MODE", "concurrently"),
        **RETRY_PRESETS[preset],
    )


def get_machine_config(environ: dict[str, str] | None = None, **overrides) -> Config:
    """The suite's Config with the small MACHINE_THRESHOLDS, and a machine's own `overrides` on top."""
    return evolve(get_suite_config(environ), **{**MACHINE_THRESHOLDS, **overrides})
