"""The proxy's auto-renew of the messages a gRPC push consumer holds (ReceiptHandleProcessor,
DefaultReceiptHandleManager, spec/16-proxy.md PD-07): a receive with auto-renew keeps each message's handle; where
the scan runs at all (develop; never through 5.3.3: `is_renewing`), a scan every 5 s renews a handle whose
invisible time ends within 10 s, by a change of its invisible time to the next renew delay (1 m, 3 m, 5 m, 10 m,
30 m, then 1 h), until the message has been held 3 h (then RP-04's last change); the client's ack or change takes
the handle the proxy renewed last; a client gone offline gets its messages back after 1 s. Pure: the scan answers
what to ask the broker, the caller asks it (model/proxy/consumer.py's change) and hands the answer back."""

from __future__ import annotations

import enum

from attrs import frozen

from model.proxy.settings import DEFAULT_PROXY_CONFIG, ProxyConfig
from model.values.pop_wire import Handle
from model.values.profiles import Profile
from model.values.records import evolve

# RenewStrategyPolicy.next: the invisible time of the n-th renewal (the last one repeats).
RENEW_DELAYS_MS = (60_000, 180_000, 300_000, 600_000, 1_800_000, 3_600_000)
# What a refused renewal answers when it is not worth retrying: the failures renewExceptionNeedRetry refuses, and the
# broker's refusal of the change, answered (an AckResult not OK: the proxy's INTERNAL_SERVER_ERROR), not thrown.
FINAL_REFUSALS = frozenset({"INVALID_RECEIPT_HANDLE", "INVALID_BROKER_NAME", "INTERNAL_SERVER_ERROR"})


@frozen
class HeldHandle:
    """MessageReceiptHandle: a message an auto-renewed receive gave a client — its group, topic, the handle the
    proxy holds now, its reconsumeTimes, when it was received (consumeTimestamp), how often it was renewed and how
    often a renewal failed since the last success."""

    group: str
    topic: str
    handle: Handle
    reconsume_times: int
    consume_time: int
    renew_times: int = 0
    renew_retry_times: int = 0


class RenewKind(enum.Enum):
    RENEW = "RENEW"  # a change to the next renew delay; the handle is kept
    STOP_RENEW = "STOP_RENEW"  # held renewMaxTimeMillis: a last change to the group policy's delay, then dropped
    GIVE_UP = "GIVE_UP"  # renewals failed maxRenewRetryTimes: dropped, no change
    CLEAR = "CLEAR"  # the client is offline: a change to invisibleTimeMillisWhenClear, then dropped


@frozen
class Renewal:
    """What the scan asks for one held handle: the kind, and the invisible time of its change (0 for GIVE_UP)."""

    kind: RenewKind
    invisible_time: int = 0


def is_renewing(profile: Profile) -> bool:
    """[PD-07] Whether the renew scan runs at all: through 5.3.3 DefaultMessagingProcessor starts only its service
    manager, never the ReceiptHandleProcessor whose start schedules the scan (profile flag
    `proxy_renews_held_handles`), so the handles are kept but never renewed nor cleared."""
    return profile.proxy_renews_held_handles


def compute_renew_delay(renew_times: int) -> int:
    """[PD-07] RenewStrategyPolicy.nextDelayDuration: the renew delay of the renewal after `renew_times` ones."""
    return RENEW_DELAYS_MS[min(max(renew_times, 0), len(RENEW_DELAYS_MS) - 1)]


def compute_renewal(held: HeldHandle, now: int, stop_delay: int, online: bool = True,
                    proxy: ProxyConfig = DEFAULT_PROXY_CONFIG) -> Renewal | None:
    """[PD-07] scheduleRenewTask and startRenewMessage for one handle at a scan at `now` (`stop_delay`: RP-04's
    delay for its reconsumeTimes): a client offline clears it; nothing while its next visible time is more than
    renewAheadTimeMillis away; given up after maxRenewRetryTimes failed renewals; held less than
    renewMaxTimeMillis, renewed by the next renew delay; else renewed no more (RP-04)."""
    if not online:
        return Renewal(RenewKind.CLEAR, proxy.invisible_time_millis_when_clear)
    if held.handle.next_visible_time - now > proxy.renew_ahead_time_millis:
        return None
    if held.renew_retry_times >= proxy.max_renew_retry_times:
        return Renewal(RenewKind.GIVE_UP)
    if now - held.consume_time < proxy.renew_max_time_millis:
        return Renewal(RenewKind.RENEW, compute_renew_delay(held.renew_times))
    return Renewal(RenewKind.STOP_RENEW, stop_delay)


def on_renew_answer(held: HeldHandle, renewal: Renewal, code: str, handle: Handle | None) -> HeldHandle | None:
    """[PD-07] The held handle after its renewal's answer (None: dropped): a RENEW answered OK holds the new handle
    and counts one more renewal; a RENEW refused for good (an invalid handle or broker, or a change the broker
    refused) is dropped, failing otherwise (thrown: a timeout) it is retried at the next scan; every other kind
    drops it, whatever the answer."""
    if renewal.kind is not RenewKind.RENEW:
        return None
    if code == "OK" and handle is not None:
        return evolve(held, handle=handle, renew_times=held.renew_times + 1, renew_retry_times=0)
    if code in FINAL_REFUSALS:
        return None
    return evolve(held, renew_retry_times=held.renew_retry_times + 1)


def get_held_handle(held: HeldHandle | None, handle: Handle) -> Handle:
    """[PD-07] The handle an ack, change or forward of the client acts on: the one the proxy renewed last, if it holds
    the message (the client's own is stale after a renewal), else the client's."""
    return held.handle if held is not None else handle
