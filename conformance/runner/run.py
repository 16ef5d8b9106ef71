"""One workload through a real client against a backend, recorded as a `Run` (conformance/checker/observe.py).

The backend is the model-backed server of conformance/runner/server/ (or the real broker): a fresh one per workload,
with fresh ports, group and instance name. What the glue needs from it is the `Backend` protocol below; every time
it reports is on `time.monotonic()` in ms, the clock the client driver records deliveries on.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from contextlib import AbstractContextManager
from typing import Protocol

from conformance.codec.codes import CONSUMER_SEND_MSG_BACK, PULL_MESSAGE
from conformance.history.records import BrokerRead, Delivery, FaultEvent, Run, RunSettings, StoredCopy, WireRequest
from conformance.history.timers import SLACK_MS, get_client_timers, get_quiet_end_ms
from conformance.history.workload import Workload
from conformance.runner.clients.cpp import OutcomeScript, StartRequest, open_cpp_consumer
from conformance.runner.schedule import ClientSlot, Scheduler

# A run is over when nothing happened for QUIET_S (longer than one delay level of the compressed table plus a
# pull round trip) and the broker holds no delayed copy; or at the latest after RUN_LIMIT_S.
QUIET_S = 2.5
# After a fault, or a sign of one on the wire, the run is quiet no sooner than the client's timers say it is back
# (conformance/history/timers.py: its recovery bound, slack included), and it may run past RUN_LIMIT_S for that, up
# to RUN_LIMIT_MAX_S.
RUN_LIMIT_S = 45.0
# An orderly poison message (MessageSpec.forever) under the default maxReconsumeTimes retries locally forever, so
# the run never goes quiet: it ends once such a message was delivered FOREVER_DELIVERIES times more than a client
# that gives up at maxReconsumeTimes would deliver it (a run that ends while it still retries leaves the message
# indefinite, never lost: SY-10, OR-15).
FOREVER_DELIVERIES = 5
RUN_LIMIT_MAX_S = 90.0
# A started client pulls each queue within a second or two (route, heartbeat, rebalance).
READY_LIMIT_S = 15.0
POLL_S = 0.05


class Backend(Protocol):
    namesrv: str

    def produce(self, key: str, tags: str | None, delay_level: int, queue_id: int) -> None: ...

    def get_requests(self) -> list[WireRequest]: ...

    def get_stored_copies(self) -> list[StoredCopy]: ...

    def has_delayed(self) -> bool: ...

    def get_findings(self) -> list[dict]: ...

    def read_final(self) -> BrokerRead:
        """The broker at quiescence, read after the client stopped (conformance/runner/backends/broker_read.py)."""
        ...

    def get_faults(self) -> list[FaultEvent]: ...

    # The schedule's broker and name-server faults (conformance/runner/schedule.py): each returns once it took effect.
    def set_writeable(self, writeable: bool) -> None: ...

    def kill_broker(self) -> None:
        """SIGKILL the broker (its store stays)."""
        ...

    def restart_broker(self) -> None:
        """Start the killed broker again on its store."""
        ...

    def stop_namesrv(self) -> None: ...

    def start_namesrv(self) -> None: ...


OpenBackend = Callable[[RunSettings, Workload], AbstractContextManager[Backend]]


class Consumer(Protocol):
    """A real client's push consumer as the glue drives it (conformance/runner/clients/): a context manager that starts
    and always stops it, and what it recorded."""

    deliveries: list[Delivery]
    errors: list[str]
    seen: dict[str, int]
    client: dict

    def __enter__(self) -> Consumer: ...

    def __exit__(self, *exc) -> None: ...

    def kill(self) -> None:
        """SIGKILL the client's process at once (nothing persisted); never hangs."""
        ...


# How the glue makes a consumer: (start request, outcome script, log directory) -> Consumer.
OpenClient = Callable[[StartRequest, OutcomeScript, str | None], Consumer]


def get_forever_cap(workload: Workload, settings: RunSettings) -> int | None:
    """How many deliveries of one orderly poison message end the run (FOREVER_DELIVERIES past the 1 +
    maxReconsumeTimes a bounded client makes); None where no orderly message fails forever."""
    if workload.mode != "orderly" or not workload.get_forever_keys():
        return None
    bounded = settings.max_reconsume_times + 1 if settings.max_reconsume_times >= 0 else 0
    return bounded + FOREVER_DELIVERIES


