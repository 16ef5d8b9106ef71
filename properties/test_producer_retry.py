"""Properties of RS-14 (spec/02-send-back.md): a producer retry of the client's own send to %RETRY%<group>.

The oracle is RocketMQ's send loop written out: a retry carries neither RECONSUME_TIME nor MAX_RECONSUME_TIMES
(the first attempt cleared them), so the broker stores reconsumeTimes 0 under the group's retryMaxTimes. The
system-level checks drive the whole model: the message's next delivery counts from 0 again.
"""

from __future__ import annotations

import pytest
from hypothesis import event, find, given, settings
from hypothesis import strategies as st
from immutables import Map

from model.broker.retry_send import on_send_retry_message
from model.broker.state import SubscriptionGroupConfig
from model.client.listener import ConsumeStatus, ListenerResult
from model.client.observations import ListenerInvoked, SendBackOutcome
from model.client.orderly import OrderlyResult, OrderlyStatus
from model.client.retry_message import (
    compute_fallback_retry_message,
    compute_orderly_retry_message,
    compute_producer_retry,
)
from model.system.events import Advance, CompleteConsume, Produce
from model.system.step import create_system, step
from model.values.config import Config, ConsumeMode
from model.values.message import Message, get_dlq_topic, get_retry_topic
from model.values.names import GROUP as SYSTEM_GROUP
from oracle.system_oracle import Ledger
from properties.send_back_strategies import DLQ_TOPIC, GROUP, RETRY_TOPIC, VERSIONS, BrokerCase, get_destination

NOW = 1_000_000
GROUP_RETRY_MAX = 16  # SubscriptionGroupConfig's default retryMaxTimes


def send(version: str, built, retry_max: int = GROUP_RETRY_MAX):
    config = Config(profile=version)
    broker = BrokerCase(version, SubscriptionGroupConfig(GROUP, retry_max_times=retry_max), 6, None, None,
                        None).build()
    return on_send_retry_message(broker, config, *built, NOW, 0)[1].stored


@given(version=st.sampled_from(VERSIONS), max_times=st.integers(-1, 20), reconsume=st.integers(0, 20),
       orderly=st.booleans(), retry_max=st.integers(1, 20))
def test_a_retried_send_restarts_the_count(version, max_times, reconsume, orderly, retry_max):
    """RS-14: whatever the first attempt said, the retry is stored with reconsumeTimes 0, without the two
    properties, and goes to the DLQ only if the group's retryMaxTimes is 0 (never here: it is at least 1)."""
    mode = ConsumeMode.ORDERLY if orderly else ConsumeMode.CONCURRENTLY
    config = Config(profile=version, consume_mode=mode, max_reconsume_times=max_times)
    msg = Message("T", b"x", properties=Map({"UNIQ_KEY": "U1"}), msg_id="ID", reconsume_times=reconsume)
    builder = compute_orderly_retry_message if orderly else compute_fallback_retry_message
    built = builder(msg, GROUP, config)
    retried, header_reconsume, header_max = compute_producer_retry(built[0])
    assert (header_reconsume, header_max) == (0, None)
    assert "RECONSUME_TIME" not in retried.properties and "MAX_RECONSUME_TIMES" not in retried.properties
    stored = send(version, (retried, header_reconsume, header_max), retry_max)
    assert stored.reconsume_times == 0
    assert get_destination(stored)[0] == RETRY_TOPIC
    event("RS-14")


def test_a_retried_give_up_escapes_the_dlq():
    """RS-14, a refutation of "an orderly give-up at the maximum reaches the DLQ" (RS-12 in 4.9.8): Hypothesis finds
    it false as soon as the first attempt is refused and the producer's retry is stored."""
    config = Config(profile="4.9.8", consume_mode=ConsumeMode.ORDERLY, max_reconsume_times=3)
    msg = Message("T", b"x", properties=Map({"UNIQ_KEY": "U1"}), msg_id="ID", reconsume_times=3)
    built = compute_orderly_retry_message(msg, GROUP, config)
    assert get_destination(send("4.9.8", built))[0] == DLQ_TOPIC

    def escapes(retried: bool) -> bool:
        sent = compute_producer_retry(built[0]) if retried else built
        return get_destination(send("4.9.8", sent))[0] != DLQ_TOPIC

    assert find(st.booleans(), escapes, settings=settings(database=None)) is True


