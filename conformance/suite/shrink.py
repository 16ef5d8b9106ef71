"""Shrinking a failing workload of a real client by re-running it: the smallest workload (and client
maxReconsumeTimes) that still shows one problem of a full run, found greedily within a budget of re-runs and seconds.

A case is (workload, the client's maxReconsumeTimes). `shrink` tries the smaller cases of `get_candidates` one by one
and moves to the first the predicate accepts — the predicate re-runs the client once on it and says whether the same
problem showed (`get_signature`: the rule and whether it was undeclared or a declared one that vanished). Real
clients are racy, so one run that shows the problem is enough to accept a candidate, and one that does not rejects it
(it may have shown in another run: the result is small, not always the smallest). The shrinker never returns a case
the predicate rejected: the result is the original or the last case accepted.

Budget per problem: SHRINK_BUDGET_RUNS re-runs and SHRINK_BUDGET_S seconds (RMQSPEC_SHRINK_BUDGET_RUNS,
RMQSPEC_SHRINK_BUDGET_S); a re-run starts only if the longest one so far still fits in the seconds left, so a full
run's failure costs at most MAX_SHRUNK_PROBLEMS x SHRINK_BUDGET_S more.
"""

from __future__ import annotations

import os
import re
import time
from collections.abc import Callable, Iterator

from attrs import evolve, frozen

from conformance.history.workload import MessageSpec, Workload

SHRINK_BUDGET_S = 45.0
SHRINK_BUDGET_RUNS = 8
MAX_SHRUNK_PROBLEMS = 2
# The client's maxReconsumeTimes choices of the full runs, simplest first (-1: the client's default).
CLIENT_MAX_ORDER = (-1, 1, 2)
SIMPLEST_TAGS = "TagA"

Case = tuple[Workload, int]


@frozen
class Budget:
    """How much one problem's shrinking may spend: re-runs of the client and wall seconds."""

    seconds: float = SHRINK_BUDGET_S
    runs: int = SHRINK_BUDGET_RUNS


@frozen
class Shrunk:
    """A shrinking's result: the smallest case accepted, the re-runs and seconds spent, and why it stopped
    ("minimal": no candidate showed the problem; "budget": the budget was spent first)."""

    workload: Workload
    client_max: int
    runs: int
    seconds: float
    stopped: str


def is_shrinking(environ=os.environ) -> bool:
    """Whether a full run shrinks its failures (RMQSPEC_SHRINK=1, set by tox's conformance-* envs)."""
    return environ.get("RMQSPEC_SHRINK", "") == "1"


def get_budget(environ=os.environ) -> Budget:
    """The budget per problem: RMQSPEC_SHRINK_BUDGET_S and RMQSPEC_SHRINK_BUDGET_RUNS, else the defaults."""
    return Budget(float(environ.get("RMQSPEC_SHRINK_BUDGET_S", SHRINK_BUDGET_S)),
                  int(environ.get("RMQSPEC_SHRINK_BUDGET_RUNS", SHRINK_BUDGET_RUNS)))


def get_signature(problem: str) -> str:
    """What makes two problems the same for shrinking: the rule and its kind (undeclared deviation, declared one that
    did not happen, harness fault), not the message key or the detail (conformance/checker/verdicts.py's wording)."""
    for pattern, kind in ((r"undeclared deviation of (\S+)", "undeclared"),
                          (r"declared deviation of (\S+) .* did not happen", "did not happen"),
                          (r"the server could not serve the client: .*'kind': '([^']+)'", "harness fault")):
        found = re.match(pattern, problem)
        if found:
            return f"{kind} {found.group(1)}"
    return problem.split(":")[0]


def replace_message(workload: Workload, index: int, message: MessageSpec) -> Workload:
    messages = list(workload.messages)
    messages[index] = message
    return evolve(workload, messages=tuple(messages))


def get_message_candidates(workload: Workload) -> Iterator[Workload]:
    """Each message dropped (with the send-back faults on it; a pull fault names no message), if one stays."""
    if len(workload.messages) < 2:
        return
    for dropped in workload.messages:
        kept = tuple(m for m in workload.messages if m is not dropped)
        faults = tuple(f for f in workload.faults if not (f.is_send_back and f.key == dropped.key))
        yield evolve(workload, messages=kept, faults=faults)


