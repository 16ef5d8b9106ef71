"""ScheduleMessageService: the per-level deliver tasks as discrete events on the virtual clock (spec/04-delay-timer.md).

RocketMQ runs one task per delay level that wakes every 100 ms. The model never polls: a level's state is its
offset and the time its task is next scheduled (`next_run`); the run that would change something is derived in O(1)
from that, the head unit of the level's consume queue and the profile's re-check cadence.
"""

from __future__ import annotations

from functools import partial
from itertools import compress
from operator import is_not
from typing import NamedTuple

from model.broker.commit_log import CommitLogRecord, ConsumeQueueUnit, compute_draft_record, compute_logged_message
from model.broker.schedule_state import NOTHING_DUE, DueCache, LevelTask, ScheduleState
from model.broker.state import Broker
from model.broker.store import Store, append_record
from model.values.append_log import AppendLog
from model.values.config import Config
from model.values.delay_levels import delay_level_to_queue_id
from model.values.errors import IllegalTransition
from model.values.message import PROPERTY_REAL_QUEUE_ID, PROPERTY_REAL_TOPIC, SCHEDULE_TOPIC, Message
from model.values.records import evolve, new_tuple

_is_not_none = partial(is_not, None)

FIRST_DELAY_TIME = 1000
DELAY_FOR_A_WHILE = 100
FIRST_FLUSH_DELAY = 10_000


class Delivery(NamedTuple):
    """One message moved from SCHEDULE_TOPIC_XXXX to its real topic at `time`, with the rules it exercised.

    It holds the two commit-log records; `scheduled` and `delivered` decode them to messages when read (most
    deliveries are never looked at, and decoding one builds its property map). A named tuple, built per delivered
    message without its class call (benchmarks/NOTES.md).
    """

    level: int
    schedule_offset: int
    time: int
    scheduled_record: CommitLogRecord
    delivered_record: CommitLogRecord
    rules: tuple[str, ...]

    @property
    def scheduled(self) -> Message:
        return compute_logged_message(self.scheduled_record)

    @property
    def delivered(self) -> Message:
        return compute_logged_message(self.delivered_record)

    @property
    def topic(self) -> str:
        """The real topic the message was delivered to."""
        return self.delivered_record.topic


def get_level_task(state: ScheduleState, level: int) -> LevelTask:
    task = state.tasks[level - 1] if level <= len(state.tasks) else None
    if task is not None:
        return task
    offset = state.persisted_offsets.get(level, 0) if state.persisted_offsets else 0
    return LevelTask(offset, state.started_at + FIRST_DELAY_TIME, offset)


def get_level_offset(state: ScheduleState, level: int) -> int:
    """The in-memory offsetTable entry of a level: the next schedule-queue offset its task delivers."""
    return get_level_task(state, level).offset


