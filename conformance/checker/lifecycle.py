"""Checks of how a client lives with a message that keeps failing and how it stops, over one run's history: the
orderly suspend interval (CFG-04), an orderly poison message under the default maxReconsumeTimes (OR-15), and the
clean stop at the end of every run (RB-07). Each answers (status, detail[, keys]) or None where the run does not
judge its rule.
"""

from __future__ import annotations

from collections import defaultdict

from conformance.checker.checks import ORDERLY_RETRY_STATUSES, TRACE_GRAIN_MS
from conformance.checker.mechanisms import get_dead_keys, get_deliveries, get_observed_fates, get_retry_sends
from conformance.checker.wire_checks import get_queue_of
from conformance.codec.codes import UNREGISTER_CLIENT, UPDATE_CONSUMER_OFFSET
from conformance.history.records import Run

# DefaultMQPushConsumer.suspendCurrentQueueTimeMillis (4.9.8 L251): what a context left at -1 suspends for (CFG-04).
SUSPEND_MILLIS = 1000
# Tolerance of the suspend interval, measured between two deliveries of one queue as the driver timed them: the
# adapter's lines can reach the driver some ms apart from when the listener ran (early), and the client's scheduled
# resubmission, its consume thread and the adapter's round trip may run late on a loaded 2-core machine (late).
SUSPEND_EARLY_MS = 50
SUSPEND_LATE_MS = 1000


def get_suspending(run: Run) -> frozenset[str]:
    """The orderly answers after which the queue suspends: SUSPEND, an exception or null, and without autoCommit
    ROLLBACK (with it ROLLBACK is read as SUCCESS)."""
    return ORDERLY_RETRY_STATUSES | (frozenset() if run.workload.auto_commit else frozenset({"ROLLBACK"}))


def get_suspend_gaps(run: Run, max_reconsume_times: int) -> list[tuple[str, float]]:
    """(key, ms) per orderly failure answer followed by a redelivery on its queue: the time from the failed delivery
    to the next delivery of the same queue, when that one was seen before (a local retry, not a queue that moved
    on). A message at maxReconsumeTimes is given up instead (no suspend); a restart breaks the pairs."""
    if run.workload.mode != "orderly" or run.workload.restart_after is not None:
        return []
    suspending, gaps = get_suspending(run), []
    deliveries = list(run.deliveries)
    for index, failed in enumerate(deliveries):
        if failed.status not in suspending or failed.reconsume_times >= max_reconsume_times:
            continue
        queue = get_queue_of(failed)
        later = next((d for d in deliveries[index + 1:] if get_queue_of(d) == queue), None)
        if later is not None and later.seen_before > 0:
            gaps.append((failed.uniq_key, later.time_ms - failed.time_ms))
    return gaps


def is_suspend_interval(gap_ms: float) -> bool:
    return SUSPEND_MILLIS - SUSPEND_EARLY_MS <= gap_ms <= SUSPEND_MILLIS + SUSPEND_LATE_MS


def get_suspend_verdict(run: Run, prediction) -> tuple | None:
    """[CFG-04] After an orderly failure answer the queue is consumed again after the suspend interval: the
    context's -1 means the consumer's suspendCurrentQueueTimeMillis, 1000 ms (within SUSPEND_EARLY_MS early,
    SUSPEND_LATE_MS late)."""
    gaps = get_suspend_gaps(run, prediction.max_reconsume_times)
    if not gaps:
        return None
    wrong = [(key, gap) for key, gap in gaps if not is_suspend_interval(gap)]
    if wrong:
        detail = "; ".join(f"{key} again after {gap:.0f} ms" for key, gap in wrong[:5])
        return "deviates", f"{detail} (4.9.8: {SUSPEND_MILLIS} ms)", frozenset(key for key, _gap in wrong)
    shortest, longest = min(gap for _key, gap in gaps), max(gap for _key, gap in gaps)
    return "conforms", f"{len(gaps)} suspends, each {shortest:.0f}-{longest:.0f} ms (4.9.8: {SUSPEND_MILLIS} ms)"


def get_orderly_poison_verdict(run: Run, prediction) -> tuple | None:
    """[OR-15] Under the default maxReconsumeTimes (-1: unbounded) an orderly poison message retries locally as long
    as the run lasts: never given up to %RETRY%, never dead-lettered (no %DLQ% copy, in the final read either)."""
    keys = run.workload.get_forever_keys()
    if run.workload.mode != "orderly" or run.settings.max_reconsume_times != -1 or not keys:
        return None
    retried = {key for key in keys if len(get_deliveries(run, key)) > 1}
    if not retried:
        return None
    dead = get_dead_keys(run) & retried
    given_up = {key for key in retried if get_retry_sends(run, key)}
    if dead or given_up:
        return "deviates", f"dead-lettered: {sorted(dead)}; given up to %RETRY%: {sorted(given_up)}", \
            frozenset(dead | given_up)
    counts = ", ".join(f"{key} {len(get_deliveries(run, key))} times" for key in sorted(retried))
    return "conforms", f"poison retried locally until the run ended ({counts}); no %DLQ% copy"


def get_queue_name(run: Run, delivery) -> tuple[str, int]:
    """The queue a delivery came from as the wire names it: (topic or %RETRY%<group>, queue id), read off the first
    delivery of its copy (commit-log offset) — a local retry after a refused fallback (CC-07) keeps the RETRY_TOPIC
    the fallback set, yet comes from the original's queue."""
    offset = delivery.message["commitLogOffset"]
    first = next(d for d in run.deliveries if d.message["commitLogOffset"] == offset)
    retry, queue_id = get_queue_of(first)
    return (f"%RETRY%{run.settings.group}" if retry else run.settings.topic), queue_id


