"""The group retry policies of 5.x (SubscriptionGroupConfig.groupRetryPolicy, spec/16-proxy.md): the delay
before the next attempt as a function of reconsumeTimes."""

from __future__ import annotations

import enum

from attrs import frozen

# CustomizedRetryPolicy's default `next`: 1s 5s 10s 30s 1m 2m 3m 4m 5m 6m 7m 8m 9m 10m 20m 30m 1h 2h, in ms.
DEFAULT_NEXT = tuple(s * 1000 for s in (1, 5, 10, 30, 60, 120, 180, 240, 300, 360, 420, 480, 540, 600, 1200, 1800,
                                        3600, 7200))


class GroupRetryPolicyType(enum.Enum):
    EXPONENTIAL = "EXPONENTIAL"
    CUSTOMIZED = "CUSTOMIZED"


@frozen
class CustomizedRetryPolicy:
    next: tuple[int, ...] = DEFAULT_NEXT


@frozen
class ExponentialRetryPolicy:
    initial: int = 5000
    max: int = 7_200_000
    multiplier: int = 2


@frozen
class GroupRetryPolicy:
    """GroupRetryPolicy: a type and the parameters of each kind, either of which may be absent (null)."""

    type: GroupRetryPolicyType = GroupRetryPolicyType.CUSTOMIZED
    exponential: ExponentialRetryPolicy | None = None
    customized: CustomizedRetryPolicy | None = None


def compute_customized_delay(policy: CustomizedRetryPolicy, reconsume_times: int) -> int:
    """[RP-01] CustomizedRetryPolicy.nextDelayDuration: next[reconsumeTimes + 2], the index clamped to the list."""
    index = max(reconsume_times, 0) + 2
    return policy.next[min(index, len(policy.next) - 1)]


def compute_exponential_delay(policy: ExponentialRetryPolicy, reconsume_times: int) -> int:
    """[RP-02] ExponentialRetryPolicy.nextDelayDuration: min(max, initial * multiplier ** r), r clamped to
    [0, 32]."""
    times = min(max(reconsume_times, 0), 32)
    return min(policy.max, policy.initial * policy.multiplier ** times)


def get_retry_policy(group_policy: GroupRetryPolicy) -> CustomizedRetryPolicy | ExponentialRetryPolicy:
    """[RP-03] GroupRetryPolicy.getRetryPolicy: the policy of the type, or the customized default when that type's
    parameters are absent — an EXPONENTIAL group without parameters is read as the customized default here."""
    if group_policy.type is GroupRetryPolicyType.EXPONENTIAL:
        return group_policy.exponential or CustomizedRetryPolicy()
    return group_policy.customized or CustomizedRetryPolicy()


def compute_next_delay(group_policy: GroupRetryPolicy, reconsume_times: int) -> int:
    """[RP-04] The delay the proxy's auto-renew gives a message it stops renewing: the group policy's
    nextDelayDuration(reconsumeTimes)."""
    policy = get_retry_policy(group_policy)
    if isinstance(policy, ExponentialRetryPolicy):
        return compute_exponential_delay(policy, reconsume_times)
    return compute_customized_delay(policy, reconsume_times)