def first_request(system):
    (request_id,) = system.requests
    return request_id


def test_the_retried_fallback_is_delivered_at_zero():
    """RS-14 through the whole model: a fallback stored by the producer's retry is delivered with reconsumeTimes 0
    where the first attempt would have stored r + 1."""
    seen_times = {}
    for retried in (False, True):
        system = create_system(Config(), topic_queue_nums=1)
        system, _ = step(system, Produce("k1"))
        system, _ = step(system, Advance(0))
        for _ in range(2):  # two failures: the second one's fallback is the one under test
            failed = ListenerResult(ConsumeStatus.RECONSUME_LATER)
            event_ = CompleteConsume(first_request(system), failed, send_back_rpc_fails=True, send_retried=retried)
            system, _ = step(system, event_)
            system, _ = step(system, Advance(system.now + 60_000))
        seen_times[retried] = system.requests[first_request(system)].messages[0].reconsume_times
    assert seen_times == {False: 2, True: 0}


def test_a_retried_orderly_give_up_comes_back():
    """RS-14 through the whole model: an orderly message at its maximum is given up to the DLQ (4.9.8), but when
    the producer's retry stores it, it goes to %RETRY% at reconsumeTimes 0 and so will come back."""
    config = Config(consume_mode=ConsumeMode.ORDERLY, max_reconsume_times=1)
    where = {}
    for retried in (False, True):
        system = create_system(config, topic_queue_nums=1)
        system, _ = step(system, Produce("k1"))
        system, _ = step(system, Advance(0))
        failed = OrderlyResult(OrderlyStatus.SUSPEND)
        system, _ = step(system, CompleteConsume(first_request(system), failed))  # r = 0: retried locally
        system, _ = step(system, Advance(system.now + 60_000))
        system, seen = step(system, CompleteConsume(first_request(system), failed, send_retried=retried))
        where[retried] = [(get_destination(o.stored)[0], o.stored.reconsume_times) for o in seen
                          if isinstance(o, SendBackOutcome)]
    assert where == {False: [(get_dlq_topic(SYSTEM_GROUP), 1)], True: [(get_retry_topic(SYSTEM_GROUP), 0)]}


def test_a_restarted_count_allows_another_chain_of_copies():
    """SY-05 with RS-14: at maxReconsumeTimes 1 a message reaches the listener as at most 1 + 1 copies, but when
    its first fallback is stored by the producer's retry (reconsumeTimes 0) the count starts again: the original,
    the restarted copy and its retry, three, which the Ledger allows; without the restart they break the bound."""
    config = Config(max_reconsume_times=1)
    system = create_system(config, topic_queue_nums=1)
    history = []
    for event_ in (Produce("k1"), Advance(0)):
        system, seen = step(system, event_)
        history += seen
    for retried in (True, False, False):
        failed = ListenerResult(ConsumeStatus.RECONSUME_LATER)
        system, seen = step(system, CompleteConsume(first_request(system), failed, send_back_rpc_fails=retried,
                                                    send_retried=retried))
        history += seen
        system, seen = step(system, Advance(system.now + 60_000))
        history += seen
    ledger = Ledger(config)
    ledger.record(history)
    assert (len(ledger.copies["k1"]), ledger.restarts["k1"], ledger.dlq) == (3, 1, {"k1"})
    last = next(o for o in reversed(history) if isinstance(o, ListenerInvoked)).messages[0]
    ledger.restarts["k1"] = 0  # the same copies without the restart
    with pytest.raises(AssertionError, match=r"\[SY-05\] k1: 3 copies, max 1, 0 restarts"):
        ledger.check_copies(last)
