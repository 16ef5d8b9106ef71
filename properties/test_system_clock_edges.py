"""The system's clock at its edges: the next time anything fires when only the broker's delay timer is waiting
(model.system.scheduler.get_next_time), the drain's one millisecond before a POP listener that started this instant
completes (model.system.drain.get_pop_completion), and seed 000's listener policy (compute_capped_result)."""

from __future__ import annotations

import immutables
import pytest

from model.broker.pop.state import PopGroupConfig
from model.client.consumer import ConsumeRequest
from model.client.listener import ConsumeStatus, ListenerResult
from model.client.pop_consumer import PopConsumer
from model.system.drain import compute_capped_result, get_pop_completion
from model.system.events import AddPopConsumer, Advance, CompletePop, Produce
from model.system.scheduler import get_next_time
from model.system.step import create_system, step
from model.values.config import Config
from model.values.message import Message, MessageQueue
from model.values.names import TOPIC


@pytest.mark.parametrize("profile, produced_at, expected", [("4.9.8", 0, 10_000), ("4.9.8", 550, 10_600),
                                                            ("4.9.1", 550, 10_550)])
def test_with_no_consumer_the_next_time_is_the_delay_timers(profile, produced_at, expected):
    """DT-01, DT-02 (spec/04-delay-timer.md): a message of level 3 (10 s) stored at `produced_at` is delivered by
    its level's task, which first runs 1 s after the broker starts and then every 100 ms (4.9.3+: at 1000 + 100 k,
    the first at or after the deliver time) or exactly at the deliver time (4.9.1) (ScheduleMessageService,
    rocketmq-all-4.9.8 store/src/main/java/org/apache/rocketmq/store/schedule/ScheduleMessageService.java L128-L149,
    L426-L434). With no consumer instance nothing else is on the timers: that is the system's next time, until the
    delivery."""
    system = create_system(Config(profile=profile), ())
    assert get_next_time(system) is None
    system, _ = step(system, Advance(produced_at))
    system, _ = step(system, Produce("m0", delay_level=3))
    assert get_next_time(system) == expected
    system, _ = step(system, Advance(expected - 1))
    assert len(system.broker.store.get_queue_units(TOPIC, 0)) == 0 and get_next_time(system) == expected
    system, _ = step(system, Advance(expected))
    assert len(system.broker.store.get_queue_units(TOPIC, 0)) == 1


def test_the_drain_lets_a_pop_listener_take_one_millisecond_before_completing_it():
    """PO-11: a listener takes at least 1 ms, so the drain completes a POP listener that started this millisecond
    only after moving the clock by exactly 1 ms, and one that started earlier at once."""
    system = create_system(Config(profile="5.3.3"), (), pop_groups={"GP": PopGroupConfig()})
    system, _ = step(system, Produce("m0"))
    system, _ = step(system, AddPopConsumer(PopConsumer("p1", "GP", 0, False, 1, 60_000)))
    system, _ = step(system, Advance(1))
    [request] = system.pop_requests.values()
    assert request.started_at == system.now == 1

    def listener(request):
        return CompletePop(request.request_id, ListenerResult(ConsumeStatus.CONSUME_SUCCESS))

    assert get_pop_completion(system, listener) == Advance(2)
    system, _ = step(system, Advance(2))
    assert get_pop_completion(system, listener) == listener(request)


def make_request(delay: str | None) -> ConsumeRequest:
    properties = immutables.Map({"DELAY": delay} if delay else {})
    message = Message(TOPIC, b"m0", properties=properties, reconsume_times=2)
    return ConsumeRequest(1, "c1", 1, MessageQueue(TOPIC, 0), 1, (message,), 0)


@pytest.mark.parametrize("delay, retry_times, expected_level", [(None, 0, 0), ("1", 0, 0), ("2", 0, -1),
                                                                ("3", 1, -1), ("4", 3, 0), ("18", 3, -1)])
def test_seed_000s_listener_asks_for_the_dlq_once_the_delay_level_reaches_2_plus_retry_times(delay, retry_times,
                                                                                             expected_level):
    """SY-07: seed 000's listener fails and, when `msgs.get(0).getDelayTimeLevel() >= 2 + this.retryTimes`, calls
    `context.setDelayLevelWhenNextConsume(-1)` (as spec/11-guarantees.md quotes it); otherwise the context keeps its
    default 0 (ConsumeConcurrentlyContext, rocketmq-all-4.9.8
    client/src/main/java/org/apache/rocketmq/client/consumer/listener/ConsumeConcurrentlyContext.java L32)."""
    assert compute_capped_result(make_request(delay), retry_times) == ListenerResult(
        ConsumeStatus.RECONSUME_LATER, delay_level_when_next_consume=expected_level)
