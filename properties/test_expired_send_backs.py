"""cleanExpiredMsg's send-backs when the broker refuses them, a late failure of a batch it partly emptied, and the
send-back's other ways out (spec/09-consume-timeout.md CT-02..CT-04, spec/08-concurrently.md CC-06, CC-07,
spec/02-send-back.md): what the client sends, what stays cached, what the broker stores and when a dead letter
arrives. Each expectation is derived from the RocketMQ source cited in the test, written out here."""

from __future__ import annotations

import pytest

from model.broker.state import PERM_READ, PERM_WRITE
from model.client.listener import ConsumeStatus, ListenerResult
from model.client.observations import DlqArrival, ListenerInvoked, Note, OffsetUpdated, SendBackOutcome
from model.system.events import Advance, CompleteConsume, Produce, RefuseRequests, SetBrokerPermission
from model.system.step import create_system
from model.values.config import Config
from model.values.message import MessageQueue, get_dlq_topic, get_retry_topic
from model.values.names import GROUP, TOPIC
from model.values.wire import ResponseCode
from properties.steps import run

FAILED = ListenerResult(ConsumeStatus.RECONSUME_LATER)
TO_DLQ = ListenerResult(ConsumeStatus.RECONSUME_LATER, delay_level_when_next_consume=-1)
Q1 = MessageQueue(TOPIC, 1)
SCHEDULE_TOPIC = "SCHEDULE_TOPIC_XXXX"
MINUTE = 60_000
REMOVED = "expired message removed, offset not updated"
SKIPPED = "send-back skipped: no longer cached"


def get_send_backs(seen) -> list[SendBackOutcome]:
    return [o for o in seen if isinstance(o, SendBackOutcome)]


def get_notes(seen, rule: str) -> list[Note]:
    return [o for o in seen if isinstance(o, Note) and rule in o.rules]


def start_consuming(config: Config, keys=("k1",)):
    """One instance consuming `keys` from queue 1: they are pulled at time 0 and their listener runs."""
    system = create_system(config, ("c1",))
    system, seen = run(system, *[Produce(k, 1) for k in keys], Advance(100))
    return system, [o for o in seen if isinstance(o, ListenerInvoked)]


def get_cached_offsets(system) -> list[int]:
    return list(system.consumers["c1"].process_queues[Q1].msg_tree_map)


def test_a_late_failure_sends_back_only_what_clean_expired_msg_left_cached():
    """[CT-02] [CT-03] [CT-04] [PQ-04] 5.3.3, one request of 17 messages whose listener runs past consumeTimeout.

    The 30-minute run of cleanExpiredMsg looks min(17, 16) = 16 times at the head, sends each back and removes it
    (removeMessage stamps lastConsumeTimestamp, the offset it returns is dropped): offsets 0-15 leave the cache,
    16 stays (ProcessQueue.cleanExpiredMsg
    [5.3.3 L75-L127](https://github.com/apache/rocketmq/blob/rocketmq-all-5.3.3/client/src/main/java/org/apache/rocketmq/client/impl/consumer/ProcessQueue.java#L75-L127),
    removeMessage [L187-L192](https://github.com/apache/rocketmq/blob/rocketmq-all-5.3.3/client/src/main/java/org/apache/rocketmq/client/impl/consumer/ProcessQueue.java#L187-L192)).
    When the listener then fails, processConsumeResult skips each of the 16 the ProcessQueue no longer contains
    and goes on (`continue`) to send back the 17th, the one message still cached; the offset moves to 17
    (ConsumeMessageConcurrentlyService
    [5.3.3 L278-L309](https://github.com/apache/rocketmq/blob/rocketmq-all-5.3.3/client/src/main/java/org/apache/rocketmq/client/impl/consumer/ConsumeMessageConcurrentlyService.java#L278-L309)).
    """
    keys = tuple(f"k{i}" for i in range(17))
    system, invoked = start_consuming(Config(profile="5.3.3", consume_message_batch_max_size=17), keys)
    assert [len(o.messages) for o in invoked] == [17]
    system, seen = run(system, Advance(30 * MINUTE))
    assert [(o.message.uniq_key, o.path, o.delay_level) for o in get_send_backs(seen)] == [
        (k, "rpc", 3) for k in keys[:16]]
    assert get_notes(seen, "CT-03") == [Note(REMOVED, 30 * MINUTE, ("CT-03",))] * 16
    assert get_cached_offsets(system) == [16]
    assert system.consumers["c1"].process_queues[Q1].last_consume_timestamp == 30 * MINUTE

    system, seen = run(system, CompleteConsume(invoked[0].request_id, FAILED))
    assert get_notes(seen, "CT-04") == [Note(SKIPPED, 30 * MINUTE, ("CT-04",))] * 16
    backs = get_send_backs(seen)
    assert [(o.message.uniq_key, o.path, o.stored.delay_time_level, o.stored.reconsume_times) for o in backs] == [
        ("k16", "rpc", 3, 1)]
    assert [o.offset for o in seen if isinstance(o, OffsetUpdated) and o.queue == Q1] == [17]


