"""The proxy's configuration (ProxyConfig, 5.3.3 defaults) and the settings it gives a gRPC consumer of a group
(GrpcClientSettingsManager, spec/16-proxy.md)."""

from __future__ import annotations

from attrs import frozen

from model.broker.pop.retry_policy import (
    CustomizedRetryPolicy,
    ExponentialRetryPolicy,
    GroupRetryPolicyType,
    compute_next_delay,
)
from model.broker.pop.state import PopBroker, get_pop_group


@frozen
class ProxyConfig:
    """The ProxyConfig fields the receive, ack and renew paths read, at their defaults."""

    min_invisible_time_mills_for_recv: int = 10_000
    max_invisible_time_mills: int = 12 * 3600 * 1000
    default_invisible_time_mills: int = 60_000
    enable_proxy_auto_renew: bool = True
    renew_max_time_millis: int = 3 * 3600 * 1000
    max_msg_nums_for_pop_request: int = 32
    # The auto-renew (PD-07): a held message is renewed once its next visible time is this close, by a scan every
    # renew_schedule_period_millis; a renewal that failed this often is given up; a client gone offline leaves its
    # messages visible again after invisible_time_millis_when_clear.
    renew_ahead_time_millis: int = 10_000
    renew_schedule_period_millis: int = 5_000
    max_renew_retry_times: int = 3
    invisible_time_millis_when_clear: int = 1_000


DEFAULT_PROXY_CONFIG = ProxyConfig()


@frozen
class ConsumerSettings:
    """[RP-03] The Settings a gRPC consumer of the group receives: FIFO or not, maxAttempts, and the backoff policy
    (an exponential policy, or a customized list of delays in ms)."""

    fifo: bool
    max_attempts: int
    backoff: CustomizedRetryPolicy | ExponentialRetryPolicy


def compute_consumer_settings(state: PopBroker, group: str) -> ConsumerSettings:
    """[RP-03] mergeSubscriptionData: maxAttempts = retryMaxTimes + 1, fifo = consumeMessageOrderly, and the group's
    retry policy as the backoff — an EXPONENTIAL group without parameters gets the exponential defaults here
    (where GroupRetryPolicy.getRetryPolicy gives the customized default, RP-03); a group the broker does not know
    gets the defaults of a new SubscriptionGroupConfig."""
    broker_group = state.broker.groups.get(group)
    retry_max_times = broker_group.retry_max_times if broker_group is not None else 16
    pop_group = get_pop_group(state, group)
    policy = pop_group.retry_policy
    if policy.type is GroupRetryPolicyType.EXPONENTIAL:
        backoff = policy.exponential or ExponentialRetryPolicy()
    else:
        backoff = policy.customized or CustomizedRetryPolicy()
    return ConsumerSettings(pop_group.consume_message_orderly, retry_max_times + 1, backoff)


def compute_stop_renew_delay(state: PopBroker, group: str, reconsume_times: int) -> int:
    """[RP-04] The invisible time the proxy's auto-renew sets when it stops renewing a message held longer than
    renewMaxTimeMillis: the group policy's nextDelayDuration(reconsumeTimes), read through getRetryPolicy."""
    return compute_next_delay(get_pop_group(state, group).retry_policy, reconsume_times)
