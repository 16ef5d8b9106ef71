"""The client's flow control before a pull (spec/07-pull.md): too many or too large cached messages hold the pull
back for 50 ms; the consume service adds its own check (model/client/consume_service.py, `allows_pull`)."""

from __future__ import annotations

from model.client.process_queue import get_cached_msg_size_in_mib
from model.values.config import Config

# DefaultMQPushConsumerImpl.PULL_TIME_DELAY_MILLS_WHEN_CACHE_FLOW_CONTROL: the back-off of every cache check.
CACHE_FLOW_CONTROL_MILLIS = 50


def compute_cache_flow_control(config: Config, pq) -> tuple[int | None, tuple]:
    """[PL-02] Cached count > pullThresholdForQueue, or cached MiB > pullThresholdSizeForQueue (both strict) → try
    again in 50 ms; (None, ()) when the cache lets the pull through."""
    if pq.msg_count > config.pull_threshold_for_queue:
        return CACHE_FLOW_CONTROL_MILLIS, ("PL-02",)
    if get_cached_msg_size_in_mib(pq) > config.pull_threshold_size_for_queue:
        return CACHE_FLOW_CONTROL_MILLIS, ("PL-02",)
    return None, ()
