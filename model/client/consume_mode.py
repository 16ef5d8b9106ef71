"""The one place where `config.consume_mode` chooses how pulled messages are consumed (spec/08-concurrently.md,
spec/12-orderly.md): the pull loop, rebalance and the system's timers ask it for the consume service."""

from __future__ import annotations

from model.client.concurrently import CONCURRENTLY_SERVICE
from model.client.consume_service import ConsumeService
from model.client.orderly_service import ORDERLY_SERVICE
from model.values.config import Config, ConsumeMode

# (mode, service) pairs, compared by identity: an enum member's hash is a Python-level call, and every event asks.
_SERVICES: list[tuple[ConsumeMode, ConsumeService]] = []


def get_consume_service(config: Config) -> ConsumeService:
    """[CC-01] The consume service is chosen once, by `config.consume_mode`."""
    mode = config.consume_mode
    for known, service in _SERVICES:
        if known is mode:
            return service
    service = ORDERLY_SERVICE if mode is ConsumeMode.ORDERLY else CONCURRENTLY_SERVICE
    _SERVICES.append((mode, service))
    return service
