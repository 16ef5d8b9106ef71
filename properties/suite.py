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

from model.values.config import Config
from model.values.errors import ConfigError

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


# Variable -> (the Config field it sets, its default).
CONFIG_VARIABLES = {
    "RMQSPEC_VERSION": ("profile", "4.9.8"),
    "RMQSPEC_MESSAGE_MODEL": ("message_model", "clustering"),
    "RMQSPEC_CONSUME_MODE": ("consume_mode", "concurrently"),
}


def get_retry_preset(environ: dict[str, str] | None = None) -> str:
    """RMQSPEC_RETRY_PRESET, checked; a bad value raises ConfigError naming the variable."""
    env = os.environ if environ is None else environ
    preset = env.get("RMQSPEC_RETRY_PRESET") or "default"
    if preset not in RETRY_PRESETS:
        raise ConfigError("RMQSPEC_RETRY_PRESET", preset, f"one of {', '.join(RETRY_PRESETS)}")
    return preset


def check_environment(environ: dict[str, str] | None = None) -> None:
    """Each configuration variable on its own (conftest.py calls this at session start, so a run fails on a bad
    value even when no collected module builds a Config): ConfigError naming the variable, value and valid values."""
    env = os.environ if environ is None else environ
    get_retry_preset(env)
    for variable, (name, default) in CONFIG_VARIABLES.items():
        value = env.get(variable) or default
        try:
            Config(**{name: value})
        except ConfigError as error:
            raise ConfigError(variable, value, error.allowed) from None


def get_suite_config(environ: dict[str, str] | None = None) -> Config:
    """The Config that the environment selects; a bad value raises ConfigError naming the variable."""
    env = os.environ if environ is None else environ
    check_environment(env)
    chosen = {name: env.get(variable) or default for variable, (name, default) in CONFIG_VARIABLES.items()}
    return Config(**chosen, **RETRY_PRESETS[get_retry_preset(env)])


def get_machine_config(environ: dict[str, str] | None = None, **overrides) -> Config:
    """The suite's Config with the small MACHINE_THRESHOLDS, and a machine's own `overrides` on top."""
    return evolve(get_suite_config(environ), **{**MACHINE_THRESHOLDS, **overrides})
