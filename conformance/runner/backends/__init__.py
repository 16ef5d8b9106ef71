"""The backends the harness runs against: the model-backed server (``model``, the default), RocketMQ 4.9.8's broker
or RocketMQ 5.3.3's proxy with its broker (rocketmq5.py, for the POP probes).

``RMQSPEC_BACKEND`` chooses one (:func:`get_backend_name`); ``RMQSPEC_ROCKETMQ_HOME`` points the real backend at a
RocketMQ 4.x binary distribution's ``lib/`` folder instead of the 4.9.8 build beside the project.
"""

from __future__ import annotations

import os

from runenv.run_context import BACKENDS

__all__ = ["BACKENDS", "BackendSettingError", "get_backend_name"]


class BackendSettingError(ValueError):
    """A backend setting has a value the harness cannot use; the message is one line naming variable, value, choices."""

    def __init__(self, variable: str, value: object, allowed: str) -> None:
        self.variable = variable
        self.value = value
        super().__init__(f"{variable}={value!r} is not allowed: expected {allowed}")


def get_backend_name(environ: dict[str, str] | None = None) -> str:
    """``RMQSPEC_BACKEND``, checked: ``model`` when unset; a bad value raises BackendSettingError."""
    env = os.environ if environ is None else environ
    name = env.get("RMQSPEC_BACKEND", "model")
    if name not in BACKENDS:
        raise BackendSettingError("RMQSPEC_BACKEND", name, f"one of {', '.join(BACKENDS)}")
    return name