def has_kept_failing(consumers: list[Consumer], keys: frozenset[str], cap: int | None) -> bool:
    """Some message of `keys` was delivered `cap` times (over every instance)."""
    if cap is None:
        return False
    counts: dict[str, int] = {}
    for delivery in (d for c in consumers for d in c.deliveries):
        counts[delivery.uniq_key] = counts.get(delivery.uniq_key, 0) + 1
    return any(counts.get(key, 0) >= cap for key in keys)


def wait_until_quiet(backend: Backend, consumers: list[Consumer], started: float, limit_s: float,
                     deliveries: int | None = None, scheduler: Scheduler | None = None,
                     forever: tuple[frozenset[str], int | None] = (frozenset(), None)) -> None:
    """Poll until QUIET_S pass with no new delivery or send-back, no delayed copy and no scheduled fault fired or
    ended (pulls and offset commits go on all the time), and the client's timers say it is back from every fault so
    far (get_wait_end_s), or `deliveries` deliveries were made, or a poison message of `forever` (keys, cap) was
    delivered cap times, or `limit_s` after `started` — later while a fault's recovery bound runs, up to
    RUN_LIMIT_MAX_S. A delayed copy falling due starts the QUIET_S again: the client has yet to pull and consume
    it. The `scheduler` fires and ends the workload's scheduled faults as the run goes; while one is on the run is
    not quiet, nor before the client's timers say it is back from it (conformance/history/timers.py)."""
    seen, quiet_since, cap_s = None, time.monotonic(), max(limit_s, RUN_LIMIT_MAX_S)
    while time.monotonic() - started < limit_s:
        if has_kept_failing(consumers, *forever):
            return
        requests = backend.get_requests()
        if scheduler is not None:
            scheduler.poll(requests)
        sent_back = [r for r in requests if r.code == CONSUMER_SEND_MSG_BACK]
        delayed = backend.has_delayed()
        state = scheduler.get_state() if scheduler is not None else ()
        now = (sum(len(c.deliveries) for c in consumers), len(sent_back), delayed, state)
        if deliveries is not None and now[0] >= deliveries:
            return
        wait_end = max(get_wait_end_s(requests, backend.get_faults(), get_client(consumers), scheduler),
                       get_start_wait_end_s(consumers))
        limit_s = min(max(limit_s, wait_end + QUIET_S - started), cap_s)
        if now != seen:
            seen, quiet_since = now, time.monotonic()
        elif time.monotonic() - quiet_since >= QUIET_S and not delayed and time.monotonic() >= wait_end:
            return
        time.sleep(POLL_S)


def get_wait_end_s(requests: list[WireRequest], faults: list[FaultEvent], client: dict,
                   scheduler: Scheduler | None) -> float:
    """When (on the driver's clock, in s) the run may be quiet: after the client's recovery from each failure,
    fault and scheduled fault so far (get_failure_wait_end_s); never while a scheduled fault is on or waits for its
    moment."""
    if scheduler is None:
        return get_failure_wait_end_s(requests, faults, client)
    if not scheduler.is_settled():
        return float("inf")
    return get_failure_wait_end_s(requests, [*faults, *scheduler.events], client)


def get_start_wait_end_s(consumers: list[Consumer]) -> float:
    """When (on the driver's clock, in s) the live client may have pulled at last after its start: its start plus
    its timers' start_rebalance and SLACK_MS (rocketmq-client-go's orderly consumer pulls a queue only after its lock
    tick marked it locked, 3 s); 0.0 for a client that pulls at once (start_rebalance 0) or has not said when it
    started (`started_s`)."""
    live = consumers[-1] if consumers else None
    started = getattr(live, "started_s", None)
    if live is None or started is None or not live.client:
        return 0.0
    first_pull_ms = get_client_timers(live.client).start_rebalance.ms
    return started + (first_pull_ms + SLACK_MS) / 1000.0 if first_pull_ms else 0.0


def get_client(consumers: list[Consumer]) -> dict:
    """The running client's identity ({"name", "version"}: the adapter's, once started; {} before)."""
    return next((c.client for c in reversed(consumers) if c.client), {})


def get_failure_wait_end_s(requests: list[WireRequest], faults: list[FaultEvent] = (), client: dict | None = None) \
        -> float:
    """When (on the driver's clock, in s) the run stops waiting for the client to recover from the faults recorded
    so far and the failures on the wire (a send-back or fallback not answered SUCCESS, a failed pull): the latest
    end of their recovery bounds by the client's timers (conformance/history/timers.py); 0.0 with none."""
    return get_quiet_end_ms(client or {}, faults, requests) / 1000.0