def get_unfinished_offsets(run: Run) -> dict[tuple[str, int], int]:
    """Orderly: per queue, the lowest offset of a message still retrying when the run ended (its last answer a
    failure, the broker still holding it): a stopping client cannot have consumed past it."""
    if run.workload.mode != "orderly":
        return {}
    fates, found = get_observed_fates(run), {}
    last = {d.uniq_key: d for d in run.deliveries}
    for key, delivery in last.items():
        fate = fates.get(key)
        if fate is not None and fate.fate == "indefinite" and not run.workload.is_success(delivery.status):
            queue = get_queue_name(run, delivery)
            found[queue] = min(found.get(queue, delivery.message["queueOffset"]), delivery.message["queueOffset"])
    return found


def get_consumed_bounds(run: Run, since_ms: float = float("-inf"),
                        ) -> dict[tuple[str, int], tuple[int | None, int | None]]:
    """Per queue the listener got messages from after `since_ms`: (low, high) bounds of the offset a cleanly
    stopping client persists — past every delivered message below the first unfinished one (low), not past that one
    (high). An orderly listener without autoCommit commits only on COMMIT, so there no low bound is known."""
    unfinished, bounds = get_unfinished_offsets(run), {}
    committing = run.workload.mode != "orderly" or run.workload.auto_commit
    for delivery in (d for d in run.deliveries if d.time_ms > since_ms):
        queue = get_queue_name(run, delivery)
        high = unfinished.get(queue)
        low, _ = bounds.get(queue, (None, high))
        offset = delivery.message["queueOffset"]
        if committing and (high is None or offset < high):
            low = max(low or 0, offset + 1)
        bounds[queue] = (low, high)
    return bounds


def get_stop_requests(run: Run) -> tuple[int | None, dict[tuple[str, int], list[tuple[int, int]]]]:
    """The client's stop at the run's end: the index (in run.requests) of its first UNREGISTER_CLIENT, and per queue
    the (index, offset) of every UPDATE_CONSUMER_OFFSET sent after the run stopped waiting, in order."""
    first, persists = None, defaultdict(list)
    for index, request in enumerate(run.requests):
        if request.time_ms < run.ended_ms - TRACE_GRAIN_MS:
            continue
        if request.code == UNREGISTER_CLIENT and first is None:
            first = index
        elif request.code == UPDATE_CONSUMER_OFFSET:
            fields = request.fields
            queue = (fields.get("topic"), int(fields.get("queueId", -1)))
            persists[queue].append((index, int(fields.get("commitOffset", -1))))
    return first, persists


def get_shutdown_verdict(run: Run) -> tuple | None:
    """[RB-07] The client stopped cleanly at the run's end: every queue it consumed from was persisted before its
    first UNREGISTER_CLIENT, the last such UPDATE_CONSUMER_OFFSET carrying the consumed offset (get_consumed_bounds),
    and nothing after it persisted another offset (a periodic persist already on its way may repeat the same one:
    rocketmq-client-cpp's 5 s timer runs until the factory stops, after UNREGISTER_CLIENT — seen in the CI rehearsal's
    smoke run — and a 4.9.8 persistAllConsumerOffset that took the consumer from its table before
    unregisterConsumer removed it);
    BROADCASTING persists to its local file, so only the UNREGISTER_CLIENT shows. A run with no recorded stop
    (ended_ms 0) is not judged; with a restart only the last instance's stop is."""
    if run.ended_ms <= 0:
        return None
    first, persists = get_stop_requests(run)
    if first is None:
        return "deviates", "no UNREGISTER_CLIENT after the client was stopped"
    if run.workload.model == "broadcasting":
        return "conforms", "UNREGISTER_CLIENT sent (BROADCASTING persists offsets to its local file)"
    problems, persisted = [], {}
    for queue, (low, high) in sorted(get_consumed_bounds(run, get_last_instance_start(run)).items()):
        before = [offset for index, offset in persists.get(queue, []) if index < first]
        after = sorted({offset for index, offset in persists.get(queue, []) if index > first} - set(before[-1:]))
        if not before:
            late = "persisted after UNREGISTER_CLIENT" if after else "not persisted"
            problems.append(f"{queue[0]}:{queue[1]} {late}")
        elif (low is not None and before[-1] < low) or (high is not None and before[-1] > high):
            problems.append(f"{queue[0]}:{queue[1]} persisted {before[-1]}; consumed offset in [{low}, {high}]")
        elif after:
            problems.append(f"{queue[0]}:{queue[1]} persisted {after} after UNREGISTER_CLIENT, {before[-1]} before")
        else:
            persisted[queue] = before[-1]
    if problems:
        return "deviates", "; ".join(problems)
    return "conforms", f"persisted {', '.join(f'{t}:{q}={o}' for (t, q), o in sorted(persisted.items()))}, " \
                       "then UNREGISTER_CLIENT"


def get_last_instance_start(run: Run) -> float:
    """With a restart, the last instance answers for the queues it consumed from (those after the earlier stop); a
    killed instance sends no UNREGISTER_CLIENT: its end is the scheduled fault's, when the next one started."""
    earlier = [r.time_ms for r in run.get_requests(UNREGISTER_CLIENT) if r.time_ms < run.ended_ms - TRACE_GRAIN_MS]
    earlier += [e.end_ms for e in run.faults if e.kind in ("client_kill", "client_restart") and e.end_ms is not None
                and e.end_ms < run.ended_ms]
    return max(earlier, default=float("-inf"))
