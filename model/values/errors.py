"""Typed errors of the model: bad configuration and illegal transitions."""

from __future__ import annotations


class ConfigError(ValueError):
    """A configuration value is outside what RocketMQ (or the model) allows.

    The message always names the field, the value and what is allowed, so a user never has to guess which knob
    to fix.
    """

    def __init__(self, field: str, value: object, allowed: str) -> None:
        self.field = field
        self.value = value
        self.allowed = allowed
        super().__init__(f"{field}={value!r} is not allowed: expected {allowed}")


class IllegalTransition(Exception):
    """An event arrived in a state that cannot accept it (h11-style: names the state and the event)."""

    def __init__(self, state: str, event: str, reason: str = "") -> None:
        self.state = state
        self.event = event
        self.reason = reason
        suffix = f": {reason}" if reason else ""
        super().__init__(f"event {event} is illegal in state {state}{suffix}")
