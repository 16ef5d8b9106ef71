"""The size counter ProcessQueue.commit leaves (spec/05-process-queue.md, PQ-07).

mutmut found commit's size arithmetic unchecked (`process_queue.commit` 22, 24): no test committed a consuming map
that left exactly one message cached, or asserted the size of an emptied queue. ProcessQueue.commit lowers msgCount
by the consuming map's size; if that reaches 0 it sets msgSize to 0, else it subtracts each consumed body's length
(ProcessQueue 4.9.8 L273-L279).
"""

from __future__ import annotations

from model.client.process_queue import commit, create_process_queue, put_message, take_messages
from model.values.message import Message


def make_message(offset: int, body_size: int) -> Message:
    return Message("TopicA", body=b"x" * body_size, queue_offset=offset)


def test_a_commit_leaving_one_message_keeps_that_message_body_length():
    """PQ-07: three messages cached (bodies 5, 7, 11 bytes: msgSize 23), the two lowest taken and committed.
    msgCount.addAndGet(-2) is 1, not 0, so commit subtracts the taken bodies, 5 and 7
    (ProcessQueue 4.9.8 L273-L279,
    https://github.com/apache/rocketmq/blob/rocketmq-all-4.9.8/client/src/main/java/org/apache/rocketmq/client/impl/consumer/ProcessQueue.java#L273-L279):
    count 1, size 11 — the body length of the one message left; commit answers lastKey + 1 = 2."""
    pq, _ = put_message(create_process_queue(), [make_message(0, 5), make_message(1, 7), make_message(2, 11)])
    pq, taken = take_messages(pq, 2)
    assert len(taken) == 2
    pq, offset = commit(pq)
    assert offset == 2
    assert (pq.msg_count, pq.msg_size) == (1, 11)


def test_a_commit_emptying_the_queue_sets_the_size_to_0():
    """PQ-07: two messages cached (bodies 5 and 7 bytes), both taken and committed. msgCount.addAndGet(-2) is 0, so
    commit sets msgSize to 0 (ProcessQueue 4.9.8 L273-L274,
    https://github.com/apache/rocketmq/blob/rocketmq-all-4.9.8/client/src/main/java/org/apache/rocketmq/client/impl/consumer/ProcessQueue.java#L273-L274):
    count 0, size 0; commit answers lastKey + 1 = 2."""
    pq, _ = put_message(create_process_queue(), [make_message(0, 5), make_message(1, 7)])
    pq, taken = take_messages(pq, 2)
    assert len(taken) == 2
    pq, offset = commit(pq)
    assert offset == 2
    assert (pq.msg_count, pq.msg_size) == (0, 0)
