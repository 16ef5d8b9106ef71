"""The proxy's renew scan step by step (spec/16-proxy.md PD-07), at its boundaries: what one scan asks for one held
handle (compute_renewal), the renew delays past the table's end, and what each kind of answer leaves held
(on_renew_answer) — all from DefaultReceiptHandleManager (the line numbers below; same on develop 365b297)
https://github.com/apache/rocketmq/blob/rocketmq-all-5.3.3/proxy/src/main/java/org/apache/rocketmq/proxy/service/receipt/DefaultReceiptHandleManager.java#L144-L277
and RenewStrategyPolicy."""

from __future__ import annotations

import pytest

from model.proxy.renew import HeldHandle, Renewal, RenewKind, compute_renew_delay, compute_renewal, on_renew_answer
from model.values.pop_wire import Handle
from properties.pop_strategies import GROUP, TOPIC

HOUR = 3600 * 1000
STOP_DELAY = 7_000


def held_at(pop_time: int, invisible_time: int = 60_000, consume_time: int = 0, renew_times: int = 0,
            renew_retry_times: int = 0) -> HeldHandle:
    handle = Handle(0, pop_time, invisible_time, 0, "0", "broker-a", 0, 0)
    return HeldHandle(GROUP, TOPIC, handle, 0, consume_time, renew_times, renew_retry_times)


def test_an_offline_client_is_cleared_with_one_second():
    """scheduleRenewTask clears an offline client's group before anything else (L150-L152), each handle changed to
    invisibleTimeMillisWhenClear = 1000 ms (clearGroup L245-L251; ProxyConfig L196)."""
    held = held_at(pop_time=0)  # next visible at 60 s: far from due, yet cleared
    assert compute_renewal(held, 1_000, STOP_DELAY, online=False) == Renewal(RenewKind.CLEAR, 1_000)


@pytest.mark.parametrize("now, expected", [(49_999, None), (50_000, Renewal(RenewKind.RENEW, 60_000))])
def test_a_handle_is_due_once_its_next_visible_time_is_ten_seconds_away(now, expected):
    """scheduleRenewTask skips a handle only while nextVisibleTime - now > renewAheadTimeMillis (10 s) (L159-L161):
    next visible at 60 000, so 50 000 is due."""
    assert compute_renewal(held_at(pop_time=0), now, STOP_DELAY) == expected


@pytest.mark.parametrize("retries, expected", [(2, Renewal(RenewKind.RENEW, 60_000)),
                                               (3, Renewal(RenewKind.GIVE_UP, 0))])
def test_given_up_at_three_failed_renewals(retries, expected):
    """startRenewMessage drops the handle without a change once renewRetryTimes >= maxRenewRetryTimes (3)
    (L186-L189; ProxyConfig L198)."""
    assert compute_renewal(held_at(pop_time=0, renew_retry_times=retries), 55_000, STOP_DELAY) == expected


@pytest.mark.parametrize("now, expected", [(3 * HOUR + 4_999, Renewal(RenewKind.RENEW, 60_000)),
                                           (3 * HOUR + 5_000, Renewal(RenewKind.STOP_RENEW, STOP_DELAY))])
def test_renewed_while_held_less_than_three_hours_since_consumed(now, expected):
    """startRenewMessage renews while now - consumeTimestamp < renewMaxTimeMillis (3 h), else its last change is the
    group policy's delay (L190, L212-L221; ProxyConfig L204). Consumed at 5 000: 3 h later it stops."""
    held = held_at(pop_time=now - 55_000, consume_time=5_000)
    assert compute_renewal(held, now, STOP_DELAY) == expected


@pytest.mark.parametrize("renew_times, delay", [(4, 1_800_000), (5, 3_600_000), (6, 3_600_000), (40, 3_600_000)])
def test_renew_delays_repeat_the_last_hour(renew_times, delay):
    """RenewStrategyPolicy.nextDelayDuration: index min(renewTimes, next.length - 1) of 1m 3m 5m 10m 30m 1h
    (https://github.com/apache/rocketmq/blob/rocketmq-all-5.3.3/proxy/src/main/java/org/apache/rocketmq/proxy/common/RenewStrategyPolicy.java#L27-L69)."""
    assert compute_renew_delay(renew_times) == delay


def test_a_successful_renewal_resets_the_failed_count():
    """An OK renewal takes the new handle, resets renewRetryTimes and counts one more renewal (L202-L206).
   """
    held = held_at(pop_time=0, renew_times=2, renew_retry_times=2)
    new = held.handle._replace(pop_time=55_000, invisible_time=300_000)
    renewed = on_renew_answer(held, Renewal(RenewKind.RENEW, 300_000), "OK", new)
    assert (renewed.handle, renewed.renew_times, renewed.renew_retry_times) == (new, 3, 0)


@pytest.mark.parametrize("code", ["INVALID_RECEIPT_HANDLE", "INVALID_BROKER_NAME"])
def test_a_renewal_refused_for_good_is_dropped(code):
    """A renewal failing with INVALID_RECEIPT_HANDLE or INVALID_BROKER_NAME is not retried: the handle is dropped
    (L194-L200, renewExceptionNeedRetry L267-L277)."""
    assert on_renew_answer(held_at(pop_time=0, renew_retry_times=1), Renewal(RenewKind.RENEW, 60_000), code,
                           None) is None


def test_a_renewal_the_broker_refuses_is_dropped_not_retried():
    """The broker's refusal of the change is no exception: LocalMessageService answers it as AckStatus.NO_EXIST
    (https://github.com/apache/rocketmq/blob/rocketmq-all-5.3.3/proxy/src/main/java/org/apache/rocketmq/proxy/service/message/LocalMessageService.java#L323-L329),
    the proxy's INTERNAL_SERVER_ERROR, and startRenewMessage completes a not-OK AckResult with null — the handle is
    dropped at once, not retried (L207-L210)."""
    held = held_at(pop_time=0, renew_retry_times=1)
    assert on_renew_answer(held, Renewal(RenewKind.RENEW, 60_000), "INTERNAL_SERVER_ERROR", None) is None


def test_a_failed_renewal_worth_retrying_counts_one_more_failure():
    """Any other failure (a thrown one: a timeout, an unreachable broker — SYSTEM_ERROR here) keeps the handle with
    renewRetryTimes + 1 (L196-L198)."""
    held = held_at(pop_time=0, renew_times=2, renew_retry_times=1)
    assert on_renew_answer(held, Renewal(RenewKind.RENEW, 60_000), "SYSTEM_ERROR", None) == held_at(
        pop_time=0, renew_times=2, renew_retry_times=2)
