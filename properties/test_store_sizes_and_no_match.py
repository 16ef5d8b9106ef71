"""The commit log's physical offsets and a pull whose units all fail the tag check (ST-06, PL-04): mutmut found
unchecked that the next physical offset advances past the whole body, and the NO_MATCHED_MSG status itself."""

from __future__ import annotations

from model.broker.pull_handler import get_broker_pull
from model.broker.state import Broker
from model.broker.store import Store, put_message
from model.values.config import Config
from model.values.message import Message, MessageQueue, java_string_hash

TOPIC = "Orders"
Q0 = MessageQueue(TOPIC, 0)
DELAYS = Config().delay_levels


def test_the_physical_offset_advances_past_each_whole_message():
    """[ST-06] CommitLog appends a message of calMsgLength bytes at the current physical offset, and that length
    counts the whole body, the topic, the properties and a fixed header (CommitLog.calMsgLength 4.9.8 L434-L456,
    https://github.com/apache/rocketmq/blob/rocketmq-all-4.9.8/store/src/main/java/org/apache/rocketmq/store/CommitLog.java#L434-L456):
    after two 1,000-byte bodies the next physical offset is more than 2,000 bytes on, and each message's offset
    (and so its msgId) differs."""
    store = Store()
    stored = []
    for key in (b"a", b"b"):
        store, record = put_message(store, Message(TOPIC, key * 1_000), 1_000, DELAYS)
        stored.append(record)
    assert stored[1].commit_log_offset - stored[0].commit_log_offset > 1_000
    assert store.next_physical_offset - stored[1].commit_log_offset > 1_000
    assert stored[0].msg_id != stored[1].msg_id


def test_units_that_all_fail_the_tag_check_are_no_matched_msg():
    """[PL-04] getMessage scans units from the offset and, when none of their tag hashes is subscribed, answers
    NO_MATCHED_MESSAGE with nextBeginOffset after the units it scanned (DefaultMessageStore 4.9.8 L611-L700,
    https://github.com/apache/rocketmq/blob/rocketmq-all-4.9.8/store/src/main/java/org/apache/rocketmq/store/DefaultMessageStore.java#L611-L700),
    which the client reads as NO_MATCHED_MSG: three TagB units, a subscription to TagA."""
    store = Store()
    for index in range(3):
        store, _ = put_message(store, Message(TOPIC, b"m%d" % index, tags="TagB"), 1_000, DELAYS)
    answer = get_broker_pull(Broker(store=store), Q0, 0, 0, frozenset({java_string_hash("TagA")}), 32)
    assert answer == ("NO_MATCHED_MSG", [], 3)
