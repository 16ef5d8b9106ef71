"""Drawn 5.x workloads (tox env conformance-5-drawn, outside CI: each example is a real run of 10-90 s): a Hypothesis
strategy over `PopWorkload` per consumer API — messages and their scripts, the group's retry policy and maxAttempts,
FIFO, and at most one fault of POP_FAULT_KINDS — and, as the 4.x full runs do (conformance/suite/full_run.py), no
Hypothesis shrinking (each attempt costs a real run) but, with RMQSPEC_SHRINK=1, a failing run's problems shrunk each
by re-running the client within a budget (conformance/suite/shrink.py's greedy `shrink` over this module's
candidates): the failure names the smallest workload that still showed the problem, as PopWorkload source.

RMQSPEC_POP_EXAMPLES examples per client and API (default 3).
"""

from __future__ import annotations

import os
from collections.abc import Iterator

from attrs import evolve, fields
from hypothesis import HealthCheck, Phase, settings
from hypothesis import strategies as st

from conformance.checker.pop_verdicts import find_pop_problems
from conformance.history.pop_workload import (
    LASTING_KINDS,
    LISTENER_ANSWERS,
    POP_FAULT_KINDS,
    SIMPLE_ACTIONS,
    PopFault,
    PopMessage,
    PopWorkload,
)
from conformance.runner.pop_run import run_pop_workload
from conformance.suite.pop_suite import LONG_POLLING_MS, run_and_judge_pop
from conformance.suite.shrink import MAX_SHRUNK_PROBLEMS, get_budget, get_signature, is_shrinking, shrink

EXAMPLES = int(os.environ.get("RMQSPEC_POP_EXAMPLES", "3"))
DRAWN = settings(max_examples=EXAMPLES, deadline=None, database=None, phases=[Phase.explicit, Phase.generate],
                 suppress_health_check=[HealthCheck.too_slow, HealthCheck.function_scoped_fixture])
# Retry policies short enough for a drawn run (the fixed workloads' 20 s ones outlast the revive lag on purpose).
CUSTOMIZED_SHORT = {"type": "CUSTOMIZED", "customizedRetryPolicy": {"next": [1000, 3000]}}
EXPONENTIAL_SHORT = {"type": "EXPONENTIAL", "exponentialRetryPolicy": {"initial": 1000, "max": 4000, "multiplier": 2}}
# retryMaxTimes: maxAttempts 2, 3, and the default 17 (then no message is poison: it would outlast a run).
RETRY_MAX_TIMES = (1, 2, 16)
LASTING_DRAWN_MS = (3000, 8000)
MAX_MESSAGES = 3
MAX_SCRIPT = 2


def get_answers(api: str) -> tuple[str, ...]:
    return SIMPLE_ACTIONS if api == "simple" else LISTENER_ANSWERS


@st.composite
def pop_faults(draw, messages: tuple[PopMessage, ...]) -> tuple[PopFault, ...]:
    """No fault, or one right after a delivery its message's script reaches (a lasting one for 3 s or 8 s)."""
    if not draw(st.booleans()):
        return ()
    kind = draw(st.sampled_from(POP_FAULT_KINDS))
    message = draw(st.sampled_from(messages))
    delivery = draw(st.integers(0, len(message.script)))
    duration = draw(st.sampled_from(LASTING_DRAWN_MS)) if kind in LASTING_KINDS else 0
    return (PopFault(kind, message.key, delivery, duration),)


@st.composite
def pop_workloads(draw, api: str) -> PopWorkload:
    """A workload for `api` ("simple", "push", "pop"): 1-3 messages with scripts of up to 2 answers, at most one
    poison (where maxAttempts is small: through the proxy; maxReconsumeTimes 1 for the remoting POP consumer), the
    group's retryMaxTimes, a short customized or exponential policy (push), FIFO (gRPC), at most one fault."""
    retry_max_times = draw(st.sampled_from(RETRY_MAX_TIMES))
    max_reconsume = draw(st.sampled_from((-1, 1))) if api == "pop" else -1
    may_poison = max_reconsume == 1 if api == "pop" else retry_max_times <= 2
    count = draw(st.integers(1, MAX_MESSAGES))
    poison = draw(st.integers(-1, count - 1)) if may_poison else -1
    scripts = st.lists(st.sampled_from(get_answers(api)), max_size=MAX_SCRIPT).map(tuple)
    messages = tuple(PopMessage(f"m{index}", draw(scripts), forever=index == poison) for index in range(count))
    policy = draw(st.sampled_from((None, CUSTOMIZED_SHORT, EXPONENTIAL_SHORT))) if api == "push" else None
    fifo = draw(st.booleans()) if api != "pop" else False
    invisible = 5000 if api == "pop" else 2000
    return PopWorkload(messages, api=api, fifo=fifo, retry_max_times=retry_max_times, policy=policy,
                       invisible_ms=invisible, max_reconsume_times=max_reconsume, faults=draw(pop_faults(messages)))


