"""AckMessage and ChangeInvisibleDuration through the proxy (ConsumerProcessor, LocalMessageService,
spec/16-proxy.md): an expired handle is refused before the broker sees it; a change answers a new handle."""

from __future__ import annotations

from typing import NamedTuple

from model.broker.pop.ack import on_ack, on_change_invisible_time
from model.broker.pop.state import PopBroker
from model.proxy.settings import DEFAULT_PROXY_CONFIG, ProxyConfig
from model.values.pop_wire import AckRequest, ChangeRequest, Handle
from model.values.profiles import Profile


class ProxyAnswer(NamedTuple):
    """The proxy's answer: its code, the handle a change answers (None otherwise), whether the broker's ack or
    change reached a pending checkpoint, and the rules taken."""

    code: str
    handle: Handle | None
    effective: bool
    rules: tuple[str, ...]


def on_proxy_ack(state: PopBroker, group: str, topic: str, handle: Handle, now: int) -> tuple[PopBroker, ProxyAnswer]:
    """[PD-05] ackMessage: an expired handle (pop time + invisible time <= now) is INVALID_RECEIPT_HANDLE without
    a request to the broker; otherwise the broker's ack of the handle's real topic, queue and offset (PO-07)."""
    if handle.is_expired(now):
        return state, ProxyAnswer("INVALID_RECEIPT_HANDLE", None, False, ("PD-05",))
    request = AckRequest(group, handle.get_real_topic(topic, group), handle.queue_id, handle.offset, handle)
    state, answer = on_ack(state, request, now)
    code = "OK" if answer.code == "SUCCESS" else answer.code
    return state, ProxyAnswer(code, None, answer.effective, answer.rules + ("PD-05",))


def compute_changed_handle(handle: Handle, pop_time: int, invisible_time: int, revive_queue_id: int,
                           profile: Profile) -> Handle:
    """[PD-06] The handle LocalMessageService answers after a change: the new pop time and invisible time, but the
    old handle's start offset — where the pop began reading the queue (profile flag
    `proxy_change_keeps_batch_start_offset`) — while the broker's new checkpoint starts at the message's own offset
    (PO-08), the start offset the remoting client puts in its own."""
    start = handle.start_offset if profile.proxy_change_keeps_batch_start_offset else handle.offset
    return handle._replace(start_offset=start, pop_time=pop_time, invisible_time=invisible_time,
                           revive_queue_id=revive_queue_id)


def on_change_invisible_duration(state: PopBroker, group: str, topic: str, handle: Handle, invisible_time: int,
                                 now: int, proxy: ProxyConfig = DEFAULT_PROXY_CONFIG) -> tuple[PopBroker, ProxyAnswer]:
    """[PD-06] changeInvisibleDuration: an invisible time above maxInvisibleTimeMills is ILLEGAL_INVISIBLE_TIME, an
    expired handle INVALID_RECEIPT_HANDLE (PD-05); otherwise the broker's change (PO-08) and the new handle — for
    an orderly offset below the committed one (FF-04) an expired one: pop time, invisible time and revive queue 0."""
    if not 0 <= invisible_time <= proxy.max_invisible_time_mills:
        return state, ProxyAnswer("ILLEGAL_INVISIBLE_TIME", None, False, ("PD-06",))
    if handle.is_expired(now):
        return state, ProxyAnswer("INVALID_RECEIPT_HANDLE", None, False, ("PD-05",))
    request = ChangeRequest(group, handle.get_real_topic(topic, group), handle.queue_id, handle.offset, handle,
                            invisible_time)
    state, answer = on_change_invisible_time(state, request, now)
    if answer.code != "SUCCESS":
        return state, ProxyAnswer("INTERNAL_SERVER_ERROR", None, False, answer.rules + ("PD-06",))
    times = (answer.pop_time, answer.invisible_time, answer.revive_queue_id) if answer.pop_time is not None \
        else (0, 0, 0)  # FF-04: an orderly change below the offset sets no header field; Java reads 0 for each
    changed = compute_changed_handle(handle, *times, state.config.profile)
    return state, ProxyAnswer("OK", changed, answer.was_pending, answer.rules + ("PD-06",))