def wait_until_pulling(backend: Backend, settings: RunSettings, started: float, limit_s: float) -> bool:
    """Poll until the client has pulled every queue of the topic (it has rebalanced and holds its offsets), or
    `limit_s` after `started`; True when it has."""
    queues = set(range(settings.topic_queue_nums))
    while time.monotonic() - started < limit_s:
        pulled = {int(r.fields.get("queueId", -1)) for r in backend.get_requests()
                  if r.code == PULL_MESSAGE and r.fields.get("topic") == settings.topic}
        if queues <= pulled:
            return True
        time.sleep(POLL_S)
    return False


def get_client_config(settings: RunSettings) -> dict:
    """The start request's client configuration: the modelled client's maxReconsumeTimes when the run sets one
    (-1 is the client's default, as in DefaultMQPushConsumer)."""
    return {} if settings.max_reconsume_times == -1 else {"maxReconsumeTimes": settings.max_reconsume_times}


def produce_workload(backend: Backend, workload: Workload, settings: RunSettings) -> None:
    for index, spec in enumerate(workload.messages):
        backend.produce(spec.key, spec.tags, spec.delay_level, index % settings.topic_queue_nums)


def run_consumers(backend: Backend, workload: Workload, settings: RunSettings, instance: str, log_dir: str | None,
                  open_client: OpenClient) -> tuple[list[Consumer], float, list[FaultEvent]]:
    """Start the client, restart it once after `workload.restart_after` deliveries, fire and end the workload's
    scheduled faults as their triggers come, stop it when quiet; returns the consumers, when the run stopped waiting
    (harness ms, just before the last client was stopped) and the scheduled faults' events.

    A BROADCASTING consumer without a stored offset starts at the queue's end, so its messages are produced
    once it pulls every queue, as the prediction's consumer exists before any message; a CLUSTERING consumer's
    messages are produced first, and the broker's first answer to QUERY_CONSUMER_OFFSET starts it at 0."""
    request = StartRequest(backend.namesrv, settings.group, settings.topic, instance, workload.mode, workload.model,
                           get_client_config(settings))
    script, started = workload.make_script(), time.monotonic()
    forever = (workload.get_forever_keys(), get_forever_cap(workload, settings))
    clients = ClientSlot(lambda: open_client(request, script, log_dir))
    scheduler = Scheduler(workload.schedule, backend, clients, started)
    broadcasting = workload.model == "broadcasting"
    if not broadcasting:
        produce_workload(backend, workload, settings)
    try:
        clients.start()
        if broadcasting:
            if not wait_until_pulling(backend, settings, started, READY_LIMIT_S):
                clients.live.errors.append(f"the client pulled no queue of {settings.topic} within {READY_LIMIT_S} s")
            produce_workload(backend, workload, settings)
        wait_until_quiet(backend, clients.consumers, started, RUN_LIMIT_S, workload.restart_after, scheduler, forever)
        if workload.restart_after is not None:
            scheduler.wait_while_namesrv_stopped(backend.get_requests)
            clients.restart()
            wait_until_quiet(backend, clients.consumers, started, RUN_LIMIT_S, None, scheduler, forever)
        ended_ms = time.monotonic() * 1000
    finally:
        try:
            scheduler.finish()
        finally:
            clients.stop()
    return clients.consumers, ended_ms, scheduler.events


def read_final(backend: Backend) -> BrokerRead | None:
    """The backend's final read of the broker; None when the broker cannot be reached (a fault left it down)."""
    try:
        return backend.read_final()
    except OSError:
        return None


def run_workload(open_backend: OpenBackend, workload: Workload, settings: RunSettings, instance: str,
                 log_dir: str | None = None, open_client: OpenClient = open_cpp_consumer) -> Run:
    """Produce the workload's messages, let the client consume them under the workload's scheduled faults, and
    record everything as one Run (every fault injected in `Run.faults`, the backend's and the schedule's, in time
    order); once every client has stopped (and persisted its offsets), read the broker as it was left (`Run.final`)."""
    with open_backend(settings, workload) as backend:
        consumers, ended_ms, scheduled = run_consumers(backend, workload, settings, instance, log_dir, open_client)
        final = read_final(backend)
        requests, stored = tuple(backend.get_requests()), tuple(backend.get_stored_copies())
        findings = tuple(backend.get_findings())
        faults = tuple(sorted([*backend.get_faults(), *scheduled], key=lambda event: event.time_ms))
    deliveries = tuple(d for c in consumers for d in c.deliveries)
    errors = [e for c in consumers for e in c.errors]
    if errors:
        raise RuntimeError(f"the client adapter reported: {errors[:5]}")
    return Run(consumers[0].client, workload, settings, deliveries, requests, stored, backend.namesrv, findings,
               faults, final, ended_ms, getattr(backend, "name", ""))
