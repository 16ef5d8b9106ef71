"""The retry bound of spec/12-orderly.md (OR-15) and its refutation by upstream issue #6163 on profile 5.0.0.

A poison message (the listener always suspends) in an orderly CLUSTERING consumer with maxReconsumeTimes = N must
be delivered at most N + 1 times and then reach %DLQ%<group>. The driver runs the whole system (model/system/step.py):
local retries on the topic's queue, the give-up send, the broker's delay timer (4.9 parks even the DLQ copy there)
and — when the broker stores the give-up in %RETRY%<group> instead of the DLQ — its redelivery from the retry queue
once the timer moves it back.

`EXPECTED_VIOLATIONS` names the profiles on which RocketMQ itself breaks the bound; the tests here run every
profile whatever the suite configuration. The chapter's machine (properties/test_orderly_system.py) checks the
same bound in the suite configuration and is a strict expected failure, keyed by that configuration, where #6163
applies (`expect_issue_6163`).
"""

from __future__ import annotations

import pytest
from hypothesis import Phase, find, given, settings
from hypothesis import strategies as st

from model.client.observations import DlqArrival, ListenerInvoked
from model.client.orderly import OrderlyResult, OrderlyStatus
from model.system.events import CompleteConsume, Produce
from model.system.route import wake_pulls
from model.system.scheduler import get_next_time, process_next
from model.system.step import create_system, step
from model.values.config import Config
from model.values.profiles import PROFILES
from properties.coverage import record_rules

# Upstream issue #6163 (#5717): 5.0.0-5.1.0 orderly consumers never reach the DLQ.
EXPECTED_VIOLATIONS = {"5.0.0": "#6163"}
ROUNDS = 2  # retry-topic round trips the driver follows before it calls the message "never dead-lettered"
POISON = "poison"
outcomes = st.lists(st.sampled_from([OrderlyStatus.SUSPEND, OrderlyStatus.EXCEPTION, OrderlyStatus.NULL]),
                    min_size=1)


def follow_poison_message(profile: str, max_times: int, failures, auto_commit: bool):
    """Run one consumer until the always-failing message is dead-lettered or was delivered for ROUNDS more
    give-ups than the bound allows. Returns (deliveries, reached_dlq, rules)."""
    config = Config(profile=profile, consume_mode="orderly", max_reconsume_times=max_times)
    system, _ = step(create_system(config, ("c1",), topic_queue_nums=1), Produce(POISON))
    deliveries, rules = 0, set()
    while deliveries <= max_times + 1 + ROUNDS:
        if system.requests:
            request_id = min(system.requests)
            result = OrderlyResult(failures[deliveries % len(failures)], auto_commit)
            system, seen = step(system, CompleteConsume(request_id, result))
        elif get_next_time(system) is None:
            raise AssertionError("the system went idle")
        else:
            system, seen = process_next(system)
            system = wake_pulls(system)
        for observation in seen:
            rules.update(observation.rules)
            if isinstance(observation, ListenerInvoked):
                deliveries += sum(m.body == POISON.encode() for m in observation.messages)
            if isinstance(observation, DlqArrival):
                return deliveries, True, rules
    return deliveries, False, rules


def is_bound_kept(profile: str, max_times: int, failures, auto_commit: bool) -> bool:
    deliveries, reached_dlq, _ = follow_poison_message(profile, max_times, failures, auto_commit)
    return reached_dlq and deliveries == max_times + 1


@pytest.mark.parametrize("profile", sorted(set(PROFILES) - set(EXPECTED_VIOLATIONS)))
@given(max_times=st.integers(0, 6), failures=outcomes, auto_commit=st.booleans())
def test_orderly_poison_message_reaches_the_dlq_after_n_plus_one_deliveries(profile, max_times, failures,
                                                                             auto_commit):
    """OR-15 OR-09: N + 1 deliveries, then the DLQ (4.9: RECONSUME_TIME r, broker >=; 5.1.1+: r + 1, broker >)."""
    deliveries, reached_dlq, rules = follow_poison_message(profile, max_times, failures, auto_commit)
    record_rules(rules)
    assert (deliveries, reached_dlq) == (max_times + 1, True)


@pytest.mark.parametrize("profile", sorted(EXPECTED_VIOLATIONS))
def test_issue_6163_orderly_message_never_reaches_the_dlq(profile):
    """OR-15 refuted on 5.0.0 (upstream #6163, #5717): Hypothesis finds a poison message that keeps cycling through
    %RETRY%<group> — the client sends RECONSUME_TIME = r = N, the broker dead-letters only r > N."""
    counterexample = find(
        st.tuples(st.integers(0, 6), outcomes, st.booleans()),
        lambda case: not is_bound_kept(profile, *case),
        # Shrinking would rerun the system hundreds of times for a nicer N; any counterexample refutes OR-15.
        settings=settings(max_examples=200, database=None, phases=(Phase.generate,)),
    )
    max_times, failures, auto_commit = counterexample
    deliveries, reached_dlq, _ = follow_poison_message(profile, max_times, failures, auto_commit)
    assert not reached_dlq and deliveries > max_times + 1
