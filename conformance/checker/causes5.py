"""The causes a 5.x client's declared deviation can name (conformance/checker/deviations5.py): each a predicate over a
`PopRun` and one message key ("" for the run), true when that mechanism explains the message's deviation, as
causes.py's are for the 4.x clients.
"""

from __future__ import annotations

from conformance.checker.pop_checks import (
    ARRIVAL_SLACK_MS,
    FAILURES,
    PICKUP_MS,
    REVIVE_LAG_MAX_MS,
    get_reference_delay_ms,
)
from conformance.history.pop_records import PopRun


def get_early_retries(run: PopRun, key: str) -> list[float]:
    """The gaps (ms) after which a failed delivery of `key` came back earlier than its backoff says."""
    seen = run.get_deliveries(key)
    gaps = []
    for count, (before, after) in enumerate(zip(seen, seen[1:], strict=False), 1):
        if run.get_answer(before) not in FAILURES:
            continue
        attempt = count if run.workload.fifo else before.message.get("deliveryAttempt", count)
        if after.time_ms - before.time_ms < get_reference_delay_ms(run, attempt) - ARRIVAL_SLACK_MS:
            gaps.append(after.time_ms - before.time_ms)
    return gaps


def is_exponential_backoff_ignored(run: PopRun, key: str) -> bool:
    """[RP-03] The group's policy is exponential, and a failure of `key` came back earlier than its backoff: the
    client nacked with its own default instead."""
    return run.settings.exponential is not None and bool(get_early_retries(run, key))


def is_customized_backoff_ignored(run: PopRun, key: str) -> bool:
    """[RP-03] The group's policy is customized, and a failure of `key` came back earlier than its backoff."""
    return bool(run.settings.customized_ms) and bool(get_early_retries(run, key))


def has_long_backoff_retry(run: PopRun) -> bool:
    """A push listener's failure came back, and the backoff for it outlasts the revive lag, the proxy's hold and the
    pickup together: a client that nacks for 0-1 s instead must show an early retry."""
    if run.workload.api != "push":
        return False
    long_ms = REVIVE_LAG_MAX_MS + run.long_polling_ms + PICKUP_MS
    for key in {d.uniq_key for d in run.deliveries}:
        seen = run.get_deliveries(key)
        for count, before in enumerate(seen[:-1], 1):
            attempt = count if run.workload.fifo else before.message.get("deliveryAttempt", count)
            if run.get_answer(before) in FAILURES and get_reference_delay_ms(run, attempt) > long_ms:
                return True
    return False


def is_exponential_long_retry(run: PopRun) -> bool:
    return run.settings.exponential is not None and has_long_backoff_retry(run)


def is_fifo_dead_lettered_at_first_failure(run: PopRun, key: str) -> bool:
    """[PG-02] FIFO, a customized group policy: `key` was dead-lettered after a single failed delivery (the client
    took maxAttempts as 1)."""
    seen = run.get_deliveries(key)
    return run.workload.fifo and bool(run.settings.customized_ms) and key in run.final.get_dead_keys() \
        and len(seen) == 1 and run.get_answer(seen[0]) in FAILURES


def is_fifo_push_failure(run: PopRun) -> bool:
    """A FIFO push listener failed a message under a customized policy with maxAttempts > 1: a client without the
    customized policy must dead-letter it at once."""
    return run.workload.api == "push" and run.workload.fifo and bool(run.settings.customized_ms) \
        and run.settings.max_attempts > 1 and any(run.get_answer(d) in FAILURES for d in run.deliveries)