@pytest.mark.parametrize("retries", [0, 1])
def test_an_expired_message_whose_send_back_is_refused_goes_by_the_fallback_at_3_plus_reconsume_times(retries):
    """[CT-02] [CC-06] [RS-08] [RS-11] cleanExpiredMsg asks level 3 through `sendMessageBack(msg, 3)`
    ([ProcessQueue 4.9.8 L109](https://github.com/apache/rocketmq/blob/rocketmq-all-4.9.8/client/src/main/java/org/apache/rocketmq/client/impl/consumer/ProcessQueue.java#L109)),
    the same road as a listener's failure: when the broker answers CONSUMER_SEND_MSG_BACK with an error, the
    client's fallback sends a new message to %RETRY%<group> with DELAY 3 + reconsumeTimes, RECONSUME_TIME r + 1
    and MAX_RECONSUME_TIMES 16, ignoring the level asked
    ([DefaultMQPushConsumerImpl 4.9.8 L522-L549](https://github.com/apache/rocketmq/blob/rocketmq-all-4.9.8/client/src/main/java/org/apache/rocketmq/client/impl/consumer/DefaultMQPushConsumerImpl.java#L522-L549)).
    It is the producer's first attempt, so RECONSUME_TIME goes into the header and the broker stores r + 1
    (RS-11). The send succeeded, so the message leaves the cache."""
    system, invoked = start_consuming(Config())
    for _ in range(retries):
        retry = ListenerResult(ConsumeStatus.RECONSUME_LATER, delay_level_when_next_consume=1)
        system, seen = run(system, CompleteConsume(invoked[-1].request_id, retry), Advance(system.now + 3_000))
        invoked = [o for o in seen if isinstance(o, ListenerInvoked)]
    assert invoked[-1].messages[0].reconsume_times == retries
    system, seen = run(system, RefuseRequests("send_back", ResponseCode.SYSTEM_ERROR), Advance(31 * MINUTE))
    (back,) = get_send_backs(seen)
    assert (back.path, back.delay_level, back.time) == ("fallback", 3, 30 * MINUTE)
    assert {"CT-02", "CC-06"} <= set(back.rules) and "RS-14" not in back.rules
    stored = back.stored
    assert (stored.topic, stored.get_property("REAL_TOPIC"), stored.delay_time_level, stored.reconsume_times) == (
        SCHEDULE_TOPIC, get_retry_topic(GROUP), 3 + retries, retries + 1)
    assert get_notes(seen, "CT-03") == [Note(REMOVED, 30 * MINUTE, ("CT-03",))]
    assert get_cached_offsets(system) == []


def test_an_expired_message_a_read_only_broker_refuses_stays_cached_for_the_next_run():
    """[CT-02] [CT-03] [SB-02] [RS-07] A read-only broker refuses the send-back and the fallback send: the
    producer's exception leaves `sendMessageBack`, cleanExpiredMsg catches it and removes nothing
    ([ProcessQueue 4.9.8 L107-L130](https://github.com/apache/rocketmq/blob/rocketmq-all-4.9.8/client/src/main/java/org/apache/rocketmq/client/impl/consumer/ProcessQueue.java#L107-L130)).
    The message stays at the head; writeable again, the next run (one consumeTimeout later) sends it back through
    the broker at level 3 and removes it."""
    system, _invoked = start_consuming(Config())
    system, seen = run(system, SetBrokerPermission(PERM_READ), Advance(30 * MINUTE))
    assert [(o.message.uniq_key, o.path, o.stored, o.delay_level, o.time, o.rules) for o in get_send_backs(seen)] == [
        ("k1", "failed", None, 3, 30 * MINUTE, ("CT-02", "CC-07"))]
    assert get_notes(seen, "CT-03") == []
    assert get_cached_offsets(system) == [0]
    system, seen = run(system, SetBrokerPermission(PERM_READ | PERM_WRITE), Advance(45 * MINUTE))
    (back,) = get_send_backs(seen)
    assert (back.path, back.time, back.stored.delay_time_level, back.stored.reconsume_times) == (
        "rpc", 45 * MINUTE, 3, 1)
    assert get_notes(seen, "CT-03") == [Note(REMOVED, 45 * MINUTE, ("CT-03",))]
    assert get_cached_offsets(system) == []


