"""The client's side of the broker's consumer offsets (spec/10-rebalance.md, spec/11-guarantees.md): a commit
arrives and is stored as it is, one-way commits may be held in the network, and a queue's new owner starts where
computePullFromWhere says."""

from __future__ import annotations

from model.client.cluster import Cluster
from model.client.consumer import ConsumerInstance
from model.client.observations import OffsetCommitted
from model.values.config import ConsumeFromWhere
from model.values.message import MessageQueue, is_retry_topic
from model.values.names import GROUP
from model.values.wire import GetMaxOffset, QueryConsumerOffset, UpdateConsumerOffset, exchange


def commit_broker_offset(cluster: Cluster, mq: MessageQueue, offset: int, source: str, rules,
                         lifetime: tuple[int, int] = (0, 0), client_id: str = "",
                         oneway: bool = False) -> tuple[Cluster, list]:
    """[SY-02] The broker stores whatever offset arrives, smaller or not; a `oneway` commit may instead be held in
    the network, and is observed when it arrives."""
    cluster, result = exchange(cluster, UpdateConsumerOffset(client_id, GROUP, mq, offset, lifetime, oneway))
    if result.previous is None or result.previous == offset:
        return cluster, []
    return cluster, [OffsetCommitted(mq, offset, result.previous, source, cluster.now, rules, lifetime)]


def send_oneway(cluster: Cluster, client_id: str, updates, rules) -> tuple[Cluster, list]:
    """[SY-02] updateConsumeOffsetToBroker is one-way: committed at once, or held in the network."""
    observations = []
    consumer = cluster.consumers[client_id]
    for mq, offset in updates:
        lifetime = (consumer.incarnation, consumer.generations.get(mq, 0))
        cluster, seen = commit_broker_offset(cluster, mq, offset, "persist", rules, lifetime, client_id, True)
        observations.extend(seen)
    return cluster, observations


def compute_pull_from_where(cluster: Cluster, consumer: ConsumerInstance, mq: MessageQueue) -> int:
    """[RB-04] The new owner starts at the stored offset (the broker's, or offsets.json when BROADCASTING); with
    none, the broker answers 0 while the queue's head is still in memory (ConsumerManageProcessor), else
    CONSUME_FROM_LAST_OFFSET → max offset (0 for %RETRY%), FIRST → 0. The queries change nothing at the broker."""
    if cluster.config.is_clustering:
        stored = exchange(cluster, QueryConsumerOffset(GROUP, mq))[1].offset
    else:
        stored = consumer.offset_store.file.get(mq, -1)
    if stored is not None and stored >= 0:
        return stored
    if cluster.config.consume_from_where is ConsumeFromWhere.CONSUME_FROM_FIRST_OFFSET or is_retry_topic(mq.topic):
        return 0
    return exchange(cluster, GetMaxOffset(mq))[1].offset
