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
    TAGS,
    Fault,
    MessageSpec,
    Workload,
)


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


@st.composite
def workloads(draw, mode: str = "concurrently", *, model: str = "clustering", with_faults: bool = True,
              with_restart: bool = True, statuses: tuple[str, ...] | None = None,
              auto_commit: st.SearchStrategy[bool] | None = None) -> Workload:
    """A workload for one fresh server, group and client instance; `statuses` the listener's answers to draw
    from (the mode's common ones by default), `auto_commit` whether an orderly listener keeps autoCommit."""
    messages = draw(message_specs(mode, statuses=statuses))
    drawn_faults = draw(faults(tuple(m.key for m in messages))) if with_faults else ()
    restart = draw(st.none() | st.integers(1, 4)) if with_restart else None
    keep = draw(auto_commit) if mode == "orderly" and auto_commit is not None else True
    return Workload(messages, drawn_faults, mode, model, restart, keep)


def poison_workload(retries: int) -> Workload:
    """The smoke test's workload: one message that fails every delivery (a poison message: `forever`), so it goes
    produce -> fail -> retry -> ... -> DLQ (1 + `retries` deliveries under a maxReconsumeTimes of `retries`)."""
    return Workload((MessageSpec("m0", "TagA", forever=True),))
