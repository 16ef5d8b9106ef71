"""The client's side of the broker's consumer offsets (spec/10-rebalance.md, spec/11-guarantees.md): a commit
arrives and is stored as it is, one-way commits may be held in the network, and a queue's new owner starts where
computePullFromWhere says."""

from __future__ import annotations

from typing import TYPE_CHECKING

from model.broker.consumer_offsets import commit_offset, on_query_consumer_offset, query_offset
from model.client.consumer import ConsumerInstance, OnewayCommit
from model.client.observations import OffsetCommitted
from model.values.config import ConsumeFromWhere
from model.values.message import MessageQueue, is_retry_topic
from model.values.names import GROUP
from model.values.records import evolve

if TYPE_CHECKING:  # the cluster state these steps transform (built and stepped by model/system/)
    from model.system.state import System


def commit_broker_offset(system: System, mq: MessageQueue, offset: int, source: str, rules,
                         lifetime: tuple[int, int] = (0, 0)) -> tuple[System, list]:
    """[SY-02] The broker stores whatever offset arrives, smaller or not."""
    previous = query_offset(system.broker, GROUP, mq.topic, mq.queue_id)
    if previous == offset:
        return system, []
    broker = commit_offset(system.broker, GROUP, mq.topic, mq.queue_id, offset)
    return evolve(system, broker=broker), [OffsetCommitted(mq, offset, previous, source, system.now, rules, lifetime)]


def send_oneway(system: System, client_id: str, updates, rules) -> tuple[System, list]:
    """[SY-02] updateConsumeOffsetToBroker is one-way: committed at once, or held in the network."""
    observations = []
    consumer = system.consumers[client_id]
    for mq, offset in updates:
        lifetime = (consumer.incarnation, consumer.generations.get(mq, 0))
        if system.hold_oneway:
            commit = OnewayCommit(client_id, mq, offset, system.now, lifetime)
            system = evolve(system, oneway=system.oneway.append(commit))
        else:
            system, seen = commit_broker_offset(system, mq, offset, "persist", rules, lifetime)
            observations.extend(seen)
    return system, observations


def compute_pull_from_where(system: System, consumer: ConsumerInstance, mq: MessageQueue) -> int:
    """[RB-04] The new owner starts at the stored offset (the broker's, or offsets.json when BROADCASTING); with
    none, the broker answers 0 while the queue's head is still in memory (ConsumerManageProcessor), else
    CONSUME_FROM_LAST_OFFSET → max offset (0 for %RETRY%), FIRST → 0."""
    low = system.min_offsets.get(mq, 0)
    if system.config.is_clustering:
        stored = on_query_consumer_offset(system.broker, GROUP, mq.topic, mq.queue_id, low)
    else:
        stored = consumer.offset_store.file.get(mq, -1)
    if stored is not None and stored >= 0:
        return stored
    if system.config.consume_from_where is ConsumeFromWhere.CONSUME_FROM_FIRST_OFFSET or is_retry_topic(mq.topic):
        return 0
    return system.broker.store.get_max_offset_in_queue(mq.topic, mq.queue_id)
