"""The broker settings both backends apply: the real broker as broker.conf keys at start, the model-backed server
as its BrokerSettings (:func:`get_model_broker_settings`); then the same admin requests per example on both.

- ``messageDelayLevel``: 18 levels of 1 s — the real table's unit is the second — so that the broker's level
  arithmetic (3 + reconsumeTimes, the clamp to the last level) is RocketMQ's own, and every delay is 1 s.
- ``autoCreateSubscriptionGroup=false``: a group exists only when the table creates it, so an unknown group is
  refused (SB-01) as the model refuses it.
- ``brokerPermission``: 6 at start; examples set 4 (read-only) or 2 and back with UPDATE_BROKER_CONFIG.
- per group ``retryMaxTimes`` and ``retryQueueNums``: UPDATE_AND_CREATE_SUBSCRIPTIONGROUP, per example.
"""

from __future__ import annotations

from conformance.runner.settings import BrokerSettings

DELAY_LEVELS = 18
DELAY_SECONDS = 1


def get_real_broker_conf() -> dict[str, str]:
    return {
        "messageDelayLevel": " ".join([f"{DELAY_SECONDS}s"] * DELAY_LEVELS),
        "autoCreateSubscriptionGroup": "false",
        "brokerPermission": "6",
    }


def get_model_broker_settings() -> BrokerSettings:
    """The same table for the model-backed server: the delay table and the permission; groups are created per
    example (UPDATE_AND_CREATE_SUBSCRIPTIONGROUP) and none exists before, as with autoCreateSubscriptionGroup off."""
    conf = get_real_broker_conf()
    return BrokerSettings(message_delay_level=conf["messageDelayLevel"], broker_perm=int(conf["brokerPermission"]))
