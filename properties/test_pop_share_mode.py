"""PC-05's share path answers the broker's request mode with its queues (spec/17, QueryAssignmentProcessor 5.3.3).

test_proxy_clients.py pins the share path's queues in an example and compares the whole answer only in a property;
under the `mutation` profile (derandomized, 20 examples) that property draws no share between 0 and clients - 1, and
mutmut found the share path's mode unchecked (`assignment.compute_assignment` 82, benchmarks/MUTATION.md).
"""

from __future__ import annotations

import pytest

from model.broker.pop.assignment import compute_assignment
from model.broker.pop.config import MessageRequestMode, PopConfig

FOUR = ("d", "b", "a", "c")


@pytest.mark.parametrize(("queues", "cids", "cid", "share", "queue_ids"), [
    (4, FOUR, "a", 1, (0, 1)),
    (4, FOUR, "d", 1, (0, 3)),
    (4, FOUR, "b", 2, (1, 2, 3)),
    (6, ("a", "b", "c", "d"), "a", 1, (0, 1, 2, 3)),
    (3, ("a", "b", "c", "d", "e"), "d", 1, (0,)),
])
def test_a_popping_client_with_a_share_is_answered_pop_with_its_queues(queues, cids, cid, share, queue_ids):
    """PC-05: a topic that is not a retry topic is answered the broker's defaultMessageRequestMode (POP here,
    QueryAssignmentProcessor 5.3.3 L112-L128), whatever share of the other clients' queues it pops (L245-L306: the
    queues averagely its own and the next `share` clients', or one queue each when clients outnumber queues)."""
    config = PopConfig(default_message_request_mode=MessageRequestMode.POP, default_pop_share_queue_num=share)
    answer = compute_assignment("T", queues, cids, cid, "AVG", config)
    assert (answer.mode, answer.queue_ids) == (MessageRequestMode.POP, queue_ids)
