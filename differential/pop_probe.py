"""What the POP probes (test_pop_*.py) share: fresh names, waiting for a revived copy, and the timing tolerances,
each derived from the 5.3.3 broker's own intervals (the derivation is written beside each number).

The probes run against a :class:`~conformance.runner.backends.pop_backend.PopBackend`: each on RocketMQ 5.3.3 and on
the model-backed 5.x server (the ``pop_backend`` fixture of differential/conftest.py), where RMQSPEC_BACKEND=
rocketmq-5.3.3 (tox env differential-broker-5); every probe module is skipped under any other backend.
"""

from __future__ import annotations

import itertools
import json
import os
import time

import attrs
import pytest

from conformance.codec import pop
from conformance.runner.backends import get_backend_name
from conformance.runner.backends.fixtures import get_logs_dir
from conformance.runner.backends.pop_backend import PopAnswer, PopBackend, Popped

requires_5x = pytest.mark.skipif(get_backend_name() != "rocketmq-5.3.3",
                                 reason="the POP probes run where RMQSPEC_BACKEND=rocketmq-5.3.3")

# --- Timing tolerances (milliseconds), from the broker's intervals at their 5.3.3 defaults -------------------------
# PopReviveService.mergeAndRevive revives a checkpoint only once the revive scan's endTime is more than
# ackTimeInterval (1 s) + 1 s past its reviveTime (popTime + invisibleTime), and endTime is never later than now
# (it is a delivered revive-queue message's deliver time, or now): so no copy is written before reviveTime + 2 s.
REVIVE_LAG_MIN_MS = 1000 + 1000
# The latest: the checkpoint reaches the revive queue through the timer wheel at reviveTime - 1 s, late by at most
# timerPrecisionMs (1 s); a revive round that finds nothing is reviveInterval (1 s) of waiting, up to 4 s of idle
# scanning (noMsgCount * 100 ms > 4 s) and a rest of slow * reviveInterval with slow <= reviveMaxSlow (3): 3 s. A
# checkpoint that arrives just after a scan went idle waits for the next round's start: 1 + 4 + 3 + 1 = 9 s past
# reviveTime - 1 s; then the scan revives it at once (endTime - reviveTime > 2 s already holds).
REVIVE_LAG_MAX_MS = -1000 + 1000 + 4000 + 3000 + 1000 + 1000
# Our own polling: a pop every POLL_S, each answered within a few ms on loopback.
POLL_S = 0.05
# From a copy's store time to the first pop that returns it: the consume-queue dispatch runs every 1 ms and a pop
# whose batch is not full reads the retry topic too, so tens of ms. The first runs saw up to 1.4 s: copies stored
# while test_pop_revive's staggered pops were still running, before its polling began — the probe's own wait, seen
# on the model-backed server alike (differential/FACTS-5.3.3.md, "pickup"); the probe now times only copies stored
# once it polls. Kept as the allowance a probe's polling deadline adds.
OBSERVE_MARGIN_MS = 2000
INVISIBLE_MS = 1000  # the shortest invisible time the probes ask for (the proxy's minimum, set to 1 s at start)
REVIVE_LIMIT_S = (INVISIBLE_MS + REVIVE_LAG_MAX_MS + OBSERVE_MARGIN_MS) / 1000  # a pop at t=0: its copy by then
LONG_MS = 60_000  # an invisible time no probe outlives
# A client across a network never sends two requests in one millisecond; the model-backed server answers within
# one, so a probe whose fact needs a new pop time (a changed handle, PO-08) lets this pass first (PO-11).
NEXT_MS_S = 0.002
# The model-backed server's clock is the monotonic clock counted from its wall-clock start, the probes' the wall
# clock: they may drift apart by a few milliseconds over a session (the real broker shares the probes' clock).
CLOCK_SLACK_MS = 5
_names = itertools.count()


@attrs.frozen
class Names:
    topic: str
    group: str


