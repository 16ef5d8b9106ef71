"""Workloads drawn by Hypothesis for a real client under the harness, and the named ones the smoke runs use.

Real time costs, so the sizes are small and bounded in one place (conformance/history/workload.py's MAX_MESSAGES,
MAX_SCRIPT).
"""

from __future__ import annotations

from hypothesis import strategies as st

from conformance.history.workload import (
    CONCURRENTLY_STATUSES,
    FAULT_KINDS,
    MAX_MESSAGES,
    MAX_SCRIPT,
    ORDERLY_STATUSES,
    SCHEDULED_FAULT_KINDS,
    TAGS,
    AfterDelivery,
    AfterMs,
    BeforeCommit,
    Fault,
    MessageSpec,
    ScheduledFault,
    Workload,
)

# A scheduled fault lasts one of these (ms); a time trigger falls within MAX_AFTER_MS of the run's start. At most
# MAX_SCHEDULED faults per workload: each costs its duration and the client's recovery (history/timers.py's
# get_fault_recovery_ms).
DURATIONS_MS = (1000, 2000, 3000)
MAX_AFTER_MS = 3000
MAX_SCHEDULED = 2


def message_specs(mode: str, *, max_delay_level: int = 2,
                  statuses: tuple[str, ...] | None = None) -> st.SearchStrategy[tuple[MessageSpec, ...]]:
    statuses = statuses or (ORDERLY_STATUSES if mode == "orderly" else CONCURRENTLY_STATUSES)
    one = st.tuples(st.sampled_from(TAGS), st.integers(0, max_delay_level),
                    st.lists(st.sampled_from(statuses), max_size=MAX_SCRIPT).map(tuple))
    drawn = st.lists(one, min_size=1, max_size=MAX_MESSAGES)
    # At most one poison message (it fails every delivery), drawn rarely: a run with one lasts longer.
    poison = st.one_of(st.none(), st.none(), st.none(), st.integers(0, MAX_MESSAGES - 1))
    return st.tuples(drawn, poison).map(
        lambda both: tuple(MessageSpec(f"m{i}", tags, level, script, forever=i == both[1])
                           for i, (tags, level, script) in enumerate(both[0])))


def faults(keys: tuple[str, ...]) -> st.SearchStrategy[tuple[Fault, ...]]:
    fault = st.builds(Fault, st.sampled_from(FAULT_KINDS), st.sampled_from(keys), st.integers(0, MAX_SCRIPT - 1))
    return st.lists(fault, max_size=2, unique_by=lambda f: (f.key, f.delivery)).map(tuple)


def triggers(keys: tuple[str, ...]) -> st.SearchStrategy[AfterDelivery | BeforeCommit | AfterMs]:
    """A moment of the run: after a delivery of a message, between it and the next commit of its queue, or after
    some ms from the run's start."""
    delivery = (st.sampled_from(keys), st.integers(0, MAX_SCRIPT - 1))
    return st.one_of(st.builds(AfterDelivery, *delivery), st.builds(BeforeCommit, *delivery),
                     st.builds(AfterMs, st.integers(0, MAX_AFTER_MS)))


def schedules(keys: tuple[str, ...], kinds: tuple[str, ...] = SCHEDULED_FAULT_KINDS,
              max_size: int = MAX_SCHEDULED) -> st.SearchStrategy[tuple[ScheduledFault, ...]]:
    """Up to `max_size` scheduled faults of `kinds`, each of one of DURATIONS_MS, at triggers on messages `keys`."""
    fault = st.builds(ScheduledFault, st.sampled_from(kinds), triggers(keys), st.sampled_from(DURATIONS_MS))
    return st.lists(fault, max_size=max_size).map(tuple)


@st.composite
def workloads(draw, mode: str = "concurrently", *, model: str = "clustering", with_faults: bool = True,
              with_restart: bool = True, statuses: tuple[str, ...] | None = None,
              auto_commit: st.SearchStrategy[bool] | None = None,
              scheduled: tuple[str, ...] = ()) -> Workload:
    """A workload for one fresh server, group and client instance; `statuses` the listener's answers to draw
    from (the mode's common ones by default), `auto_commit` whether an orderly listener keeps autoCommit,
    `scheduled` the kinds of process faults its schedule may hold (none by default)."""
    messages = draw(message_specs(mode, statuses=statuses))
    drawn_faults = draw(faults(tuple(m.key for m in messages))) if with_faults else ()
    restart = draw(st.none() | st.integers(1, 4)) if with_restart else None
    keep = draw(auto_commit) if mode == "orderly" and auto_commit is not None else True
    schedule = draw(schedules(tuple(m.key for m in messages), scheduled)) if scheduled else ()
    return Workload(messages, drawn_faults, mode, model, restart, keep, schedule)


def poison_workload(retries: int) -> Workload:
    """The smoke test's workload: one message that fails every delivery (a poison message: `forever`), so it goes
    produce -> fail -> retry -> ... -> DLQ (1 + `retries` deliveries under a maxReconsumeTimes of `retries`)."""
    return Workload((MessageSpec("m0", "TagA", forever=True),))
