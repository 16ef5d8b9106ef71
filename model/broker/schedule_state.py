"""The state of the broker's delay-level scheduler (ScheduleMessageService, spec/04-delay-timer.md): per-level
tasks, the persisted delayOffset.json, and the derived due times; model/broker/delay_timer.py runs it."""

from __future__ import annotations

import immutables
from attrs import field, frozen

from model.values.records import bounded_repr, record


@frozen
class LevelTask:
    """A level's deliver task: the consume-queue offset it reads next, when it next runs, the highest offset reached."""

    offset: int
    next_run: int
    high_water: int
    # The delivering run of the head unit once computed (it cannot change while the task stays the same).
    due: int | None = None


@frozen
class DueCache:
    """The due time of every level (index level - 1, None for nothing to deliver) and their minimum, valid for the
    schedule queues, tasks, persisted offsets and start time it was computed from (compared by identity)."""

    queues: tuple
    tasks: tuple
    persisted_offsets: immutables.Map
    started_at: int
    dues: tuple
    earliest: int | None


# No schedule queue yet, so no level has anything to deliver (shared: asked for on every system timer).
NOTHING_DUE = DueCache((), (), immutables.Map(), 0, (), None)


@record  # copied on every timer run: model.values.records.evolve copies its __dict__
class ScheduleState:
    """[DT-01] The scheduler of a broker started at `started_at`: per-level tasks and delayOffset.json.

    `tasks[level - 1]` is None (or missing) for a level that has not run since the start: its offset is its
    persisted offset (0 when absent), first run at `started_at + FIRST_DELAY_TIME`. `next_flush` is None while the
    file is up to date.
    """

    __repr__ = bounded_repr  # [SY-12] a failure report never prints the whole state
    started_at: int = 0
    tasks: tuple = ()
    persisted_offsets: immutables.Map = field(factory=immutables.Map)
    next_flush: int | None = None
    last_flush: int | None = None
    # Derived, not state: kept so that the next due time is found without re-deriving all 18 levels per event.
    due_cache: DueCache | None = field(default=None, eq=False, repr=False)
