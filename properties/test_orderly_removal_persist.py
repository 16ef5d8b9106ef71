"""The offset persist an orderly queue's removal sends (spec/12-orderly.md, OR-12), through the system.

mutmut found the rules this persist's observation cites unchecked (`orderly_service.remove_queue` 87, 92, 93): no
test read them. RebalancePushImpl.removeUnnecessaryMessageQueue persists the queue's offset before anything else
(RebalancePushImpl 4.9.8 L85-L87), so the broker's commit it causes is OR-12's and cites it, and only it.
"""

from __future__ import annotations

from model.client.observations import OffsetCommitted
from model.client.orderly import OrderlyResult, OrderlyStatus
from model.system.events import Advance, CompleteConsume, Produce, SetMembers
from model.system.step import create_system
from model.values.config import Config
from model.values.message import MessageQueue
from model.values.names import TOPIC
from properties.steps import run

SUCCESS = OrderlyResult(OrderlyStatus.SUCCESS, True)


def test_the_persist_of_a_removed_orderly_queue_cites_or_12():
    """OR-12: c1 consumed a and b of queue 1 (offset 2 in its memory, nothing persisted yet: the first persistAll
    is 10 s after the start) when c2 joins and is given the queue. c1's rebalance removes it, and
    removeUnnecessaryMessageQueue first calls offsetStore.persist(mq) (RebalancePushImpl 4.9.8 L85-L87,
    https://github.com/apache/rocketmq/blob/rocketmq-all-4.9.8/client/src/main/java/org/apache/rocketmq/client/impl/consumer/RebalancePushImpl.java#L85-L87),
    which sends offset 2 one-way (RemoteBrokerOffsetStore 4.9.8 L151-L155); delivered at once here, the broker's
    commit of 2 on queue 1 is that persist's, and the rules it cites are exactly ("OR-12",)."""
    mq = MessageQueue(TOPIC, 1)
    system = create_system(Config(consume_mode="orderly", profile="4.9.8"), ("c1",))
    system, _ = run(system, Produce("a", queue_id=1), Produce("b", queue_id=1), Advance(0),
                    CompleteConsume(1, SUCCESS), CompleteConsume(2, SUCCESS))
    system, seen = run(system, SetMembers(("c1", "c2")))
    assert mq in system.consumers["c2"].process_queues and mq not in system.consumers["c1"].process_queues
    commits = [(o.queue, o.offset, o.source, o.rules) for o in seen if isinstance(o, OffsetCommitted)]
    assert commits == [(mq, 2, "persist", ("OR-12",))]
