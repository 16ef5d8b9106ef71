"""The retry bound of spec/12-orderly.md (OR-15) and its refutation by upstream issue #6163 on profile 5.0.0.

A poison message (the listener always suspends) in an orderly CLUSTERING consumer with maxReconsumeTimes = N must
be delivered at most N + 1 times and then reach %DLQ%<group>. The driver below follows the message through the
model: local retries on its queue, the give-up send, and — when the broker stores it in %RETRY%<group> instead of
the DLQ — its redelivery from the retry topic after the delay (the timer is not modelled here: a delayed copy is
delivered as soon as it is stored, which changes only when, not whether, it comes back).

For the reports: `EXPECTED_VIOLATIONS` names the profiles on which RocketMQ itself breaks the bound.
"""

from __future__ import annotations

import pytest
from attrs import evolve
from hypothesis import event, find, given, settings
from hypothesis import strategies as st

from model.broker import create_broker
from model.config import Config
from model.consume_common import reset_retry_and_namespace
from model.message import PROPERTY_REAL_TOPIC, is_dlq_topic, is_retry_topic
from model.orderly import OrderlyStatus, process_consume_result, process_take
from model.process_queue import create_process_queue, put_message
from model.profiles import PROFILES
from properties.test_orderly_consume import GROUP, TOPIC, make_messages

# Upstream issue #6163 (#5717): 5.0.0-5.1.0 orderly consumers never reach the DLQ.
EXPECTED_VIOLATIONS = {"5.0.0": "#6163"}
ROUNDS = 4  # retry-topic round trips the driver follows before it calls the message "never dead-lettered"
outcomes = st.lists(st.sampled_from([OrderlyStatus.SUSPEND, OrderlyStatus.EXCEPTION, OrderlyStatus.NULL]),
                    min_size=1)


def get_real_topic(stored) -> str:
    return stored.get_property(PROPERTY_REAL_TOPIC) or stored.topic


def follow_poison_message(profile: str, max_times: int, failures, auto_commit: bool):
    """Deliver one always-failing message until it is dead-lettered or made ROUNDS retry-topic round trips.

    Returns (deliveries, reached_dlq, rules)."""
    config = Config(profile=profile, consume_mode="orderly", max_reconsume_times=max_times)
    broker = create_broker(config, GROUP, {TOPIC: 1})
    message, deliveries, rules = make_messages(0, 1)[0], 0, set()
    for _round in range(ROUNDS + 1):
        pq, _ = put_message(create_process_queue(), [message])
        while True:
            pq, msgs = process_take(pq, config)
            msgs = tuple(reset_retry_and_namespace(m, GROUP) for m in msgs)
            deliveries += 1
            outcome = failures[deliveries % len(failures)]
            result = process_consume_result(broker, pq, config, GROUP, msgs, outcome, 0, auto_commit=auto_commit)
            pq, broker = result.pq, result.broker
            rules.update(result.rules)
            if result.sent:
                break
        stored = result.sent[0]
        if is_dlq_topic(get_real_topic(stored)):
            return deliveries, True, rules
        assert is_retry_topic(get_real_topic(stored))
        # The scheduled copy comes back to the retry topic with the stored reconsume times.
        message = evolve(stored, topic=get_real_topic(stored), queue_offset=0)
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
    for rule in sorted(rules):
        event(rule)
    assert (deliveries, reached_dlq) == (max_times + 1, True)


@pytest.mark.parametrize("profile", sorted(EXPECTED_VIOLATIONS))
def test_issue_6163_orderly_message_never_reaches_the_dlq(profile):
    """OR-15 refuted on 5.0.0 (upstream #6163, #5717): Hypothesis finds a poison message that keeps cycling through
    %RETRY%<group> — the client sends RECONSUME_TIME = r = N, the broker dead-letters only r > N."""
    counterexample = find(
        st.tuples(st.integers(0, 6), outcomes, st.booleans()),
        lambda case: not is_bound_kept(profile, *case),
        settings=settings(max_examples=200, database=None),
    )
    max_times, failures, auto_commit = counterexample
    deliveries, reached_dlq, _ = follow_poison_message(profile, max_times, failures, auto_commit)
    assert not reached_dlq and deliveries > max_times + 1
