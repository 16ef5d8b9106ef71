"""Properties of the proxy's table of gRPC clients (spec/16-proxy.md, RP-03: a consumer is served only once its
settings arrived) and of the broker's QUERY_ASSIGNMENT (spec/18-pop-consumer.md, PC-05)."""

from __future__ import annotations

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
