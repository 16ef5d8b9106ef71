"""QUERY_ASSIGNMENT (QueryAssignmentProcessor, spec/18-pop-consumer.md): with client rebalance off, a client asks
the broker which queues of a topic it reads, and how."""

from __future__ import annotations

from typing import NamedTuple

from model.broker.pop.config import MessageRequestMode, PopConfig
from model.values.allocation import compute_averagely
from model.values.message import RETRY_GROUP_TOPIC_PREFIX

# A popping client's assigned queue that stands for every queue of the topic (the broker pops them all).
ALL_QUEUES = -1


class Assignment(NamedTuple):
    """The broker's answer: the mode (PULL or POP) and the queue ids assigned, None where it has no valid
    assignment (the topic or the group's clients unknown, a strategy it lacks: the client keeps what it had)."""

    mode: MessageRequestMode
    queue_ids: tuple[int, ...] | None


def compute_assignment(topic: str, queue_count: int | None, client_ids: tuple[str, ...], client_id: str,
                       strategy: str, config: PopConfig) -> Assignment:
    """[PC-05] A retry topic is read by PULL, any other topic by the broker's defaultMessageRequestMode; the
    queues are allocated over the group's clients (sorted) by AllocateMessageQueueAveragely ("AVG"), except that a
    popping client whose defaultPopShareQueueNum is <= 0 (the default) or reaches every other client pops every
    queue: one assignment of queue -1."""
    mode = MessageRequestMode.PULL if topic.startswith(RETRY_GROUP_TOPIC_PREFIX) \
        else config.default_message_request_mode
    if not queue_count or not client_ids or strategy != "AVG":
        return Assignment(mode, None)
    cids, queues = sorted(client_ids), list(range(queue_count))
    share = config.default_pop_share_queue_num
    if mode is MessageRequestMode.POP and (share <= 0 or share >= len(cids) - 1):
        return Assignment(mode, (ALL_QUEUES,))
    if client_id not in cids:
        return Assignment(mode, ())
    index = cids.index(client_id)
    if mode is MessageRequestMode.PULL:
        return Assignment(mode, tuple(compute_averagely(queues, len(cids), index)))
    if len(cids) > len(queues):  # allocate: each client one queue, round the queues
        return Assignment(mode, (queues[index % len(queues)],))
    assigned = set(compute_averagely(queues, len(cids), index))
    for step in range(1, share + 1):  # and the queues of the `share` clients after it in the list
        assigned.update(compute_averagely(queues, len(cids), (index + step) % len(cids)))
    return Assignment(mode, tuple(sorted(assigned)))
