"""Declared deviations of the 5.x clients from the 5.x rules (chapters 16-19), in the form of deviations.py's: rule,
client, what it does instead, its source, the causes that explain each message it covers
(conformance/checker/causes5.py), and `when` it must show. spec/13-clients.md reads them.

The gRPC clients' sources: no tag of apache/rocketmq-clients names these releases, so a source is the released
package's file and lines, with the repository commit whose file has the same code where one does.
"""

from __future__ import annotations

from conformance.checker.causes import Cause
from conformance.checker.causes5 import (
    has_long_backoff_retry,
    is_customized_backoff_ignored,
    is_exponential_backoff_ignored,
    is_exponential_long_retry,
    is_fifo_dead_lettered_at_first_failure,
    is_fifo_push_failure,
)
from conformance.checker.deviations import Deviation

PYTHON5 = ("rocketmq-python-client", "5.1.2")
CLIENTS_COMMIT = "https://github.com/apache/rocketmq-clients/blob/da8271b572b41b627bcbbdfb5b3310c0c5e4736b/"
PYTHON5_SOURCE = CLIENTS_COMMIT + "python/"
NODE5 = ("rocketmq-client-nodejs", "1.0.8")
NODE5_SETTINGS = CLIENTS_COMMIT + "nodejs/src/consumer/PushSubscriptionSettings.ts"


def declare(rule: str, client: tuple[str, str], source: str, when, claim: str, *causes: tuple) -> Deviation:
    """A 5.x deviation; `causes` as (name, predicate over (PopRun, key)) pairs."""
    return Deviation(rule, client, claim, source, when=when, causes=tuple(Cause(*cause) for cause in causes))


DECLARED5: tuple[Deviation, ...] = (
    declare("RP-03", PYTHON5, PYTHON5_SOURCE + "rocketmq/v5/consumer/push/push_consumer.py#L143-L147",
            is_exponential_long_retry,
            "a PushConsumer reads only a customized backoff from its settings: for an exponential group it nacks with "
            "CustomizedBackoffRetryPolicy(None, 17), i.e. 1 s (RetryPolicy.DEFAULT_RECONSUME_DELAY) for every "
            "attempt, so a failed message comes back long before the group's backoff (PyPI 5.1.2: "
            "rocketmq/v5/consumer/push/push_consumer.py L180-L184, the same code as the commit linked)",
            ("the exponential backoff ignored: a 1 s nack", is_exponential_backoff_ignored)),
    declare("RP-03", NODE5, NODE5_SETTINGS + "#L106-L118", has_long_backoff_retry,
            "a PushConsumer reads no customized backoff (\"not yet implemented\": no retry policy, so every nack is "
            "0 ms), and keeps an exponential one's initial and max in seconds (Duration.seconds) but nacks with "
            "getNextAttemptDelay(attempt) as milliseconds (a 20 s backoff becomes a 20 ms nack): either way a failed "
            "message comes back as soon as the proxy revives it",
            ("the exponential backoff read in seconds, nacked in milliseconds", is_exponential_backoff_ignored),
            ("no customized backoff: a 0 ms nack", is_customized_backoff_ignored)),
    declare("PG-02", NODE5, NODE5_SETTINGS + "#L116-L118", is_fifo_push_failure,
            "a customized backoff (every group's default) is not read at all (\"not yet implemented\"), so a FIFO "
            "PushConsumer has no retry policy and takes maxAttempts as 1 (npm 1.0.8 src/consumer/ProcessQueue.ts "
            "L281, eraseFifoMessage): a FIFO message is forwarded to the DLQ at its first failure, not after "
            "maxAttempts local attempts",
            ("FIFO: dead-lettered at its first failure (maxAttempts read as 1)",
             is_fifo_dead_lettered_at_first_failure)),
)
# The smallest workload seen showing each deviation: Python source of the PopWorkload (pop_workload.py).
_EXPONENTIAL = ('PopWorkload((PopMessage("m0", ("FAILURE",)),), api="push", retry_max_times=3, policy={"type": '
                '"EXPONENTIAL", "exponentialRetryPolicy": {"initial": 20000, "max": 60000, "multiplier": 2}})')
COUNTEREXAMPLES5: dict[tuple[str, tuple[str, str]], str] = {
    ("RP-03", PYTHON5): _EXPONENTIAL,
    ("RP-03", NODE5): _EXPONENTIAL,
    ("PG-02", NODE5): 'PopWorkload((PopMessage("m0", ("FAILURE",)), PopMessage("m1"), PopMessage("m2")), api="push", '
                      'fifo=True, retry_max_times=3)',
}
# (rule, client) -> why the client cannot exercise the rule.
NOT_APPLICABLE5: dict[tuple[str, tuple[str, str]], str] = {}
