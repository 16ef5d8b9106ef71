"""The causes a 5.x client's declared deviation can name (conformance/checker/deviations5.py): each a predicate over a
`PopRun` and one message key ("" for the run), true when that mechanism explains the message's deviation, as
causes.py's are for the 4.x clients.
"""

from __future__ import annotations

from conformance.checker.pop_checks import ARRIVAL_SLACK_MS, FAILURES, get_reference_delay_ms
from conformance.history.pop_records import PopRun

# rocketmq-python-client's RetryPolicy.DEFAULT_RECONSUME_DELAY: the nack it makes without a customized backoff.
PYTHON_DEFAULT_NACK_MS = 1000


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


def has_failed_push_retry(run: PopRun) -> bool:
    """A push listener failed a message and it came back (RP-03 is judged in the run)."""
    return run.workload.api == "push" and any(
        run.get_answer(d) in FAILURES and len(run.get_deliveries(d.uniq_key)) > d.seen_before + 1
        for d in run.deliveries)


def is_exponential_push_retry(run: PopRun) -> bool:
    """An exponential group's push listener failed a message whose backoff outlasts the client's default nack and
    the proxy's longest hold, and the message came back: an ignored policy must show."""
    exponential = run.settings.exponential
    return exponential is not None and exponential[0] > PYTHON_DEFAULT_NACK_MS + run.long_polling_ms \
        and has_failed_push_retry(run)


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
