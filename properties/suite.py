"""The suite configuration: which profile, message model, consume mode and retry preset the machines run.

Set through environment variables (tox sets them per env; they work the same outside tox):
RMQSPEC_VERSION (a profile name, default 4.9.8), RMQSPEC_MESSAGE_MODEL (clustering | broadcasting),
RMQSPEC_CONSUME_MODE (concurrently | orderly), RMQSPEC_RETRY_PRESET (default | tight).
"""

from __future__ import annotations

import os

from model.config import Config
from model.errors import ConfigError

RETRY_PRESETS = {
    "default": {},
    # Reaches the DLQ and the by-design loss (retryQueueNums = 0) often.
    "tight": {"max_reconsume_times": 2, "retry_max_times": 2},
}


def get_suite_config(environ: dict[str, str] | None = None) -> Config:
    """The Config that the environment selects; a bad value raises ConfigError naming the variable's field."""
    env = os.environ if environ is None else environ
    preset = env.get("RMQSPEC_RETRY_PRESET", "default")
    if preset not in RETRY_PRESETS:
        raise ConfigError("retry_preset", preset, f"one of {', '.join(RETRY_PRESETS)}")
    return Config(
        profile=env.get("RMQSPEC_VERSION", "4.9.8"),
        message_model=env.get("RMQSPEC_MESSAGE_MODEL", "clustering"),
        consume_mode=env.get("RMQSPEC_CONSUME_MODE", "concurrently"),
        **RETRY_PRESETS[preset],
    )
