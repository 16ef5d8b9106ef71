"""A workload's schedule of process faults (conformance/history/workload.py's ScheduledFault) as a run meets it:
which fault's trigger the deliveries and the wire have reached, firing it once, ending it after its duration, and the
`FaultEvent` of each on the harness clock (time.monotonic() ms).

run.py's polling loop calls `Scheduler.poll` with the backend's requests; every action is synchronous (a backend
method that returns once it took effect, a client stopped, killed or started), so a fault is fired and ended at the
first poll at or after its moment. An event's `time_ms` is taken just before the fault's action, its `end_ms` just
after the action that ended it: the window covers the whole transition. Client faults that overlap share one client:
one fired while the client is down takes nothing further down, and the first to end starts it again; each is
recorded all the same.
"""

from __future__ import annotations

import time
from collections.abc import Callable

from attrs import define

from conformance.codec.codes import PULL_MESSAGE, UPDATE_CONSUMER_OFFSET
from conformance.codec.headers import PULL_FLAG_COMMIT_OFFSET
from conformance.history.records import Delivery, FaultEvent, WireRequest
from conformance.history.workload import AfterMs, BeforeCommit, ScheduledFault


class ClientSlot:
    """The run's consumers in the order they were started, at most one live (the last): a client fault stops or
    kills the live one, and its end starts the next, which carries on the deliveries counted per message (`seen`)."""

    def __init__(self, open_new: Callable[[], object]):
        self.open_new = open_new
        self.consumers: list = []
        self.live = None

    def start(self) -> None:
        """Start a new consumer unless one is live."""
        if self.live is not None:
            return
        consumer = self.open_new()
        if self.consumers:
            consumer.seen.update(self.consumers[-1].seen)
        self.consumers.append(consumer)
        consumer.__enter__()
        self.live = consumer

    def stop(self) -> None:
        """Stop the live consumer cleanly (its offsets persisted), if any."""
        live, self.live = self.live, None
        if live is not None:
            live.__exit__(None, None, None)

    def kill(self) -> None:
        """Kill the live consumer's process at once (nothing persisted), if any."""
        live, self.live = self.live, None
        if live is not None:
            live.kill()

    def restart(self) -> None:
        """Stop the live consumer and start the next; nothing while none is live (a client fault is on)."""
        if self.live is not None:
            self.stop()
            self.start()


# What fires each kind and what ends it: (backend, clients) -> None.
FIRE = {"broker_read_only": lambda backend, clients: backend.set_writeable(False),
        "broker_kill": lambda backend, clients: backend.kill_broker(),
        "namesrv_stop": lambda backend, clients: backend.stop_namesrv(),
        "client_restart": lambda backend, clients: clients.stop(),
        "client_kill": lambda backend, clients: clients.kill()}
END = {"broker_read_only": lambda backend, clients: backend.set_writeable(True),
       "broker_kill": lambda backend, clients: backend.restart_broker(),
       "namesrv_stop": lambda backend, clients: backend.start_namesrv(),
       "client_restart": lambda backend, clients: clients.start(),
       "client_kill": lambda backend, clients: clients.start()}
CLIENT_KINDS = frozenset({"client_restart", "client_kill"})


def find_delivery(deliveries: list[Delivery], key: str, delivery: int) -> Delivery | None:
    """Delivery number `delivery` (0 = first) of message `key`, counted over every consumer of the run."""
    return next((d for d in deliveries if d.uniq_key == key and d.seen_before == delivery), None)


def is_commit_of(request: WireRequest, delivery: Delivery) -> bool:
    """`request` commits `delivery`: UPDATE_CONSUMER_OFFSET, or a pull with the commit-offset flag, naming its queue
    (its topic, or %RETRY% for a retry copy) and an offset past the delivered copy's."""
    fields = request.fields
    if request.code == PULL_MESSAGE:
        if not int(fields.get("sysFlag", 0)) & PULL_FLAG_COMMIT_OFFSET:
            return False
    elif request.code != UPDATE_CONSUMER_OFFSET:
        return False
    topic, message = fields.get("topic", ""), delivery.message
    retry = "RETRY_TOPIC" in message.get("properties", {}) and topic.startswith("%RETRY%")
    return (topic == message.get("topic") or retry) and str(fields.get("queueId")) == str(message["queueId"]) \
        and int(fields.get("commitOffset", -1)) > int(message.get("queueOffset", -1))


