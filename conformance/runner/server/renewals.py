"""The model-backed proxy's auto-renew (spec/16-proxy.md PD-07; model/proxy/renew.py decides): the handles of what
each client received with auto-renew, by (client id, group, message id); the renew scan every
renewSchedulePeriodMillis, each renewal asked of the broker as the proxy's own change of invisible time; and the
handle an ack, change or forward of the client acts on (the one renewed last)."""

from __future__ import annotations

import attrs

from model.broker.pop.state import PopBroker
from model.proxy.clients import ProxyClients, get_client_settings
from model.proxy.consumer import on_change_invisible_duration
from model.proxy.renew import HeldHandle, Renewal, RenewKind, compute_renewal, get_held_handle, on_renew_answer
from model.proxy.settings import ProxyConfig, compute_stop_renew_delay
from model.values.pop_wire import Handle

Key = tuple[str, str, str]  # (client id, group, message id)


@attrs.define
class Renewals:
    """What the proxy holds for its clients, and when it scans next (model time)."""

    proxy: ProxyConfig
    # Whether the scan runs (is_renewing of the profile: never through 5.3.3).
    running: bool = True
    held: dict[Key, HeldHandle] = attrs.field(factory=dict)
    scan_at: int = 0

    def add(self, client_id: str, group: str, topic: str, received, now: int) -> None:
        """A receive with auto-renew: each (message, handle) it answered is held from `now`."""
        for message, handle in received:
            self.held[(client_id, group, message.uniq_key)] = HeldHandle(group, topic, handle,
                                                                          message.reconsume_times, now)

    def take(self, client_id: str, group: str, message_id: str, handle: Handle) -> Handle:
        """The client acts on a message (ack, change, forward): the proxy stops renewing it and acts on the handle it
        renewed last, else the client's."""
        return get_held_handle(self.held.pop((client_id, group, message_id), None), handle)

    def next_due(self) -> int | None:
        return self.scan_at if self.held and self.running else None

    def scan(self, state: PopBroker, clients: ProxyClients, now: int) -> PopBroker:
        """The renew scan at `now`: each held handle renewed, stopped, given up or cleared as compute_renewal says,
        each change asked of the broker; the next scan a period later."""
        for key, held in list(self.held.items()):
            online = get_client_settings(clients, key[0]) is not None
            stop_delay = compute_stop_renew_delay(state, held.group, held.reconsume_times)
            renewal = compute_renewal(held, now, stop_delay, online, self.proxy)
            if renewal is None:
                continue
            state, kept = self.renew(state, held, renewal, now)
            if kept is None:
                del self.held[key]
            else:
                self.held[key] = kept
        self.scan_at = now + self.proxy.renew_schedule_period_millis
        return state

    def renew(self, state: PopBroker, held: HeldHandle, renewal: Renewal, now: int):
        if renewal.kind is RenewKind.GIVE_UP:
            return state, None
        state, answer = on_change_invisible_duration(state, held.group, held.topic, held.handle,
                                                     renewal.invisible_time, now, self.proxy)
        return state, on_renew_answer(held, renewal, answer.code, answer.handle)

    def clear(self, state: PopBroker, now: int) -> PopBroker:
        """A graceful proxy stop (clearAllHandle, where the manager was started: `running`): every held message
        made visible again after invisibleTimeMillisWhenClear; nothing held after."""
        for held in self.held.values() if self.running else ():
            state, _kept = self.renew(state, held, Renewal(RenewKind.CLEAR,
                                                           self.proxy.invisible_time_millis_when_clear), now)
        self.held.clear()
        return state
