"""Properties of the proxy's table of gRPC clients (spec/16-proxy.md, RP-03: a consumer is served only once its
settings arrived) and of the broker's QUERY_ASSIGNMENT (spec/18-pop-consumer.md, PC-05)."""

from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st

from model.broker.pop.assignment import ALL_QUEUES, compute_assignment
from model.broker.pop.config import MessageRequestMode, PopConfig
from model.proxy import clients as table
from properties.coverage import record_rules

CLIENTS = st.sampled_from(("c1", "c2", "c3"))
EVENTS = st.lists(st.tuples(st.sampled_from(("settings", "terminate", "restart")), CLIENTS), max_size=12)


@given(EVENTS, CLIENTS)
def test_a_client_is_served_only_while_the_proxy_holds_its_settings(events, client_id):
    """RP-03: a receive fails INTERNAL_SERVER_ERROR and a heartbeat UNRECOGNIZED_CLIENT_TYPE unless the client's
    last settings came after its last termination and after the proxy's last restart."""
    clients, held = table.ProxyClients(), set()
    for kind, who in events:
        if kind == "settings":
            clients = table.on_client_settings(clients, who, table.ClientSettings("SIMPLE_CONSUMER", "G"))
            held |= {who}
        elif kind == "terminate":
            clients, code = table.on_client_termination(clients, who)
            assert code == ("OK" if who in held else "UNRECOGNIZED_CLIENT_TYPE")
            held -= {who}
        else:
            clients, held = table.on_proxy_restart(clients), set()
    served = client_id in held
    assert table.compute_receive_code(clients, client_id) == (None if served else "INTERNAL_SERVER_ERROR")
    assert table.compute_heartbeat_code(clients, client_id) == ("OK" if served else "UNRECOGNIZED_CLIENT_TYPE")
    record_rules(["RP-03"])


@given(st.text(min_size=1, max_size=8), st.integers(1, 16), st.integers(0, 100), st.integers(0, 100))
def test_one_message_group_keeps_one_queue(group, queues, sent_a, sent_b):
    """The send side of FIFO order within a group: every message of a group goes to the same queue, whatever was
    sent before it; a message without a group goes round the queues."""
    assert table.compute_send_queue(group, queues, sent_a) == table.compute_send_queue(group, queues, sent_b) < queues
    assert table.compute_send_queue(None, queues, sent_a) == sent_a % queues


# Hashing.consistentHash(group.hashCode(), n) for n = 1..16, printed by Guava 32.1.3 (a JVM run, not this model).
GUAVA_BUCKETS = {
    "g": "0,1,1,1,1,1,1,1,1,1,1,1,12,12,12,12",
    "order-1": "0,0,0,3,3,3,3,3,3,3,3,3,3,3,3,3",  # a negative hashCode (-1207111310)
    "FIFO_GROUP": "0,0,2,2,4,4,4,4,4,4,4,4,4,4,4,4",
    "\u00e9t\u00e9": "0,1,1,1,1,1,6,7,7,7,7,7,7,7,7,7",
    "\U0001F600": "0,1,1,1,4,4,4,4,4,4,4,4,4,4,4,4",  # a surrogate pair
    "message-group-42": "0,1,1,1,1,1,6,6,6,6,10,10,10,10,10,10",
    "G2": "0,0,2,2,2,2,6,6,6,6,6,6,6,6,6,6",
    "G3": "0,1,2,2,2,2,2,7,7,7,7,7,7,7,7,7",
}


@pytest.mark.parametrize("group", sorted(GUAVA_BUCKETS))
def test_a_message_group_goes_to_the_bucket_of_guavas_consistent_hash(group):
    """SendMessageQueueSelector (SendMessageActivity 5.3.3 L376-L395): a message with a message group is written to
    writeQueues[Hashing.consistentHash(group.hashCode(), writeQueues.size())]."""
    buckets = [table.compute_send_queue(group, queues, 0) for queues in range(1, 17)]
    assert buckets == [int(b) for b in GUAVA_BUCKETS[group].split(",")]


@pytest.mark.parametrize("queues, readable, fifo, expected", [
    (0, True, False, ("FORBIDDEN", ())),
    (0, True, True, ("FORBIDDEN", ())),
    (4, False, False, ("FORBIDDEN", ())),
    (4, False, True, ("FORBIDDEN", ())),
    (1, True, False, ("OK", (-1,))),
    (1, True, True, ("OK", (0,))),
    (3, True, True, ("OK", (0, 1, 2))),
])
def test_query_assignment_needs_a_readable_queue(queues, readable, fifo, expected):
    """RouteActivity.queryAssignment (5.3.3 L98-L170): a queue data is assigned only when readable with readQueueNums
    > 0 (one assignment of queue -1, or one per queue for an orderly group); no assignment answers FORBIDDEN."""
    assert table.compute_proxy_assignment(queues, readable, fifo) == expected


MODES = st.sampled_from(list(MessageRequestMode))
CIDS = st.lists(st.sampled_from(("a", "b", "c", "d", "e")), min_size=1, max_size=5, unique=True)


