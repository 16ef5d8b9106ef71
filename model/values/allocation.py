"""Queue allocation (AllocateMessageQueueAveragely): what a 4.x client's rebalance computes for itself and a 5.x
broker's QUERY_ASSIGNMENT computes for a client (spec/10-rebalance.md, spec/18-pop-consumer.md)."""

from __future__ import annotations


def compute_averagely(queues: list, n: int, index: int) -> list:
    """[RB-01] AllocateMessageQueueAveragely: member `index` of `n` gets a contiguous slice of the sorted queues."""
    total = len(queues)
    mod, average = total % n, (total // n + (1 if index < total % n else 0)) if total > n else 1
    start = index * average if mod == 0 or index < mod else index * average + mod
    return [queues[(start + i) % total] for i in range(min(average, total - start))]
