"""One workload through a real client against a backend, recorded as a `Run` (conformance/observe.py).

The backend is the model-backed server of conformance/server/ (or the real broker): a fresh one per workload,
with fresh ports, group and instance name. What the glue needs from it is the `Backend` protocol below; every time
it reports is on `time.monotonic()` in ms, the clock the client driver records deliveries on.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from contextlib import AbstractContextManager
from typing import Protocol

from conformance.clients.cpp import CppConsumer, StartRequest
from conformance.observe import CONSUMER_SEND_MSG_BACK, Run, StoredCopy, WireRequest
from conformance.predict import RunSettings
from conformance.workload import Workload

# A run is over when nothing happened for QUIET_S (longer than one delay level of the compressed table plus a
# pull round trip) and the broker holds no delayed copy; or at the latest after RUN_LIMIT_S.
QUIET_S = 2.5
RUN_LIMIT_S = 45.0
POLL_S = 0.05


class Backend(Protocol):
    namesrv: str

    def produce(self, key: str, tags: str | None, delay_level: int, queue_id: int) -> None: ...

    def get_requests(self) -> list[WireRequest]: ...

    def get_stored_copies(self) -> list[StoredCopy]: ...

    def has_delayed(self) -> bool: ...


OpenBackend = Callable[[RunSettings, Workload], AbstractContextManager[Backend]]


def wait_until_quiet(backend: Backend, consumers: list[CppConsumer], started: float, limit_s: float,
                     deliveries: int | None = None) -> None:
    """Poll until QUIET_S pass with no new delivery or send-back and no delayed copy (pulls and offset commits go
    on all the time), or `deliveries` deliveries were made, or `limit_s` after `started`."""
    seen, quiet_since = None, time.monotonic()
    while time.monotonic() - started < limit_s:
        sent_back = sum(r.code == CONSUMER_SEND_MSG_BACK for r in backend.get_requests())
        now = (sum(len(c.deliveries) for c in consumers), sent_back)
        if deliveries is not None and now[0] >= deliveries:
            return
        if now != seen:
            seen, quiet_since = now, time.monotonic()
        elif time.monotonic() - quiet_since >= QUIET_S and not backend.has_delayed():
            return
        time.sleep(POLL_S)


def run_consumers(backend: Backend, workload: Workload, settings: RunSettings, instance: str,
                  log_dir: str | None) -> list[CppConsumer]:
    """Start the client, restart it once after `workload.restart_after` deliveries, stop it when quiet."""
    request = StartRequest(backend.namesrv, settings.group, settings.topic, instance, workload.mode, workload.model)
    script, started = workload.make_script(), time.monotonic()
    first = CppConsumer(request, script, log_dir=log_dir)
    consumers = [first]
    with first:
        wait_until_quiet(backend, consumers, started, RUN_LIMIT_S, workload.restart_after)
    if workload.restart_after is not None:
        second = CppConsumer(request, script, log_dir=log_dir)
        second.seen.update(first.seen)
        consumers.append(second)
        with second:
            wait_until_quiet(backend, consumers, started, RUN_LIMIT_S)
    return consumers


def run_workload(open_backend: OpenBackend, workload: Workload, settings: RunSettings, instance: str,
                 log_dir: str | None = None) -> Run:
    """Produce the workload's messages, let the client consume them, and record everything as one Run."""
    with open_backend(settings, workload) as backend:
        for index, spec in enumerate(workload.messages):
            backend.produce(spec.key, spec.tags, spec.delay_level, index % settings.topic_queue_nums)
        consumers = run_consumers(backend, workload, settings, instance, log_dir)
        requests, stored = tuple(backend.get_requests()), tuple(backend.get_stored_copies())
    deliveries = tuple(d for c in consumers for d in c.deliveries)
    errors = [e for c in consumers for e in c.errors]
    if errors:
        raise RuntimeError(f"the client adapter reported: {errors[:5]}")
    return Run(consumers[0].client, workload, settings, deliveries, requests, stored, backend.namesrv)
