"""A stopped POP consumer pops no more (spec/19-pop-guarantees.md, PG-01: a consumer's crash only adds deliveries).

mutmut found `pop_consumer.stop_pop_consumer` 12 and 14 unchecked: no test looked at a consumer stopped while the
broker held its empty pop. Once the instance is gone nothing of it runs: DefaultMQPushConsumerImpl.shutdown shuts
its client instance down (DefaultMQPushConsumerImpl 5.3.3 L903-L914), which stops the PullMessageService
(MQClientInstance 5.3.3 L969), whose loop takes no more requests once stopped (PullMessageService 5.3.3 L129-L131)
and schedules no later pop (PullMessageService 5.3.3 L64-L73); a pop still reaching popMessage is refused by
makeSureStateOK (DefaultMQPushConsumerImpl 5.3.3 L510-L516, L676-L683). A crashed process runs nothing at all.
"""

from __future__ import annotations

import pytest

from model.broker.pop.state import PopGroupConfig
from model.client.pop_consumer import POP_POLL_MILLIS, PopConsumer, PopDelivered
from model.system.events import AddPopConsumer, Advance, Produce, RemovePopConsumer
from model.system.step import create_system, step
from model.values.config import Config

GP = "GP"


@pytest.mark.parametrize("via_proxy", [False, True])
def test_a_consumer_stopped_while_its_pop_is_held_pops_no_more(via_proxy):
    """PG-01: p1 pops an empty topic, so the broker holds its pop (PopLongPollingService) and its next poll is due
    POP_POLL_MILLIS later. p1 is stopped; then a message is stored and the clock passes that poll. Nothing of p1
    runs after its stop (DefaultMQPushConsumerImpl 5.3.3 L903-L914, MQClientInstance 5.3.3 L969,
    PullMessageService 5.3.3 L64-L73 and L129-L131,
    https://github.com/apache/rocketmq/blob/rocketmq-all-5.3.3/client/src/main/java/org/apache/rocketmq/client/impl/consumer/PullMessageService.java#L129-L131):
    neither the store's wake of the held pop nor the poll timer pops for p1, so nothing is delivered to it and the
    message is still there for p2, which starts later and gets it at its first pop."""
    system = create_system(Config(profile="5.3.3"), ("c1",), pop_groups={GP: PopGroupConfig()})
    system, _ = step(system, AddPopConsumer(PopConsumer("p1", GP, 0, via_proxy, 1, 30_000)))
    system, seen = step(system, Advance(system.now + 1_000))
    assert not [o for o in seen if isinstance(o, PopDelivered)]
    system, _ = step(system, RemovePopConsumer("p1"))
    delivered = []
    for ev in [Produce("m"), Advance(system.now + 2 * POP_POLL_MILLIS)]:
        system, seen = step(system, ev)
        delivered += [o for o in seen if isinstance(o, PopDelivered)]
    assert delivered == []
    system, _ = step(system, AddPopConsumer(PopConsumer("p2", GP, 0, via_proxy, 1, 30_000)))
    system, seen = step(system, Advance(system.now))
    assert [(o.client_id, [m.uniq_key for m in o.messages]) for o in seen if isinstance(o, PopDelivered)] == [
        ("p2", ["m"])]