def test_a_failure_whose_send_back_and_fallback_fail_keeps_the_asked_level_and_waits_5_s():
    """[CC-06] [CC-07] The RPC and the fallback send both fail: sendMessageBack returns false, the message gets
    reconsumeTimes + 1 locally and is resubmitted 5000 ms later
    ([ConsumeMessageConcurrentlyService 4.9.8 L277-L300](https://github.com/apache/rocketmq/blob/rocketmq-all-4.9.8/client/src/main/java/org/apache/rocketmq/client/impl/consumer/ConsumeMessageConcurrentlyService.java#L277-L300));
    the outcome records the level the listener asked (1) and the failure."""
    system, invoked = start_consuming(Config())
    failed_at = system.now
    retry = ListenerResult(ConsumeStatus.RECONSUME_LATER, delay_level_when_next_consume=1)
    system, seen = run(system, CompleteConsume(invoked[0].request_id, retry, True, True))
    assert [(o.message.uniq_key, o.path, o.stored, o.delay_level, o.time, o.rules) for o in get_send_backs(seen)] == [
        ("k1", "failed", None, 1, failed_at, ("CC-06", "CC-07"))]
    system, seen = run(system, Advance(failed_at + 5_000))
    assert [(o.time, o.messages[0].reconsume_times) for o in seen if isinstance(o, ListenerInvoked)] == [
        (failed_at + 5_000, 1)]


@pytest.mark.parametrize("way", ["rpc", "fallback"])
def test_a_dead_letter_stored_at_once_arrives_at_the_send_back(way):
    """[SB-04] [SB-11] [RS-03] [RS-05] A dead letter the broker stores at once is in %DLQ%<group> at the instant
    of the send-back, with reconsumeTimes 1.

    rpc (4.9.8): delayLevelWhenNextConsume -1 sends the message to the DLQ whatever its reconsumeTimes
    ([SendMessageProcessor 4.9.8 L191-L200](https://github.com/apache/rocketmq/blob/rocketmq-all-4.9.8/broker/src/main/java/org/apache/rocketmq/broker/processor/SendMessageProcessor.java#L191-L200)).
    fallback (5.3.3, maxReconsumeTimes 0, the RPC failing): RECONSUME_TIME 1 > MAX_RECONSUME_TIMES 0 redirects the
    send to the DLQ with DELAY -1, stored at once
    ([SendMessageProcessor 5.3.3 L195-L226](https://github.com/apache/rocketmq/blob/rocketmq-all-5.3.3/broker/src/main/java/org/apache/rocketmq/broker/processor/SendMessageProcessor.java#L195-L226)).
    """
    if way == "rpc":
        config, result, flags = Config(), TO_DLQ, ()
    else:
        config, result, flags = Config(profile="5.3.3", max_reconsume_times=0), FAILED, (True,)
    system, invoked = start_consuming(config)
    now = system.now
    system, seen = run(system, CompleteConsume(invoked[0].request_id, result, *flags))
    (back,) = get_send_backs(seen)
    assert (back.path, back.stored.topic, back.stored.reconsume_times) == (way, get_dlq_topic(GROUP), 1)
    assert [o for o in seen if isinstance(o, DlqArrival)] == [DlqArrival(back.stored, now, ("CC-06",))]


@pytest.mark.parametrize("refused", [False, True])
def test_a_fallback_sent_again_by_the_producers_retry_restarts_reconsume_times(refused):
    """[RS-14] [RS-11] [CC-07] The fallback's first attempt is refused; the producer's retry sends the message whose
    RECONSUME_TIME and MAX_RECONSUME_TIMES the first attempt cleared
    ([DefaultMQProducerImpl 4.9.8 L774-L791](https://github.com/apache/rocketmq/blob/rocketmq-all-4.9.8/client/src/main/java/org/apache/rocketmq/client/impl/producer/DefaultMQProducerImpl.java#L774-L791)),
    so the broker stores reconsumeTimes 0 (header null,
    [SendMessageProcessor 4.9.8 L363](https://github.com/apache/rocketmq/blob/rocketmq-all-4.9.8/broker/src/main/java/org/apache/rocketmq/broker/processor/SendMessageProcessor.java#L363))
    at DELAY 3 + 0. `refused`: the broker refuses that retry too, so the send-back failed and the message waits 5 s
    locally (CC-07); either outcome cites the send-back it belongs to (CC-06) and the restart (RS-14)."""
    system, invoked = start_consuming(Config())
    refusal = [RefuseRequests("send", ResponseCode.SYSTEM_ERROR)] if refused else []
    system, seen = run(system, *refusal, CompleteConsume(invoked[0].request_id, FAILED, True, False, True))
    (back,) = get_send_backs(seen)
    assert {"CC-06", "RS-14"} <= set(back.rules)
    if refused:
        assert (back.path, back.stored, "CC-07" in back.rules) == ("failed", None, True)
        return
    assert (back.path, back.stored.delay_time_level, back.stored.reconsume_times) == ("fallback", 3, 0)
    assert back.stored.get_property("RECONSUME_TIME") is None
