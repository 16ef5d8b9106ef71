"""Properties of spec/16-proxy.md PD-07: the proxy's auto-renew of what a gRPC push consumer holds, run against the
model's broker (a receive with auto-renew, the renew scan every 5 s at any phase, the broker's revive service) — on
the develop profile, whose proxy runs the scan; on 5.3.3, whose proxy never starts it, a held message comes back."""

from __future__ import annotations

from hypothesis import given, settings
from hypothesis import strategies as st

from model.broker.pop.revive import on_revive
from model.broker.pop.state import create_pop_broker
from model.proxy.consumer import on_change_invisible_duration, on_proxy_ack
from model.proxy.receive import ReceiveRequest, on_receive
from model.proxy.renew import (
    RENEW_DELAYS_MS,
    HeldHandle,
    RenewKind,
    compute_renewal,
    get_held_handle,
    is_renewing,
    on_renew_answer,
)
from model.proxy.settings import DEFAULT_PROXY_CONFIG, ProxyConfig
from model.values.config import Config
from properties.coverage import record_rules
from properties.pop_brokers import produce, stored_in
from properties.pop_strategies import GROUP, RETRY_V1, TOPIC

RECEIVED_AT = 1_000
STOP_DELAY = 10_000


def hold_until(state, held, end: int, phase: int, proxy: ProxyConfig = DEFAULT_PROXY_CONFIG):
    """The renew scan every renewSchedulePeriodMillis from RECEIVED_AT + `phase` until `end`, each renewal asked of
    the broker through the proxy's change (none once the handle is dropped), the revive service run at each scan:
    (state, held or None, the renewals, what the revive service stored meanwhile)."""
    renewals, revived, now = [], [], RECEIVED_AT + phase
    while now < end:
        running = held is not None and is_renewing(state.config.profile)
        renewal = compute_renewal(held, now, STOP_DELAY, proxy=proxy) if running else None
        if renewal is not None:
            state, answer = on_change_invisible_duration(state, GROUP, TOPIC, held.handle, renewal.invisible_time,
                                                         now, proxy)
            renewals.append((now, renewal, answer))
            held = on_renew_answer(held, renewal, answer.code, answer.handle)
        state, revive = on_revive(state, now)
        revived += revive.stored
        now += proxy.renew_schedule_period_millis
    return state, held, renewals, revived


def new_broker(profile: str = "develop"):
    return produce(create_pop_broker(Config(profile=profile), GROUP, {TOPIC: 1}), "m0")


def receive_held(state):
    state, answer = on_receive(state, ReceiveRequest(GROUP, TOPIC, 1, 0, auto_renew=True), RECEIVED_AT, 50)
    return state, HeldHandle(GROUP, TOPIC, answer.handles[0], 0, RECEIVED_AT), answer.handles[0]


@settings(max_examples=40, deadline=None)
@given(phase=st.integers(0, 4_999), hold=st.integers(1, 40 * 60_000))
def test_a_held_message_stays_invisible_and_is_acked_with_the_renewed_handle(phase, hold):
    """PD-07: while the client holds an auto-renewed message (less than renewMaxTimeMillis) every scan finds it
    still invisible and the revive service writes no copy; each renewal is a change to the next renew delay; the
    client's ack, on the handle the proxy renewed last, consumes it — its own handle, once renewed past, would be
    refused as expired."""
    state, held, original = receive_held(new_broker())
    state, held, renewals, revived = hold_until(state, held, RECEIVED_AT + hold, phase)
    release = RECEIVED_AT + hold
    record_rules(("PD-07",))
    period = DEFAULT_PROXY_CONFIG.renew_schedule_period_millis
    assert held is not None and held.handle.next_visible_time > release - period
    assert revived == [] and stored_in(state, RETRY_V1) == []
    assert [(r.kind, r.invisible_time, a.code) for _at, r, a in renewals] == [
        (RenewKind.RENEW, RENEW_DELAYS_MS[min(n, len(RENEW_DELAYS_MS) - 1)], "OK") for n in range(len(renewals))]
    _stale, stale = on_proxy_ack(state, GROUP, TOPIC, original, release)
    state, ack = on_proxy_ack(state, GROUP, TOPIC, get_held_handle(held, original), release)
    assert ack.code == "OK" and (stale.code == "INVALID_RECEIPT_HANDLE") == (original.next_visible_time <= release)
    state, revive = on_revive(state, release + 10 * 3600 * 1000)
    assert revive.stored == ()


@settings(max_examples=30, deadline=None)
@given(phase=st.integers(0, 4_999), renew_max=st.integers(1_000, 10 * 60_000))
def test_held_past_renew_max_time_it_comes_back_after_the_group_policys_delay(phase, renew_max):
    """PD-07 with RP-04: once held renewMaxTimeMillis the proxy stops renewing — a last change to the group policy's
    delay — and the revive service brings the message back no earlier than that delay after it."""
    proxy = ProxyConfig(renew_max_time_millis=renew_max)
    state, held, _original = receive_held(new_broker())
    state, held, renewals, revived = hold_until(state, held, RECEIVED_AT + renew_max + 12 * 60_000, phase, proxy)
    record_rules(("PD-07", "RP-04"))
    stop_at, stop, answer = renewals[-1]
    assert held is None and stop.kind is RenewKind.STOP_RENEW and answer.code == "OK"
    assert stop_at - RECEIVED_AT >= renew_max > renewals[-2][0] - RECEIVED_AT if len(renewals) > 1 else True
    assert [m.reconsume_times for m in revived] == [1]
    assert revived[0].store_timestamp >= stop_at + STOP_DELAY


@settings(max_examples=20, deadline=None)
@given(phase=st.integers(0, 4_999))
def test_on_5_3_3_a_held_message_comes_back_after_the_60_s_invisible_time(phase):
    """PD-07 on 5.3.3: nothing starts the renew scan, so a message a push consumer holds is revived once its 60 s
    invisible time ended (plus the revive margin), and the client's ack after that, on the only handle there is, is
    refused as expired (PD-05)."""
    state, held, original = receive_held(new_broker("5.3.3"))
    state, held, renewals, revived = hold_until(state, held, RECEIVED_AT + 75_000, phase)
    record_rules(("PD-07",))
    assert renewals == [] and [m.reconsume_times for m in revived] == [1]
    assert revived[0].store_timestamp >= original.next_visible_time
    _state, ack = on_proxy_ack(state, GROUP, TOPIC, get_held_handle(held, original), RECEIVED_AT + 75_000)
    assert ack.code == "INVALID_RECEIPT_HANDLE"
