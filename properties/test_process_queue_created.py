"""[PQ-06] A new ProcessQueue's clocks start at its creation time: mutmut found the initial lastConsumeTimestamp
unchecked."""

from __future__ import annotations

from model.client.process_queue import create_process_queue


def test_a_new_process_queue_stamps_its_three_clocks_with_its_creation_time():
    """[PQ-06] ProcessQueue initialises lastPullTimestamp, lastConsumeTimestamp and lastLockTimestamp to
    System.currentTimeMillis() when it is made (ProcessQueue 4.9.8 L61-L64,
    https://github.com/apache/rocketmq/blob/rocketmq-all-4.9.8/client/src/main/java/org/apache/rocketmq/client/impl/consumer/ProcessQueue.java#L61-L64),
    and it holds nothing yet."""
    pq = create_process_queue(5_000)
    assert (pq.last_pull_timestamp, pq.last_consume_timestamp, pq.last_lock_timestamp) == (5_000, 5_000, 5_000)
    assert (pq.msg_count, pq.msg_size, pq.locked, pq.dropped) == (0, 0, False, False)
