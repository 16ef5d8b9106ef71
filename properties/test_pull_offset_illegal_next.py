"""PL-04 edges: the nextBeginOffset of an OFFSET_ILLEGAL pull above the queue's maximum offset.

mutmut found `get_broker_pull`'s choice between the min and the max offset unchecked for an offset past the end.
DefaultMessageStore.getMessage checks `offset < minOffset` first (answer: minOffset); any other offset above
maxOffset answers maxOffset, whatever minOffset is.
"""

from __future__ import annotations

from model.broker.pull_handler import get_broker_pull
from model.broker.state import Broker
from model.broker.store import Store, put_message
from model.values.config import Config
from model.values.message import Message, MessageQueue

TOPIC = "Orders"
Q0 = MessageQueue(TOPIC, 0)
DELAYS = Config().delay_levels


def broker_with(stored: int) -> Broker:
    store = Store()
    for index in range(stored):
        store, _ = put_message(store, Message(TOPIC, b"m%d" % index), 1_000 + index, DELAYS)
    return Broker(store=store)


def test_an_offset_past_the_end_answers_the_max_offset():
    """PL-04: DefaultMessageStore.getMessage 4.9.8 L604-L606: offset > maxOffset is OFFSET_OVERFLOW_BADLY with
    nextBeginOffset = nextOffsetCorrection(offset, maxOffset) = maxOffset on a master (L1255-L1261);
    PullMessageProcessor 4.9.8 L244 returns it, L309-L310 answer PULL_OFFSET_MOVED (OFFSET_ILLEGAL)."""
    broker = broker_with(3)
    assert get_broker_pull(broker, Q0, 5, 0, None, 32) == ("OFFSET_ILLEGAL", [], 3)
    assert get_broker_pull(broker, Q0, 4, 1, None, 32) == ("OFFSET_ILLEGAL", [], 3)


def test_an_offset_at_a_min_offset_past_the_end_answers_the_max_offset():
    """PL-04: DefaultMessageStore.getMessage 4.9.8 L595-L606: an offset equal to minOffset is not OFFSET_TOO_SMALL
    (L598 is `offset < minOffset`); above maxOffset it is OFFSET_OVERFLOW_BADLY with nextBeginOffset = maxOffset.
    (A min offset past the end arises in the model from ExpireQueueHead beyond the queue's length.)"""
    broker = broker_with(3)
    assert get_broker_pull(broker, Q0, 5, 5, None, 32) == ("OFFSET_ILLEGAL", [], 3)
    assert get_broker_pull(broker, Q0, 4, 5, None, 32) == ("OFFSET_ILLEGAL", [], 5)  # below min: minOffset