def compute_grid_time(anchor: int, step: int, at_least: int) -> int:
    """The first time `anchor + k * step` (k >= 0) that is not before `at_least`."""
    if at_least <= anchor:
        return anchor
    return anchor + -(-(at_least - anchor) // step) * step


def compute_corrected_deliver_timestamp(deliver_timestamp: int, now: int, delay: int) -> int:
    """[DT-07] correctDeliverTimestamp: a deliver time further away than the level's delay means now."""
    return now if deliver_timestamp > now + delay else deliver_timestamp


def is_unit_due(unit: ConsumeQueueUnit, now: int, delay: int) -> bool:
    """[DT-02] A schedule-queue unit is due when its (corrected) countdown to its deliver timestamp is not positive."""
    return unit.stored_at <= now and compute_corrected_deliver_timestamp(unit.tags_code, now, delay) <= now


def compute_level_due_time(task: LevelTask, queue, delay: int, config: Config) -> int | None:
    """[DT-04] The run of a level that delivers its head unit; None while the level has nothing to deliver.

    Runs before it only poll (idle, every 100 ms) or re-check a head that is not due: they change nothing.
    """
    if task.offset >= len(queue):
        return None
    unit = queue[task.offset]
    first_check = compute_grid_time(task.next_run, DELAY_FOR_A_WHILE, unit.stored_at)
    if is_unit_due(unit, first_check, delay):
        return first_check
    if config.profile.scheduler_rechecks_every_100ms:
        return compute_grid_time(first_check, DELAY_FOR_A_WHILE, unit.tags_code)
    # <= 4.9.2: the check at first_check re-schedules the task after `countdown` ms, i.e. at the deliver time.
    return unit.tags_code


def get_schedule_queue(store: Store, level: int) -> AppendLog:
    return store.get_queue_units(SCHEDULE_TOPIC, delay_level_to_queue_id(level))


def set_level_task(tasks: tuple, level: int, task: LevelTask) -> tuple:
    """The tasks with level `level`'s replaced (index level - 1; levels not run since the start are None)."""
    if level > len(tasks):
        tasks += (None,) * (level - len(tasks))
    return tasks[:level - 1] + (task,) + tasks[level:]


def is_due_cache_valid(cache: DueCache | None, state: ScheduleState, queues: tuple) -> bool:
    return (cache is not None and cache.queues is queues and cache.tasks is state.tasks
            and cache.persisted_offsets is state.persisted_offsets and cache.started_at == state.started_at)


def compute_due_cache(broker: Broker, config: Config) -> DueCache:
    """[DT-04] The due time of every level with something to deliver, re-deriving only what may have changed.

    A level's due time depends on its task and the unit at the task's offset; appending to its queue changes it only
    while the level had nothing to deliver. So with the same tasks, a level keeps its cached due time unless its
    queue changed and it had none.
    """
    state, queues = broker.schedule, broker.store.schedule_queues
    cache = state.due_cache
    if is_due_cache_valid(cache, state, queues):
        return cache
    if not queues:
        return NOTHING_DUE
    delays = config.delay_levels
    # Queue id q holds level q + 1 (ST-02); only levels with a queue can have something to deliver.
    if len(queues) > len(delays):
        queues = queues[: len(delays)]
    if cache is None or not is_due_cache_valid(cache, state, cache.queues):
        dues = [compute_fresh_level_due(state, config, index, queue) for index, queue in enumerate(queues)]
        return create_due_cache(state, broker.store.schedule_queues, tuple(dues))
    dues, earliest, seen = list(cache.dues), cache.earliest, cache.queues
    dues.extend([None] * (len(queues) - len(dues)))
    # The levels whose queue is another object than the cache saw (the comparison runs in C: it runs per event).
    changed = list(compress(range(len(seen)), map(is_not, queues, seen)))
    changed.extend(range(len(seen), len(queues)))
    for index in changed:
        if dues[index] is None:
            due = compute_fresh_level_due(state, config, index, queues[index])
            dues[index] = due
            if due is not None and (earliest is None or due < earliest):
                earliest = due
    return DueCache(broker.store.schedule_queues, state.tasks, state.persisted_offsets, state.started_at,
                    tuple(dues), earliest)


def compute_fresh_level_due(state: ScheduleState, config: Config, index: int, queue) -> int | None:
    """[DT-04] The due time of level index + 1 from its task (the task's own cached one if it has it)."""
    task = state.tasks[index] if index < len(state.tasks) else None
    if task is not None and task.due is not None:
        return task.due
    return compute_level_due_time(task or get_level_task(state, index + 1), queue, config.delay_levels[index], config)


def create_due_cache(state: ScheduleState, queues: tuple, dues: tuple) -> DueCache:
    earliest = min(filter(_is_not_none, dues), default=None)
    return DueCache(queues, state.tasks, state.persisted_offsets, state.started_at, dues, earliest)


def has_due_levels(broker: Broker, config: Config) -> bool:
    """[DT-04] Some level has a message left to deliver (the offset flush aside)."""
    return compute_due_cache(broker, config).earliest is not None


def compute_next_time(state: ScheduleState, cache: DueCache) -> int | None:
    if state.next_flush is None or (cache.earliest is not None and cache.earliest < state.next_flush):
        return cache.earliest
    return state.next_flush


def get_next_schedule_time(broker: Broker, config: Config) -> int | None:
    """[DT-04] The earliest time a level task delivers or the offset flush writes changed offsets; None if none."""
    return compute_next_time(broker.schedule, compute_due_cache(broker, config))


def compute_message_timeup(scheduled: CommitLogRecord, now: int) -> CommitLogRecord:
    """[DT-05] messageTimeup: the record to put to the real topic and queue, drafted from the scheduled record.

    Java builds a new message whose property map has DELAY cleared, so that the put does not delay it again, but
    stores the properties string computed before the clear: the stored copy keeps the stale DELAY (DT-06). The
    cleared map is read by nothing else, so the draft carries only the properties string.
    """
    properties = scheduled.get_properties()
    # compute_draft_record's arguments: topic, body, tags, flat properties, queue id, reconsume times, flag, born
    # and store timestamps (passed by position: a keyword call costs more, once per delivered message)
    return compute_draft_record(properties[PROPERTY_REAL_TOPIC], scheduled.body, scheduled.tags, scheduled.properties,
                                int(properties[PROPERTY_REAL_QUEUE_ID]), scheduled.reconsume_times, scheduled.flag,
                                scheduled.born_timestamp, now)


def process_delivery(store: Store, config: Config, level: int, offset: int, unit: ConsumeQueueUnit, now: int,
                     rewound: bool) -> tuple[Store, Delivery]:
    """[DT-05] Deliver one due unit: messageTimeup, then a put to the real topic (not re-scheduled, DT-06)."""
    scheduled = store.commit_log[unit.log_index]
    store, delivered = append_record(store, compute_message_timeup(scheduled, now), now, config.delay_levels)
    rules = ("DT-02", "DT-05", "DT-06")
    if unit.tags_code > now:
        rules += ("DT-07",)
    if rewound:
        rules += ("DT-09",)
    return store, new_tuple(Delivery, (level, offset, now, scheduled, delivered, rules))


def process_level_run(store: Store, config: Config, level: int, task: LevelTask, now: int):
    """[DT-03] One run of a level's task: deliver units in queue order until one is not due, then re-schedule."""
    queue = get_schedule_queue(store, level)
    delay = config.delay_levels[level - 1]
    offset, deliveries, next_run = task.offset, [], now + DELAY_FOR_A_WHILE
    # The units from the task's offset, a chunk at a time (not an index each): the run stops at the first not due.
    for unit in queue.iterate(offset, queue.length):
        if not is_unit_due(unit, now, delay):
            if not config.profile.scheduler_rechecks_every_100ms and unit.stored_at <= now:
                next_run = unit.tags_code  # <= 4.9.2: now + countdown
            break
        store, delivery = process_delivery(store, config, level, offset, unit, now, offset < task.high_water)
        deliveries.append(delivery)
        offset += 1
    high_water = max(task.high_water, offset)
    due = compute_level_due_time(LevelTask(offset, next_run, high_water), queue, delay, config)
    return store, LevelTask(offset, next_run, high_water, due), deliveries


def compute_next_flush_time(state: ScheduleState, config: Config, changed_at: int) -> int:
    """[DT-08] The first run of the flush task (every flushDelayOffsetInterval after 10 s) that sees a change.

    A flush writes the offsets as of the end of its ms: a delivery at a flush time is in that flush.
    """
    first = state.started_at + FIRST_FLUSH_DELAY
    return compute_grid_time(first, config.flush_delay_offset_interval, changed_at)


def process_flush(state: ScheduleState, now: int) -> ScheduleState:
    """[DT-08] persist(): write every level's in-memory offset to delayOffset.json."""
    offsets = {level: task.offset for level, task in enumerate(state.tasks, start=1) if task is not None}
    persisted = state.persisted_offsets.update(offsets)
    return evolve(state, persisted_offsets=persisted, next_flush=None, last_flush=now)


def on_schedule_timer(broker: Broker, config: Config, now: int) -> tuple[Broker, tuple[Delivery, ...]]:
    """[DT-04] Run every level task and the offset flush due at exactly `now`, levels in order, then the flush.

    Raises IllegalTransition if something was due before `now`: the schedule must be processed in time order.
    """
    return process_timer(broker, config, now, compute_due_cache(broker, config))


def process_timer(broker: Broker, config: Config, now: int, cache: DueCache):
    """[DT-04] on_schedule_timer with the due times already computed for the broker's current state."""
    state, store = broker.schedule, broker.store
    if (cache.earliest is not None and cache.earliest < now) or (state.next_flush is not None
                                                                  and state.next_flush < now):
        skipped = [level for level, due in enumerate(cache.dues, start=1) if due is not None and due < now]
        raise IllegalTransition(f"levels {skipped} due, flush at {state.next_flush}", f"schedule timer at {now}",
                                "the schedule must be processed in time order")
    deliveries: list[Delivery] = []
    tasks, dues = state.tasks, list(cache.dues)
    if cache.earliest == now:
        for index, due in enumerate(cache.dues):
            if due == now:
                level = index + 1
                store, task, delivered = process_level_run(store, config, level, get_level_task(state, level), now)
                tasks = set_level_task(tasks, level, task)
                dues[index] = task.due
                deliveries.extend(delivered)
    next_flush = state.next_flush
    if deliveries and next_flush is None:
        next_flush = compute_next_flush_time(state, config, now)
    state = evolve(state, tasks=tasks, next_flush=next_flush)
    if next_flush == now:
        state = process_flush(state, now)
    # Deliveries go to real topics, so the schedule queues are those of `cache`; were one changed, the next lookup
    # would see it by identity and re-derive that level.
    state = evolve(state, due_cache=create_due_cache(state, cache.queues, tuple(dues)))
    return evolve(broker, schedule=state, store=store), tuple(deliveries)


def process_schedule_until(broker: Broker, config: Config, until: int) -> tuple[Broker, tuple[Delivery, ...]]:
    """[DT-04] Run every scheduled task up to and including `until`, each at its own time, in time order."""
    deliveries: list[Delivery] = []
    while True:
        cache = compute_due_cache(broker, config)
        when = compute_next_time(broker.schedule, cache)
        if when is None or when > until:
            return broker, tuple(deliveries)
        broker, delivered = process_timer(broker, config, when, cache)
        deliveries.extend(delivered)


def compute_corrected_delay_offset(offset: int, min_offset: int, max_offset: int) -> int:
    """[DT-09] correctDelayOffset: a persisted offset outside the queue is clamped into [cqMin, cqMax]."""
    return min(max(offset, min_offset), max_offset)


def on_broker_restart(broker: Broker, config: Config, now: int, *, graceful: bool = False) -> Broker:
    """[DT-09] The broker restarts at `now`: every level resumes from its persisted offset (in-memory ones are lost).

    A graceful shutdown persists first (DT-08); a crash does not, so the messages between the persisted and the
    in-memory offset are delivered again. Each level's first run is FIRST_DELAY_TIME after the restart (DT-01).
    """
    state = broker.schedule
    if graceful:
        state = process_flush(state, now)
    high_water = {level: task.high_water for level, task in enumerate(state.tasks, start=1) if task is not None}
    tasks, persisted = {}, {}
    for level, offset in state.persisted_offsets.items():
        queue_length = len(get_schedule_queue(broker.store, level))
        corrected = compute_corrected_delay_offset(offset, 0, queue_length)
        persisted[level] = corrected
        tasks[level] = LevelTask(corrected, now + FIRST_DELAY_TIME, max(corrected, high_water.get(level, 0)))
    for level, mark in high_water.items():
        tasks.setdefault(level, LevelTask(0, now + FIRST_DELAY_TIME, mark))
    vector = ()
    for level, task in tasks.items():
        vector = set_level_task(vector, level, task)
    restarted = ScheduleState(started_at=now, tasks=vector, persisted_offsets=state.persisted_offsets)
    if persisted != dict(state.persisted_offsets):
        restarted = evolve(restarted, next_flush=compute_next_flush_time(restarted, config, now))
    return evolve(broker, schedule=restarted)
