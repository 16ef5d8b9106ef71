"""SEARCH_OFFSET_BY_TIMESTAMP: `Store.get_offset_in_queue_by_time` against ConsumeQueue.getOffsetInQueueByTime.

mutmut found the function unchecked ("no tests": its 17 mutants reached by no test); only the conformance server's
SEARCH_OFFSET_BY_TIMESTAMP calls it, which a consumer sends when it starts a new group CONSUME_FROM_TIMESTAMP
(`RebalancePushImpl.computePullFromWhere` 4.9.8 L207-L210 calls `MQAdminImpl.searchOffset`). No spec rule states it
yet. The expected offsets follow ConsumeQueue 4.9.8 L159-L226 (store/src/main/java/org/apache/rocketmq/store/
ConsumeQueue.java) for one consume-queue file whose head is kept, as in the model: a binary search over the units
by store time (mid = (low + high) / 2, L173-L174) that stops at the first unit stored at exactly `timestamp`
(L188-L190); without one, the first unit when every probe was later (L206-L208), the last when every probe was
earlier (L209-L211), else the nearer of the two units around `timestamp`, the earlier on a tie (L212-L215).
An empty queue has no mapped file: `MappedFileQueue.getMappedFileByTime` 4.9.8 L78-L92 answers null
(`copyMappedFiles` L94-L103) and the search answers 0 (ConsumeQueue 4.9.8 L225).
"""

from model.broker.store import Store, put_message
from model.values.config import Config
from model.values.message import create_message

DELAYS = Config().delay_levels


def _store(times: list[int], topic: str = "Orders", queue_id: int = 1) -> Store:
    """A store with one message per store time in (topic, queue_id), and noise in a sibling queue and topic."""
    store = Store()
    for index, now in enumerate(times):
        store, _ = put_message(store, create_message(topic, f"k{index}", queue_id=queue_id), now, DELAYS)
        store, _ = put_message(store, create_message(topic, f"q{index}", queue_id=queue_id + 1), now + 1, DELAYS)
        store, _ = put_message(store, create_message("Other", f"o{index}", queue_id=queue_id), now + 2, DELAYS)
    return store


def _search(store: Store, timestamp: int) -> int:
    return store.get_offset_in_queue_by_time("Orders", 1, timestamp)


def test_empty_queue_answers_zero():
    """SEARCH_OFFSET_BY_TIMESTAMP: a queue with no unit has no mapped file, so the search answers 0
    (ConsumeQueue 4.9.8 L160-L161, L225; MappedFileQueue 4.9.8 L78-L82, L94-L99), also while other queues hold
    messages."""
    assert Store().get_offset_in_queue_by_time("Orders", 1, 50) == 0
    assert _search(_store([10, 20], queue_id=2), 50) == 0


def test_before_the_first_message_answers_offset_zero():
    """SEARCH_OFFSET_BY_TIMESTAMP: every probe is later than the timestamp, so the answer is the last one probed,
    unit 0 (ConsumeQueue 4.9.8 L191-L194, L206-L208)."""
    assert _search(_store([10, 20, 30]), 5) == 0


def test_a_message_stored_at_the_timestamp_is_found():
    """SEARCH_OFFSET_BY_TIMESTAMP: a unit stored exactly at the timestamp ends the search, its offset the answer
    (ConsumeQueue 4.9.8 L188-L190, L202-L204)."""
    store = _store([10, 20, 30])
    assert [_search(store, at) for at in (10, 20, 30)] == [0, 1, 2]


def test_between_two_messages_the_nearer_later_one():
    """SEARCH_OFFSET_BY_TIMESTAMP: between the units stored at 10 and 20, 18 is nearer the later one
    (ConsumeQueue 4.9.8 L212-L215: |18 - 10| > |18 - 20|)."""
    assert _search(_store([10, 20, 30]), 18) == 1


def test_after_the_last_message_answers_the_last_offset():
    """SEARCH_OFFSET_BY_TIMESTAMP: every probe is earlier than the timestamp, so the answer is the last unit, not the
    max offset (ConsumeQueue 4.9.8 L195-L199, L209-L211): a consumer starting there receives the last message."""
    assert _search(_store([10, 20, 30]), 31) == 2
    assert _search(_store([10]), 1000) == 0


def test_between_two_messages_the_nearer_earlier_one():
    """SEARCH_OFFSET_BY_TIMESTAMP: between the units stored at 10 and 20, 12 is nearer the earlier one, and 15,
    equally near both, takes the earlier too (ConsumeQueue 4.9.8 L212-L215: only a strictly nearer later unit
    wins)."""
    store = _store([10, 20, 30])
    assert _search(store, 12) == 0
    assert _search(store, 15) == 0
    assert _search(store, 26) == 2


def test_equal_store_times_answer_the_unit_the_search_meets():
    """SEARCH_OFFSET_BY_TIMESTAMP: among units stored at the same time as the timestamp, the search stops at the
    first it probes, not the first stored (ConsumeQueue 4.9.8 L173-L174, L188-L190): of three units at 10 the
    middle, 1; of two the first, 0 (mid rounds down); of four unit 1; of [10, 20, 20, 20, 20] unit 2."""
    assert _search(_store([10, 10, 10]), 10) == 1
    assert _search(_store([10, 10]), 10) == 0
    assert _search(_store([10, 10, 10, 10]), 10) == 1
    assert _search(_store([10, 20, 20, 20, 20]), 20) == 2


def test_equal_store_times_around_the_timestamp():
    """SEARCH_OFFSET_BY_TIMESTAMP: units [10, 10, 30, 30]: the search ends between units 1 and 2 (ConsumeQueue
    4.9.8 L191-L199); 20 is equally near both and takes unit 1, 21 is nearer 30 and takes unit 2 (L212-L215)."""
    store = _store([10, 10, 30, 30])
    assert _search(store, 20) == 1
    assert _search(store, 21) == 2