def get_script_candidates(workload: Workload) -> Iterator[Workload]:
    """Per message: its script emptied, halved, one answer shorter; its delay level 0; its tags TagA."""
    for index, message in enumerate(workload.messages):
        script = message.script
        for length in sorted({0, len(script) // 2, len(script) - 1}):
            if 0 <= length < len(script):
                yield replace_message(workload, index, evolve(message, script=script[:length]))
        if message.delay_level:
            yield replace_message(workload, index, evolve(message, delay_level=0))
        if message.tags != SIMPLEST_TAGS:
            yield replace_message(workload, index, evolve(message, tags=SIMPLEST_TAGS))


def get_candidates(workload: Workload, client_max: int) -> Iterator[Case]:
    """The cases one step smaller than (workload, client_max), biggest steps first: a message dropped, a fault
    dropped, a scheduled fault dropped, the restart dropped, a poison message made finite, a script shortened, a
    delay level 0, tags TagA, autoCommit kept, and a client maxReconsumeTimes earlier in CLIENT_MAX_ORDER. Each step
    lowers a finite measure, so shrinking ends."""
    yield from ((w, client_max) for w in get_message_candidates(workload))
    for fault in workload.faults:
        yield evolve(workload, faults=tuple(f for f in workload.faults if f is not fault)), client_max
    for scheduled in workload.schedule:
        yield evolve(workload, schedule=tuple(s for s in workload.schedule if s is not scheduled)), client_max
    if workload.restart_after is not None:
        yield evolve(workload, restart_after=None), client_max
    for index, message in enumerate(workload.messages):
        if message.forever:
            yield replace_message(workload, index, evolve(message, forever=False)), client_max
    yield from ((w, client_max) for w in get_script_candidates(workload))
    if not workload.auto_commit:
        yield evolve(workload, auto_commit=True), client_max
    if client_max in CLIENT_MAX_ORDER:
        yield from ((workload, m) for m in CLIENT_MAX_ORDER[:CLIENT_MAX_ORDER.index(client_max)])


def shrink(case: Case, shows: Callable[[Workload, int], bool], budget: Budget,
           clock: Callable[[], float] = time.monotonic,
           candidates: Callable[..., Iterator[Case]] = get_candidates) -> Shrunk:
    """Greedily the smallest case `shows` accepts, starting from `case` (which showed the problem): the first
    accepted candidate replaces the current case and its candidates (`candidates`: the 4.x workloads' by default)
    are tried next; stops when none is accepted or the budget is spent (no re-run starts that the longest one so far
    would push past `budget.seconds`)."""
    started, runs, longest = clock(), 0, 0.0
    current = case
    while True:
        for candidate in candidates(*current):
            if runs >= budget.runs or clock() - started + longest > budget.seconds:
                return Shrunk(*current, runs, clock() - started, "budget")
            before = clock()
            accepted = shows(*candidate)
            runs += 1
            longest = max(longest, clock() - before)
            if accepted:
                current = candidate
                break
        else:
            return Shrunk(*current, runs, clock() - started, "minimal")


def format_case(workload: Workload, client_max: int) -> str:
    """The case as Python source in COUNTEREXAMPLES' format (conformance/checker/deviations.py):
    `Workload((MessageSpec("m0", "TagA", 0, ("EXCEPTION",) * 2),), (Fault(...),), mode="orderly"), -1`."""
    parts = [format_tuple([format_message(m) for m in workload.messages])]
    if workload.faults:
        parts.append(format_tuple([f'Fault("{f.kind}", "{f.key}", {f.delivery})' for f in workload.faults]))
    if workload.schedule:
        parts.append(f"schedule={format_tuple([repr(s) for s in workload.schedule])}")
    defaults = Workload(())
    for name in ("mode", "model", "restart_after", "auto_commit"):
        value = getattr(workload, name)
        if value != getattr(defaults, name):
            parts.append(f"{name}={format_value(value)}")
    return f"Workload({', '.join(parts)}), {client_max}"


def format_message(message: MessageSpec) -> str:
    """A MessageSpec as positional source, trailing defaults left out; a script of one answer repeated as `(a,) * n`."""
    script = message.script
    if len(script) > 1 and len(set(script)) == 1:
        script_source = f"({format_value(script[0])},) * {len(script)}"
    else:
        script_source = format_tuple([format_value(s) for s in script])
    values, defaults = (message.tags, message.delay_level, script), (None, 0, ())
    used = len(values)
    while used and values[used - 1] == defaults[used - 1]:
        used -= 1
    args = [format_value(message.key), format_value(message.tags), str(message.delay_level), script_source]
    return f"MessageSpec({', '.join(args[:used + 1] + (['forever=True'] if message.forever else []))})"


def format_tuple(items: list[str]) -> str:
    """Sources of items as a tuple's source: `(a,)` for one."""
    return f"({items[0]},)" if len(items) == 1 else "(" + ", ".join(items) + ")"


def format_value(value) -> str:
    """A str in double quotes (the declarations' style), anything else as repr."""
    return '"' + value + '"' if isinstance(value, str) else repr(value)

