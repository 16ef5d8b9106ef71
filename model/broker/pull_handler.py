"""The broker's PULL_MESSAGE lookup (PullMessageProcessor over DefaultMessageStore.getMessage, spec/07-pull.md):
the queue's units from the requested offset, filtered by the subscription's tag hashes."""

from __future__ import annotations

from model.broker.commit_log import compute_logged_messages
from model.broker.state import Broker, is_readable
from model.values.message import MessageQueue

# DefaultMessageStore.getMessage scans at most max(16000 bytes, maxMsgNums * 20) of consume queue = 800 units.
MAX_FILTER_SCAN_UNITS = 800


def get_pull_refusal(broker: Broker, mq: MessageQueue) -> str | None:
    """[PL-04] PullMessageProcessor's checks before the store lookup, in its order: a broker that is not readable
    is NO_PERMISSION, an unknown topic TOPIC_NOT_EXIST, a topic that is not readable NO_PERMISSION, a queue id
    outside the topic's read queues SYSTEM_ERROR; None when the pull goes on to get_broker_pull."""
    if not is_readable(broker.perm):
        return "NO_PERMISSION"
    topic = broker.topics.get(mq.topic)
    if topic is None:
        return "TOPIC_NOT_EXIST"
    if not is_readable(topic.perm):
        return "NO_PERMISSION"
    if not 0 <= mq.queue_id < topic.read_queue_nums:
        return "SYSTEM_ERROR"
    return None


def get_broker_pull(broker: Broker, mq: MessageQueue, offset: int, min_offset: int, codes: frozenset | None,
                    batch_size: int) -> tuple[str, list, int]:
    """[PL-04] The broker's answer: (status, messages, nextBeginOffset). Offsets outside [min, max] are
    OFFSET_ILLEGAL, offset == max is NO_NEW_MSG, otherwise units are scanned and kept when their tags code is in
    `codes` (None: every unit; a hash collision passes) until `batch_size` matched — FOUND, or NO_MATCHED_MSG if
    none did."""
    store = broker.store
    queue = store.get_queue_units(mq.topic, mq.queue_id)
    high = len(queue)
    if offset < min_offset or offset > high:
        return "OFFSET_ILLEGAL", [], min_offset if offset < min_offset else high
    if offset == high:
        return "NO_NEW_MSG", [], offset
    indices, position = [], offset
    # The units as stored (plain tuples in ConsumeQueueUnit's field order): a scan reads two fields of each.
    for _physical, _size, tags_code, _stored_at, log_index in queue.iterate_stored(
            offset, offset + max(MAX_FILTER_SCAN_UNITS, batch_size)):
        if len(indices) == batch_size:
            break
        if codes is None or tags_code in codes:
            indices.append(log_index)
        position += 1
    found = compute_logged_messages(store.commit_log.get_stored(indices))
    return ("FOUND" if found else "NO_MATCHED_MSG"), found, position
