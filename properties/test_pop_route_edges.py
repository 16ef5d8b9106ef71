"""The broker's POP side in the system (model/system/pop_route.py) at its edges, each drawn on purpose: a restart
of a cluster without POP, a graceful restart against a crash before any persist (PO-10), a revive run with more due
checkpoints than one run takes and one whose checkpoint was acked (IV-01), a receive whose draw is 100, and a v2
retry topic among the topics a POP group reads (IV-03). SharedBroker (properties/test_pop_system.py) reaches these
paths only on rare draws."""

from __future__ import annotations

import pytest

from model.broker.pop.config import PopConfig
from model.broker.pop.revive import ReviveAnswer
from model.broker.pop.state import PopGroupConfig
from model.client.listener import ConsumeStatus, ListenerResult
from model.client.pop_consumer import PopConsumer, PopDelivered
from model.system.events import AddPopConsumer, Advance, CompletePop, Produce, RestartBroker
from model.system.pop_route import get_pop_topics, route_pop
from model.system.step import create_system, step
from model.values.config import Config
from model.values.errors import IllegalTransition
from model.values.names import TOPIC
from model.values.pop_wire import PopRequest, ReceiveRequest, compute_ack_request

CONFIG = Config(profile="5.3.3")


def create_pop_system(group: str, pop_config: PopConfig | None = None):
    """A 5.3.3 broker with one POP group and no 4.x instance."""
    return create_system(CONFIG, (), pop_groups={group: PopGroupConfig()}, pop_config=pop_config)


def test_a_cluster_without_pop_has_no_broker_restart():
    """PO-10 is the POP broker's restart: in a 4.x cluster the event is an illegal transition that names the
    state, the event and why."""
    with pytest.raises(IllegalTransition) as illegal:
        step(create_system(Config()), RestartBroker())
    error = illegal.value
    assert (error.state, error.event) == ("a cluster without POP", "RestartBroker")
    assert error.reason == "the broker persists nothing to restart from"
    assert str(error) == ("event RestartBroker is illegal in state a cluster without POP: the broker persists "
                          "nothing to restart from")


def get_deliveries_around_a_restart(graceful: bool) -> list[tuple[str, int]]:
    """m0 popped by a remoting POP consumer at 1 ms and acked; the broker restarts at 1 s, before the first persist
    (at 5 s); the consumer's pops go on to 40 s. Each delivery as (key, reconsumeTimes)."""
    system = create_pop_system("GP")
    delivered = []

    def apply(event):
        nonlocal system
        system, seen = step(system, event)
        delivered.extend((m.uniq_key, m.reconsume_times) for o in seen if isinstance(o, PopDelivered)
                         for m in o.messages)

    apply(Produce("m0"))
    apply(AddPopConsumer(PopConsumer("p1", "GP", 0, False, 1, 60_000)))
    apply(Advance(100))
    for request_id in list(system.pop_requests):
        apply(CompletePop(request_id, ListenerResult(ConsumeStatus.CONSUME_SUCCESS)))
    apply(Advance(1_000))
    apply(RestartBroker(graceful))
    apply(Advance(40_000))
    return delivered


def test_a_graceful_restart_pops_nothing_again_and_a_crash_pops_again():
    """PO-10: a graceful shutdown persists the consumer offsets (BrokerController.shutdownBasicService,
    rocketmq-all-5.3.3 broker/src/main/java/org/apache/rocketmq/broker/BrokerController.java L1587-L1595), so the
    popped m0 is not popped again; a crash before the first scheduled persist (every flushConsumerOffsetInterval,
    5 s: L642-L666) brings the pop offset back to 0 and m0 is popped again, a first delivery (reconsumeTimes 0)."""
    assert get_deliveries_around_a_restart(graceful=True) == [("m0", 0)]
    assert get_deliveries_around_a_restart(graceful=False) == [("m0", 0), ("m0", 0)]