@given(MODES, st.integers(1, 8), CIDS, st.integers(-1, 4))
def test_an_assignment_covers_every_queue_once_over_the_group(mode, queues, cids, share):
    """PC-05: a retry topic is pulled, any other topic read by the broker's mode; pulled queues are split over the
    group's clients with none left out and none twice; a popping client with popShareQueueNum <= 0 (or enough to
    reach every other client) pops every queue at once (queue -1); with a smaller share each client pops at least
    its own queues."""
    config = PopConfig(default_message_request_mode=mode, default_pop_share_queue_num=share)
    retry = compute_assignment("%RETRY%G", queues, tuple(cids), cids[0], "AVG", config)
    assert retry.mode is MessageRequestMode.PULL
    answers = {cid: compute_assignment("T", queues, tuple(cids), cid, "AVG", config) for cid in cids}
    assert {answer.mode for answer in answers.values()} == {mode}
    if mode is MessageRequestMode.PULL:
        pulled = [q for answer in answers.values() for q in answer.queue_ids]
        assert sorted(pulled) == list(range(queues)) if len(cids) <= queues else set(pulled) == set(range(queues))
    elif share <= 0 or share >= len(cids) - 1:
        assert all(answer.queue_ids == (ALL_QUEUES,) for answer in answers.values())
    else:
        assert set().union(*(answer.queue_ids for answer in answers.values())) == set(range(queues))
    assert compute_assignment("T", queues, tuple(cids), "stranger", "AVG", config).queue_ids in ((), (ALL_QUEUES,))
    assert compute_assignment("T", None, tuple(cids), cids[0], "AVG", config).queue_ids is None
    assert compute_assignment("T", queues, tuple(cids), cids[0], "HASH", config).queue_ids is None
    record_rules(["PC-05"])


def allocate_averagely(queues: int, cids: list[str], cid: str) -> set[int]:
    """AllocateMessageQueueAveragely.allocate (rocketmq-all-5.3.3, client/.../rebalance/
    AllocateMessageQueueAveragely.java), restated over queue ids 0..queues-1."""
    index, mod = cids.index(cid), queues % len(cids)
    average = 1 if queues <= len(cids) else queues // len(cids) + (1 if mod > 0 and index < mod else 0)
    start = index * average if mod > 0 and index < mod else index * average + mod
    return {(start + i) % queues for i in range(min(average, queues - start))}


def allocate_for_pop(queues: int, cids: list[str], cid: str, share: int) -> tuple[int, ...]:
    """QueryAssignmentProcessor.allocate4Pop (rocketmq-all-5.3.3, broker/.../processor/
    QueryAssignmentProcessor.java L245-L279, and its private allocate L281-L306), the set the broker answers."""
    cids = sorted(cids)
    if share <= 0 or share >= len(cids) - 1:
        return (ALL_QUEUES,)
    if cid not in cids:
        return ()
    if len(cids) > queues:  # "make sure each cid is assigned": one queue each, round the queues
        return (cids.index(cid) % queues,)
    assigned, index = allocate_averagely(queues, cids, cid), cids.index(cid)
    for _ in range(share):  # the queues of the `share` clients after it in the sorted list, round the list
        index = (index + 1) % len(cids)
        assigned |= allocate_averagely(queues, cids, cids[index])
    return tuple(sorted(assigned))


@given(st.integers(1, 8), CIDS, st.sampled_from(("a", "c", "e", "stranger")), st.integers(-1, 5))
def test_a_popping_client_pops_its_queues_and_those_of_the_share_clients_after_it(queues, cids, cid, share):
    """PC-05, exactly: a popping client with 0 < popShareQueueNum < clients - 1 pops the queues averagely allocated
    to it and to the popShareQueueNum clients after it in the sorted list (round the list); with more clients than
    queues, one queue each, round the queues; with any other share every queue at once (queue -1)."""
    config = PopConfig(default_message_request_mode=MessageRequestMode.POP, default_pop_share_queue_num=share)
    answer = compute_assignment("T", queues, tuple(cids), cid, "AVG", config)
    assert answer == (MessageRequestMode.POP, allocate_for_pop(queues, cids, cid, share))
    record_rules(["PC-05"])


def test_the_share_boundaries_of_a_popping_client():
    """PC-05 at its edges: popShareQueueNum 1 of four clients over four queues (each queue averagely its own
    client's) adds the next client's queue, the last client's wrapping to the first; a share of clients - 1 pops
    every queue at once; five clients over three queues get one queue each, the fourth and fifth round to 0 and 1."""
    def pop(queues, cids, cid, share):
        config = PopConfig(default_message_request_mode=MessageRequestMode.POP, default_pop_share_queue_num=share)
        return compute_assignment("T", queues, cids, cid, "AVG", config).queue_ids

    four = ("d", "b", "a", "c")
    assert [pop(4, four, cid, 1) for cid in "abcd"] == [(0, 1), (1, 2), (2, 3), (0, 3)]
    assert [pop(4, four, cid, 2) for cid in "abcd"] == [(0, 1, 2), (1, 2, 3), (0, 2, 3), (0, 1, 3)]
    assert pop(4, four, "a", 3) == pop(4, four, "a", 0) == (ALL_QUEUES,)
    assert [pop(3, ("a", "b", "c", "d", "e"), cid, 1) for cid in "abcde"] == [(0,), (1,), (2,), (0,), (1,)]
    assert pop(6, ("a", "b", "c", "d"), "a", 1) == (0, 1, 2, 3)  # 6 over 4: a gets 0-1, b gets 2-3