def replace_message(workload: PopWorkload, index: int, message: PopMessage) -> PopWorkload:
    messages = list(workload.messages)
    messages[index] = message
    return evolve(workload, messages=tuple(messages))


def get_pop_candidates(workload: PopWorkload, unused: int = 0) -> Iterator[tuple[PopWorkload, int]]:
    """The workloads one step smaller, biggest steps first: a message dropped (with its faults), a fault dropped, a
    poison message made finite, a script emptied, halved or one answer shorter, no policy, not FIFO, retryMaxTimes 1.
    Each step lowers a finite measure, so shrinking ends. (`unused`: shrink.py's case carries a client maxReconsumeTimes
    beside the workload; a 5.x workload holds its own.)"""
    if len(workload.messages) > 1:
        for dropped in workload.messages:
            kept = tuple(m for m in workload.messages if m is not dropped)
            yield evolve(workload, messages=kept, faults=tuple(f for f in workload.faults if f.key != dropped.key)), 0
    for fault in workload.faults:
        yield evolve(workload, faults=tuple(f for f in workload.faults if f is not fault)), 0
    for index, message in enumerate(workload.messages):
        if message.forever:
            yield replace_message(workload, index, evolve(message, forever=False)), 0
        for length in sorted({0, len(message.script) // 2, len(message.script) - 1}):
            if 0 <= length < len(message.script):
                yield replace_message(workload, index, evolve(message, script=message.script[:length])), 0
    if workload.policy is not None:
        yield evolve(workload, policy=None), 0
    if workload.fifo:
        yield evolve(workload, fifo=False), 0
    if workload.retry_max_times > 1 and not workload.get_poison_keys():
        yield evolve(workload, retry_max_times=1), 0


def format_pop_workload(workload: PopWorkload) -> str:
    """The workload as PopWorkload source, each value that is not its default (the counterexamples' form)."""
    return format_value(workload)


def format_value(value) -> str:
    """An attrs value (PopWorkload, PopMessage, PopFault) as its constructor call with only non-default
    arguments; a tuple as a tuple; anything else as repr."""
    if hasattr(type(value), "__attrs_attrs__"):
        parts = []
        for index, field in enumerate(f for f in fields(type(value)) if f.init):
            current = getattr(value, field.name)
            if index == 0:
                parts.append(format_value(current))
            elif current != field.default:
                parts.append(f"{field.name}={format_value(current)}")
        return f"{type(value).__name__}({', '.join(parts)})"
    if isinstance(value, tuple):
        items = [format_value(item) for item in value]
        return f"({items[0]},)" if len(items) == 1 else "(" + ", ".join(items) + ")"
    return repr(value)


def run_drawn(target, open_client, workload: PopWorkload, log_dir: str) -> dict[str, str]:
    """One drawn run judged (pop_suite.run_and_judge_pop); on a problem, with RMQSPEC_SHRINK=1, each of its first
    MAX_SHRUNK_PROBLEMS problems shrunk by re-running the client, the failure naming the shrunk workloads."""
    try:
        return run_and_judge_pop(target, open_client, workload, log_dir)
    except AssertionError as error:
        if not is_shrinking():
            raise
        raise AssertionError(explain_drawn_failure(str(error), target, open_client, workload, log_dir)) from None


def explain_drawn_failure(failure: str, target, open_client, workload: PopWorkload, log_dir: str) -> str:
    problems = failure.split("\ndeliveries:")[0].splitlines()
    lines = [f"drawn: {format_pop_workload(workload)}", *failure.splitlines()[:40]]
    for signature in list(dict.fromkeys(get_signature(problem) for problem in problems))[:MAX_SHRUNK_PROBLEMS]:
        shrunk = shrink_drawn(target, open_client, workload, signature, log_dir)
        lines += [f"shrunk ({signature}): {format_pop_workload(shrunk.workload)}",
                  f"  {shrunk.runs} re-runs, {shrunk.seconds:.0f} s (stopped: {shrunk.stopped})"]
    return "\n".join(lines)


def shrink_drawn(target, open_client, workload: PopWorkload, signature: str, log_dir: str):
    """`workload` shrunk to the smallest one whose one re-run shows a problem of `signature` (get_budget())."""

    def shows(candidate: PopWorkload, _unused: int) -> bool:
        try:
            run = run_pop_workload(target, open_client, candidate, log_dir, prefix="s5",
                                   long_polling_ms=LONG_POLLING_MS)
        except (RuntimeError, OSError, ValueError):
            return False
        return signature in {get_signature(problem) for problem in find_pop_problems(run)[1]}

    return shrink((workload, 0), shows, get_budget(), candidates=get_pop_candidates)