def test_a_revive_run_revives_32_due_checkpoints_and_leaves_the_rest_1_ms_later():
    """IV-01 in the system (spec/15-revive.md): 33 checkpoints due at once — pops of one message each at 0 with a
    10 s invisible time — are revived at the first instant more than ackTimeInterval + 1 s = 2 s past 10 000, at
    12 001: 32 by that run (REVIVE_BATCH, SY-12's bound of work per instant), the last 1 ms later; each copy is
    stored once in %RETRY%GP_TopicTest with reconsumeTimes 1, and each run is reported."""
    system = create_pop_system("GP")
    for i in range(33):
        system, _ = step(system, Produce(f"m{i}", queue_id=i % 2))
    for _ in range(33):
        system, answer = route_pop(system, PopRequest("GP", TOPIC, -1, 1, 10_000), 50)
        assert len(answer.messages) == 1
    system, seen = step(system, Advance(12_000))
    assert seen == []
    stored = {}
    for now in (12_001, 12_002):
        system, seen = step(system, Advance(now))
        assert [type(o) for o in seen] == [ReviveAnswer] and seen[0].dropped == ()
        stored[now] = seen[0].stored
    assert {now: len(copies) for now, copies in stored.items()} == {12_001: 32, 12_002: 1}
    assert all((m.topic, m.reconsume_times, m.store_timestamp) == ("%RETRY%GP_TopicTest", 1, now)
               for now, copies in stored.items() for m in copies)
    assert sorted(m.properties["UNIQ_KEY"] for copies in stored.values() for m in copies) == sorted(
        f"m{i}" for i in range(33))


def test_a_revive_run_whose_checkpoint_was_acked_reports_nothing():
    """IV-01: the run put on the timers for m0's checkpoint (due at 12 001) finds it acked at 5 s: it revives
    nothing, stores nothing and reports nothing; no retry topic is created."""
    system = create_pop_system("GP")
    system, _ = step(system, Produce("m0"))
    system, popped = route_pop(system, PopRequest("GP", TOPIC, -1, 1, 10_000), 50)
    system, _ = step(system, Advance(5_000))
    system, acked = route_pop(system, compute_ack_request("GP", TOPIC, popped.handles[0]), 50)
    assert acked.code == "SUCCESS" and system.revive_at == 12_001
    system, seen = step(system, Advance(20_000))
    assert seen == [] and "%RETRY%GP_TopicTest" not in system.broker.topics


def test_with_pop_from_retry_probability_100_every_receive_reads_the_retry_topic_first():
    """PO-02: the broker draws randomQ = random.nextInt(100) and reads the retry topic first when randomQ <
    popFromRetryProbability (PopMessageProcessor, rocketmq-all-5.3.3
    broker/src/main/java/org/apache/rocketmq/broker/processor/PopMessageProcessor.java L483-L517). At 100 every
    draw reads it first: with m0's revived copy in %RETRY%GR_TopicTest and m1 in the topic, a receive of one message
    gets the copy (reconsumeTimes 1), whatever the system's draw in [0, 99999999) — 100 included."""
    system = create_pop_system("GR", PopConfig(pop_from_retry_probability=100))
    system, _ = step(system, Produce("m0"))
    system, _ = route_pop(system, ReceiveRequest("GR", TOPIC, 1, 10_000), 7)
    system, seen = step(system, Advance(12_001))
    assert [m.topic for m in seen[0].stored] == ["%RETRY%GR_TopicTest"]
    system, _ = step(system, Produce("m1"))
    for draw in (0, 99, 100, 101, 199, 12_345_678):
        _, answer = route_pop(system, ReceiveRequest("GR", TOPIC, 1, 10_000), draw)
        assert [(m.uniq_key, m.reconsume_times) for m in answer.messages] == [("m0", 1)], draw


def test_a_v2_retry_topic_is_among_the_topics_a_pop_group_reads():
    """IV-03: with enableRetryTopicV2 the revive service stores a copy in %RETRY%{group}+{topic}
    (PopReviveService.reviveRetry, rocketmq-all-5.3.3 .../processor/PopReviveService.java L108-L111; KeyBuilder
    L25-L38), and the group's pops read it: the topics the group reads are the topic and that retry topic."""
    system = create_pop_system("GP", PopConfig(enable_retry_topic_v2=True))
    assert get_pop_topics(system, "GP") == [TOPIC]
    system, _ = step(system, Produce("m0"))
    system, _ = route_pop(system, PopRequest("GP", TOPIC, -1, 1, 10_000), 7)
    system, seen = step(system, Advance(12_001))
    assert [m.topic for m in seen[0].stored] == ["%RETRY%GP+TopicTest"]
    assert get_pop_topics(system, "GP") == [TOPIC, "%RETRY%GP+TopicTest"]
