"""SY-02 / RB-04 / RB-05 / LK-08 (spec/11-guarantees.md, spec/10-rebalance.md, spec/12-orderly.md), by example:
a broker answering QUERY_CONSUMER_OFFSET with no clock/configuration context, the sender and arrival time of a
one-way offset commit held in the network, the local offset file a broadcasting persistAll writes, and the
flow-parked exemption from isPullExpired. mutmut found these unchecked.

Expected values are written out from RocketMQ 4.9.8 (cited in each test) and the spec's rule ids, not read from
model/.
"""

from __future__ import annotations

import immutables

from model.client.listener import ConsumeStatus, ListenerResult
from model.client.observations import OffsetCommitted
from model.client.process_queue import create_process_queue
from model.client.rebalance import is_pull_stale
from model.system.events import Advance, CompleteConsume, DeliverOneway, Produce
from model.system.step import create_system
from model.values.config import Config
from model.values.message import MessageQueue
from model.values.names import GROUP, TOPIC
from model.values.records import evolve
from model.values.wire import QueryConsumerOffset, UpdateConsumerOffset, exchange
from properties.steps import run

Q0 = MessageQueue(TOPIC, 0)


def consume_first(config: Config, **kwargs):
    """c1 alone on a one-queue topic: m0 produced, pulled at 0 and consumed successfully (offset 1 in memory)."""
    system = create_system(config, ("c1",), topic_queue_nums=1, **kwargs)
    system, _ = run(system, Produce("k1"), Advance(0))
    (request_id,) = system.requests
    system, _ = run(system, CompleteConsume(request_id, ListenerResult(ConsumeStatus.CONSUME_SUCCESS)))
    return system


def test_broker_answers_an_offset_query_without_a_context():
    """RB-04: ConsumerManageProcessor.queryConsumerOffset 4.9.8 L118-L135 answers the stored offset when it is
    >= 0 (`if (offset >= 0) responseHeader.setOffset(offset)`); the broker answers a query sent to it directly
    (no clock or configuration context) with the offset committed before, 5."""
    broker = create_system(Config(profile="4.9.8"), ("c1",), topic_queue_nums=1).broker
    broker, _ = exchange(broker, UpdateConsumerOffset("c1", GROUP, Q0, 5, (0, 0), False))
    _, answer = exchange(broker, QueryConsumerOffset(GROUP, Q0))
    assert answer.offset == 5


def test_a_held_one_way_persist_names_its_sender_and_is_observed_when_it_arrives():
    """SY-02: MQClientInstance 4.9.8 L297-L301 runs persistAllConsumerOffset 10 s after start;
    RemoteBrokerOffsetStore.persistAll 4.9.8 L115 sends each cached offset one-way
    (updateConsumeOffsetToBroker(mq, offset, true)). The network holds c1's commit of offset 1 (sent by c1) and it
    reaches the broker at 12 s, where the spec observes the broker's offset changing (-1 -> 1) at that time."""
    system = consume_first(Config(profile="4.9.8"), hold_oneway=True)
    system, _ = run(system, Advance(10_000))
    assert [(c.client_id, c.queue, c.offset, c.oneway) for c in system.oneway] == [("c1", Q0, 1, True)]
    system, observations = run(system, Advance(12_000), DeliverOneway(0))
    commits = [(o.queue, o.offset, o.previous, o.source, o.time) for o in observations
               if isinstance(o, OffsetCommitted)]
    assert commits == [(Q0, 1, -1, "persist", 12_000)]


def test_a_broadcasting_persist_writes_the_local_offset_file():
    """RB-05 / OS-08: the 10 s persistAllConsumerOffset (MQClientInstance 4.9.8 L297-L301) calls
    LocalFileOffsetStore.persistAll 4.9.8 L133-L155, which copies the offsetTable entries of the queues in `mqs`
    into the file: after m0 is consumed (offset 1) the consumer's file holds Q0 -> 1."""
    system = consume_first(Config(profile="4.9.8", message_model="broadcasting"))
    assert dict(system.consumers["c1"].offset_store.file) == {}
    system, _ = run(system, Advance(10_000))
    assert dict(system.consumers["c1"].offset_store.file) == {Q0: 1}


def test_a_live_flow_parked_queue_is_never_pull_stale():
    """LK-08 / PL-02: DefaultMQPushConsumerImpl.pullMessage 4.9.8 L219-L226 stamps lastPullTimestamp on every
    attempt of a queue not dropped, and a flow-controlled one re-attempts every 50 ms
    (executePullRequestLater, L244), so RebalanceImpl 4.9.8 L347 `pq.isPullExpired()` never holds for it:
    a live parked queue whose recorded last pull is 200 s old is not stale, while an unparked one is."""
    system = create_system(Config(profile="4.9.8"), ("c1",), topic_queue_nums=1)
    pq = create_process_queue(0)
    system = evolve(system, now=200_000)
    assert is_pull_stale(system, "c1", Q0, pq)
    parked = evolve(system, flow_parked=immutables.Map({("c1", Q0): 0}))
    assert not is_pull_stale(parked, "c1", Q0, pq)