def fresh(prefix: str) -> Names:
    """A topic and a group no other probe or run used (the broker's store lives for the whole session)."""
    stamp = f"{os.getpid()}-{time.monotonic_ns() % 10**9}-{next(_names)}"
    return Names(f"{prefix}T-{stamp}", f"{prefix}G-{stamp}")


def set_up(backend: PopBackend, names: Names, retry_max_times: int = 16, policy: dict | None = None,
           queues: int = 1, fifo: bool = False) -> None:
    backend.create_topic(names.topic, queues, fifo)
    backend.set_group(names.group, retry_max_times, policy, fifo)


def prepare(backend: PopBackend, prefix: str, keys=("k0",), **settings) -> Names:
    """Fresh names, the topic and group set up (set_up's `settings`), `keys` sent to queue 0 and poppable."""
    names = fresh(prefix)
    set_up(backend, names, **settings)
    send_all(backend, names, list(keys))
    return names


def send_all(backend: PopBackend, names: Names, keys: list[str], tag: str | None = None, queue_id: int = 0) -> None:
    for key in keys:
        assert backend.send(names.topic, queue_id, key.encode(), key, tag) == 0
    wait_until(lambda: backend.max_offset(names.topic, queue_id) >= len(keys), 5.0)


def wait_until(done, limit_s: float, poll_s: float = POLL_S):
    """done() again until it is truthy (returns it) or `limit_s` passed (TimeoutError)."""
    deadline = time.monotonic() + limit_s
    while True:
        value = done()
        if value:
            return value
        if time.monotonic() >= deadline:
            raise TimeoutError(f"not done within {limit_s} s")
        time.sleep(poll_s)


def now_ms() -> int:
    return int(time.time() * 1000)


def pop_until(backend: PopBackend, names: Names, limit_s: float, invisible_ms: int = LONG_MS,
              **kw) -> tuple[PopAnswer, int]:
    """Pops (no long polling) every POLL_S until a pop finds something; (that answer, the wall time it came at)."""
    answer = wait_until(lambda: _found(backend.pop(names.group, names.topic, invisible_ms, **kw)), limit_s)
    return answer, now_ms()


def receive_until(backend: PopBackend, names: Names, limit_s: float, invisible_ms: int = LONG_MS,
                  **kw) -> tuple[PopAnswer, int]:
    answer = wait_until(lambda: _found(backend.receive(names.group, names.topic, invisible_ms, **kw)), limit_s)
    return answer, now_ms()


def _found(answer: PopAnswer) -> PopAnswer | None:
    return answer if answer.messages else None


def get_revive_time(message: Popped) -> int:
    """popTime + invisibleTime of the handle a message was popped with (remoting or gRPC handle)."""
    return pop.decode_handle(" ".join(message.handle.split(" ")[:8])).revive_time


def read_retry(backend: PopBackend, names: Names, v2: bool = False):
    return backend.read_topic(pop.get_retry_topic(names.group, names.topic, v2))


@pytest.fixture(scope="session")
def facts(request):
    """facts(name, figure): a measured figure, printed at the session's end and written as one JSON line each to
    ``<reports dir>/<run id>/pop-facts.jsonl`` (differential/FACTS-5.3.3.md quotes them)."""
    measured: list[dict] = []
    yield lambda name, figure: measured.append({"test": os.environ.get("PYTEST_CURRENT_TEST", "").split(" ")[0],
                                                "fact": name, "figure": figure})
    if measured:
        path = get_logs_dir(request.config, "pop-facts.jsonl")
        path.parent.mkdir(parents=True, exist_ok=True)
        with open(path, "a", encoding="utf-8") as sink:
            sink.writelines(json.dumps(m, sort_keys=True) + "\n" for m in measured)
        print("\n" + "\n".join(f"{m['fact']}: {m['figure']}  ({m['test']})" for m in measured))


def keys_of(stored) -> list[str]:
    """The UNIQ_KEY of each stored message, in queue order."""
    return [m.properties.get("UNIQ_KEY") for m in stored]


def read_dlq(backend: PopBackend, names: Names):
    return backend.read_topic(pop.get_dlq_topic(names.group))