def get_target(trigger, deliveries: list[Delivery], requests: list[WireRequest], elapsed_ms: float) -> str | None:
    """What the trigger met, as the fault event's target, once it has been reached; None before."""
    if isinstance(trigger, AfterMs):
        return f"at {trigger.ms} ms" if elapsed_ms >= trigger.ms else None
    found = find_delivery(deliveries, trigger.key, trigger.delivery)
    if found is None:
        return None
    what = f"{trigger.key} delivery {trigger.delivery}"
    if not isinstance(trigger, BeforeCommit):
        return f"after {what}"
    committed = any(r.time_ms >= found.time_ms and is_commit_of(r, found) for r in requests)
    return f"{what}, {'after' if committed else 'before'} its commit"


@define
class Active:
    """A fault fired and not yet ended: when it began (ms), when it is due to end (s), what it hit."""

    fault: ScheduledFault
    time_ms: float
    due_s: float
    target: str


class Scheduler:
    """Fires each fault of a schedule once at its trigger and ends it after its duration; `events` holds each
    ended fault as a FaultEvent."""

    def __init__(self, schedule: tuple[ScheduledFault, ...], backend, clients: ClientSlot, started: float,
                 clock: Callable[[], float] = time.monotonic):
        self.pending, self.backend, self.clients = list(schedule), backend, clients
        self.started, self.clock = started, clock
        self.active: list[Active] = []
        self.events: list[FaultEvent] = []

    def poll(self, requests: list[WireRequest]) -> None:
        """End every active fault that is due, then fire every pending fault whose trigger was reached. A client
        fault due while the name server is stopped ends once it is back: RocketMQ's clients cannot start without a
        name server (4.9.8's start() fails fetching the route), so the client comes back as an operator would
        bring it back, after the outage — and after it in the same poll, whichever fired first."""
        namesrv_down = any(a.fault.kind == "namesrv_stop" and self.clock() < a.due_s for a in self.active)
        due = [a for a in self.active if self.clock() >= a.due_s]
        for active in sorted(due, key=lambda a: a.fault.kind in CLIENT_KINDS):  # processes first, clients last
            if not (namesrv_down and active.fault.kind in CLIENT_KINDS):
                self.end(active)
        deliveries = [d for c in self.clients.consumers for d in list(c.deliveries)]
        for fault in list(self.pending):
            target = get_target(fault.trigger, deliveries, requests, (self.clock() - self.started) * 1000.0)
            if target is not None:
                self.fire(fault, target)

    def fire(self, fault: ScheduledFault, target: str) -> None:
        """Fire `fault`; one of a kind already on only extends it (a broker killed twice is down until the later
        end; a second SIGKILL, or a second start when the first ends, would act on a process that is not there)."""
        self.pending.remove(fault)
        began = self.clock()
        if not self.is_on(fault.kind):
            FIRE[fault.kind](self.backend, self.clients)
        self.active.append(Active(fault, began * 1000.0, self.clock() + fault.duration_ms / 1000.0, target))

    def is_on(self, kind: str) -> bool:
        return any(a.fault.kind == kind for a in self.active)

    def end(self, active: Active, restore_client: bool = True) -> None:
        """End `active`; its kind's action is undone once no other fault of that kind is on."""
        self.active.remove(active)
        if (restore_client or active.fault.kind not in CLIENT_KINDS) and not self.is_on(active.fault.kind):
            END[active.fault.kind](self.backend, self.clients)
        self.events.append(FaultEvent(active.fault.kind, active.time_ms, self.clock() * 1000.0, active.target))

    def wait_while_namesrv_stopped(self, get_requests: Callable[[], list[WireRequest]], poll_s: float = 0.05) -> None:
        """Poll until no name-server outage is on (it ends after its duration): a 4.9.8 client cannot start
        without a name server, so a restart waits for it as an operator would."""
        while any(a.fault.kind == "namesrv_stop" for a in self.active):
            self.poll(get_requests())
            time.sleep(poll_s)

    def is_settled(self) -> bool:
        """No fault is on, and none waits for a moment of the clock (a delivery trigger may never be reached)."""
        return not self.active and not any(isinstance(f.trigger, AfterMs) for f in self.pending)

    def get_state(self) -> tuple[int, int]:
        """(faults fired, faults ended): a change starts the run's quiet period again."""
        return len(self.active) + len(self.events), len(self.events)

    def finish(self) -> None:
        """End every fault still on as the run ends: the broker and name server are restored for the final read;
        a stopped or killed client is left down."""
        for active in list(self.active):
            self.end(active, restore_client=False)
