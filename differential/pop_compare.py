"""Runs one POP sequence (differential/pop_steps.py) on several 5.x backends in lockstep and compares what they
observed, step by step, then the revive lag of every retry copy.

Lockstep: each step goes to every backend at once (one thread each), and the next step only when all answered, so
that the same time passes on every backend between two steps — an invisible time runs out on all of them or on
none. After each step STEP_PAUSE_S passes: the real broker makes a stored message poppable and commits a pop's
offset asynchronously (consume-queue dispatch every 1 ms, the pop's commit within 5 ms), and a checkpoint's pop time
never repeats within a queue (PO-11 needs two requests in one millisecond, which no client across a network sends).

A Wait (and the one that ends every sequence) lasts until each short invisible time handed out has run out plus
WAIT_MIN_MS, then until the backends' retry and DLQ topics read the same, at most until WAIT_MAX_MS past it — the
revive service's own bounds (differential/pop_probe.py), so a backend late within them is not a difference, one
outside them is.
"""

from __future__ import annotations

import time
from concurrent.futures import ThreadPoolExecutor

import attrs

from conformance.runner.backends.pop_backend import PopBackend
from differential import pop_steps as s
from differential.pop_example import PopNames, PopRun
from differential.pop_probe import OBSERVE_MARGIN_MS, REVIVE_LAG_MAX_MS, REVIVE_LAG_MIN_MS, now_ms

STEP_PAUSE_S = 0.02
# The model revives 1 ms after REVIVE_LAG_MIN_MS; the real broker typically within 100 ms of it (FACTS-5.3.3.md).
WAIT_MIN_MS = REVIVE_LAG_MIN_MS + 1000
WAIT_MAX_MS = REVIVE_LAG_MAX_MS + OBSERVE_MARGIN_MS
READ_POLL_S = 0.2
POP_FROM_RETRY_PROBABILITY = 20  # the broker's default, restored after each example


@attrs.frozen
class PopOutcome:
    observations: tuple[dict, ...]
    lags: tuple[tuple[str, int, int], ...]


def run_pop_sequence(backends: dict[str, PopBackend], sequence: list[s.Step]) -> dict[str, PopOutcome]:
    """Sends `sequence` and a final Wait to every backend under fresh names, in lockstep; stops at the first step
    whose observations differ."""
    runs = {name: PopRun(backend, PopNames()) for name, backend in backends.items()}
    observed: dict[str, list[dict]] = {name: [] for name in runs}
    with ThreadPoolExecutor(len(runs)) as pool:
        on_all(pool, runs, lambda run: run.set_up())
        on_all(pool, runs, lambda run: run.backend.set_broker_config(popFromRetryProbability=0))
        try:
            for step in [*sequence, s.Wait()]:
                found = wait_and_read(pool, runs) if isinstance(step, s.Wait) else on_all(
                    pool, runs, lambda run, step=step: run.apply(step))
                for name, observation in found.items():
                    observed[name].append(observation)
                if len({repr(o) for o in found.values()}) > 1:
                    break
                time.sleep(STEP_PAUSE_S)
        finally:
            on_all(pool, runs, lambda run: run.backend.set_broker_config(
                popFromRetryProbability=POP_FROM_RETRY_PROBABILITY))
        lags = on_all(pool, runs, lambda run: run.get_revive_lags())
    return {name: PopOutcome(tuple(observed[name]), tuple(lags[name])) for name in runs}


def on_all(pool: ThreadPoolExecutor, runs: dict[str, PopRun], action) -> dict:
    """action(run) on every backend at once; their results by backend name."""
    futures = {name: pool.submit(action, run) for name, run in runs.items()}
    return {name: future.result() for name, future in futures.items()}


def wait_and_read(pool: ThreadPoolExecutor, runs: dict[str, PopRun]) -> dict[str, dict]:
    """A Wait: until every short invisible time has run out plus WAIT_MIN_MS, then until the backends' retry and
    DLQ topics read the same (at most WAIT_MAX_MS past it); each backend's last read."""
    due = max(run.short_until for run in runs.values())
    time.sleep(max(0.0, (due + WAIT_MIN_MS - now_ms()) / 1000))
    while True:
        reads = on_all(pool, runs, lambda run: {"step": "Wait", **run.read_retry_and_dlq()})
        if len({repr(r) for r in reads.values()}) == 1 or now_ms() > due + WAIT_MAX_MS:
            return reads
        time.sleep(READ_POLL_S)


def describe_pop_differences(outcomes: dict[str, PopOutcome]) -> list[str]:
    """One line for the first step whose observations differ between two backends (none when they agree)."""
    (name_a, a), (name_b, b) = outcomes.items()
    for index, (x, y) in enumerate(zip(a.observations, b.observations, strict=True)):
        if x != y:
            return [f"step {index}: {name_a} {x} != {name_b} {y}"]
    return []


def get_lags_out_of_bounds(outcome: PopOutcome) -> list[tuple[str, int, int]]:
    """The retry copies stored earlier than REVIVE_LAG_MIN_MS or later than REVIVE_LAG_MAX_MS after the revive time
    of the handle they came back from (IV-01)."""
    return [lag for lag in outcome.lags if not REVIVE_LAG_MIN_MS <= lag[2] <= REVIVE_LAG_MAX_MS]


def get_coverage(outcome: PopOutcome) -> set[str]:
    """What an example's observations exercised, for Hypothesis's statistics (event): the comparison covers these
    only where they occurred."""
    found = set()
    for observation in outcome.observations:
        step, messages = observation["step"], observation.get("messages", ())
        if step == "Wait":
            groups = [v for k, v in observation.items() if k != "step"]
            found |= {"retry copies compared"} if any(g.get("retry") for g in groups) else set()
            found |= {"dead letters compared"} if any(g.get("dlq") for g in groups) else set()
        elif step in ("Pop", "Receive") and any(m[1] > (1 if step == "Receive" else 0) for m in messages):
            found.add(f"{step} of a redelivered message")
        elif step == "PopOrder" and any(m[1] > 0 for m in messages):
            found.add("orderly re-pop counted")
        elif observation.get("code") == EXPIRED_HANDLE:
            found.add("expired receipt handle refused")
        elif step == "PopOrder" and observation.get("code") == POLLING_TIMEOUT and not messages:
            found.add("orderly queue blocked")
    return found


EXPIRED_HANDLE, POLLING_TIMEOUT = 40013, 210  # apache.rocketmq.v2.Code.INVALID_RECEIPT_HANDLE; ResponseCode
