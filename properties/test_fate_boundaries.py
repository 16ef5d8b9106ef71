"""Boundaries drawn on purpose where the system machines rarely go (spec/11-guarantees.md SY-13): cleanExpiredMsg at
reconsumeTimes 0, 1 and above; every listener status; a drop at each point of a consume request's life; a %RETRY%
queue with no committed offset whose head is gone; a 5 s resubmission after its ProcessQueue was replaced; the
broker's refusals of send-backs, sends and pulls. Each expectation is the reference's, written out here."""

from __future__ import annotations

from collections import Counter

import pytest

from model.broker.state import PERM_READ, PERM_WRITE
from model.client.listener import ACK_INDEX_DEFAULT, ConsumeStatus, ListenerResult
from model.client.observations import (
    ConsumeProcessed,
    ListenerInvoked,
    Note,
    OffsetUpdated,
    PullObserved,
    SendBackOutcome,
)
from model.client.orderly import OrderlyResult, OrderlyStatus
from model.system.events import (
    Advance,
    CompleteConsume,
    Crash,
    ExpireQueueHead,
    Produce,
    RefuseRequests,
    SetBrokerPermission,
    SetMembers,
)
from model.system.step import create_system
from model.values.config import Config
from model.values.message import MessageQueue, get_retry_topic, is_retry_topic
from model.values.names import GROUP, TOPIC
from model.values.wire import ResponseCode
from oracle.system_oracle import mark as event
from properties.steps import run

FAILED = ListenerResult(ConsumeStatus.RECONSUME_LATER)
RETRY_IN_1_S = ListenerResult(ConsumeStatus.RECONSUME_LATER, delay_level_when_next_consume=1)
ERRORS = (ResponseCode.SYSTEM_ERROR, ResponseCode.NO_PERMISSION, ResponseCode.TOPIC_NOT_EXIST,
          ResponseCode.SUBSCRIPTION_GROUP_NOT_EXIST)
Q1 = MessageQueue(TOPIC, 1)
RETRY_Q0 = MessageQueue(get_retry_topic(GROUP), 0)


def get_invoked(seen, key: str | None = None, client: str | None = None) -> list[ListenerInvoked]:
    return [o for o in seen if isinstance(o, ListenerInvoked) and (client is None or o.client_id == client)
            and (key is None or any(m.uniq_key == key for m in o.messages))]


def get_send_backs(seen) -> list[SendBackOutcome]:
    return [o for o in seen if isinstance(o, SendBackOutcome)]


def start_consuming(config: Config, members=("c1",), keys=("k1",), queue_id: int = 1, settle: int = 100):
    """A group consuming `keys` from queue `queue_id`; returns the system, the observations and the request."""
    system = create_system(config, members)
    system, seen = run(system, *[Produce(k, queue_id) for k in keys], Advance(settle))
    return system, seen, get_invoked(seen)[-1]


@pytest.mark.parametrize("retries", [0, 1, 2])
def test_clean_expired_msg_sends_back_at_level_3_whatever_the_reconsume_times(retries):
    """[CT-02] [SY-13] An expired message goes back at level 3 with the broker's copy's reconsumeTimes + 1 — not at
    3 + reconsumeTimes (the broker's default, SB-12), which only a first delivery cannot tell apart."""
    system, _seen, invoked = start_consuming(Config())
    for _ in range(retries):
        system, seen = run(system, CompleteConsume(invoked.request_id, RETRY_IN_1_S), Advance(system.now + 3_000))
        invoked = get_invoked(seen, "k1")[-1]
    assert invoked.messages[0].reconsume_times == retries
    system, seen = run(system, Advance(system.now + 31 * 60_000))
    first = [o for o in get_send_backs(seen) if "CT-02" in o.rules][0]
    event("CT-02")
    assert (first.path, first.delay_level, first.stored.delay_time_level, first.stored.reconsume_times) == (
        "rpc", 3, 3, retries + 1)


def test_clean_expired_msg_looks_at_16_head_messages_at_most():
    """[CT-02] [PQ-12] One cleanExpiredMsg run sends back at most 16 expired head messages (min(cached, 16)); the
    17th goes at the next run, one consumeTimeout later."""
    keys = tuple(f"k{i}" for i in range(17))
    system, _seen, _invoked = start_consuming(Config(), keys=keys)
    system, seen = run(system, Advance(45 * 60_000))
    runs = Counter(o.time for o in get_send_backs(seen) if "CT-02" in o.rules and o.message.reconsume_times == 0)
    assert sorted(runs.items()) == [(30 * 60_000, 16), (45 * 60_000, 1)]


def test_a_pull_that_finds_nothing_moves_the_offset_only_when_nothing_is_cached():
    """[PL-06] [PL-01] correctTagsOffset: NO_NEW_MSG after the broker held the pull 15 s leaves the offset where it
    is while a message is still cached (its listener runs); with nothing cached, the offset goes to the queue's end."""
    system, _seen, invoked = start_consuming(Config())
    system, seen = run(system, Advance(system.now + 16_000))
    assert not [o for o in seen if isinstance(o, OffsetUpdated) and o.queue == Q1]
    system, seen = run(system, CompleteConsume(invoked.request_id), Advance(system.now + 16_000))
    assert [o.offset for o in seen if isinstance(o, OffsetUpdated) and o.queue == Q1][-1:] == [1]


def test_a_retry_of_a_retry_keeps_the_first_origin_message_id():
    """[SB-13] [SY-09] Each send-back links its copy to the first failure's id, not to the retry copy it was given."""
    system, _seen, invoked = start_consuming(Config())
    first_id, copies = invoked.messages[0].msg_id, []
    for _ in range(3):
        system, seen = run(system, CompleteConsume(invoked.request_id, RETRY_IN_1_S), Advance(system.now + 3_000))
        copies += [o.stored for o in get_send_backs(seen)]
        invoked = get_invoked(seen, "k1")[-1]
    event("SY-09")
    assert [c.get_property("ORIGIN_MESSAGE_ID") for c in copies] == [first_id] * 3
    assert len({c.msg_id for c in copies} | {first_id}) == 4


@pytest.mark.parametrize("status", list(ConsumeStatus))
@pytest.mark.parametrize("ack_index", [-1, 0, 1, ACK_INDEX_DEFAULT])
def test_each_listener_status_sends_back_exactly_the_unacked_messages(status, ack_index):
    """[CC-03] [CC-04] [CC-06] Null and an exception are RECONSUME_LATER: the whole batch goes back; SUCCESS acks
    messages 0..ackIndex (clamped, a negative one acks none) and sends the rest back, in order."""
    keys = ("k1", "k2", "k3")
    system, _seen, invoked = start_consuming(Config(consume_message_batch_max_size=3), keys=keys)
    assert [m.uniq_key for m in invoked.messages] == list(keys)
    system, seen = run(system, CompleteConsume(invoked.request_id, ListenerResult(status, ack_index)))
    acked = min(ack_index, 2) + 1 if status is ConsumeStatus.CONSUME_SUCCESS else 0
    (processed,) = [o for o in seen if isinstance(o, ConsumeProcessed)]
    shown = status if status is ConsumeStatus.CONSUME_SUCCESS else ConsumeStatus.RECONSUME_LATER
    event("CC-04")
    assert (processed.status, [m.uniq_key for m in processed.succeeded]) == (shown, list(keys[:acked]))
    assert [(o.message.uniq_key, o.path, o.stored.reconsume_times) for o in get_send_backs(seen)] == [
        (k, "rpc", 1) for k in keys[acked:]]


def test_a_batch_whose_queue_moves_away_while_its_listener_runs_is_consumed_again():
    """[RB-03] [SY-13] The running result is discarded (nothing committed, nothing sent back) and the queue's new
    owner delivers the message again, as the broker stored it."""
    system, _seen, invoked = start_consuming(Config())
    system, seen = run(system, SetMembers(("c1", "c2")), Advance(system.now + 100),
                       CompleteConsume(invoked.request_id, FAILED), Advance(system.now + 30_000))
    (processed,) = [o for o in seen if isinstance(o, ConsumeProcessed) and o.request_id == invoked.request_id]
    assert processed.discarded and not get_send_backs(seen)
    assert not [o for o in seen if isinstance(o, OffsetUpdated) and o.client_id == "c1" and o.queue == Q1]
    assert [m.reconsume_times for o in get_invoked(seen, "k1", "c2") for m in o.messages][:1] == [0]


def test_a_batch_of_a_crashed_instance_is_consumed_again_by_a_survivor():
    """[RB-06] [SY-13] A crash voids the running batch; a survivor takes the queue within 20 s and delivers it."""
    system, _seen, invoked = start_consuming(Config(), members=("c1", "c2"))
    owner = invoked.client_id
    system, seen = run(system, Crash(owner), CompleteConsume(invoked.request_id), Advance(system.now + 21_000))
    survivor = {"c1": "c2", "c2": "c1"}[owner]
    assert [o.client_id for o in get_invoked(seen, "k1")] == [survivor]


@pytest.mark.parametrize("back", [False, True])
def test_a_5_s_resubmission_never_runs_once_its_process_queue_was_dropped(back):
    """[CC-07] [RB-03] [SY-13] Both send-backs fail: the message waits 5 s to be resubmitted to *its* ProcessQueue.
    If a rebalance dropped that queue meanwhile (`back`: and gave the instance a new ProcessQueue for it), the
    resubmission returns without consuming; the message comes again from the broker, with reconsumeTimes 0."""
    system, _seen, invoked = start_consuming(Config())
    system, seen = run(system, CompleteConsume(invoked.request_id, FAILED, True, True),
                       SetMembers(("c1", "c2")), Advance(system.now + 1_000),
                       *([SetMembers(("c1",))] if back else []), Advance(system.now + 20_000))
    assert [o.path for o in get_send_backs(seen)] == ["failed"]
    again = [(o.client_id, m.reconsume_times) for o in get_invoked(seen, "k1") for m in o.messages]
    event("CC-07")
    assert again and all(r == 0 for _client, r in again), again


def test_a_5_s_resubmission_of_a_kept_process_queue_runs_exactly_5_s_later():
    """[CC-07] The resubmission of a ProcessQueue nobody dropped: the same message, reconsumeTimes + 1, at +5000 ms."""
    system, _seen, invoked = start_consuming(Config())
    failed_at = system.now
    system, seen = run(system, CompleteConsume(invoked.request_id, FAILED, True, True), Advance(failed_at + 6_000))
    assert [(o.time - failed_at, o.messages[0].reconsume_times) for o in get_invoked(seen, "k1")] == [(5_000, 1)]


def test_an_orderly_batch_whose_queue_moves_away_while_its_listener_runs_commits_nothing():
    """[OR-11] [OR-12] [SY-13] The queue stays in the old owner's table, dropped, while its listener runs; its
    SUCCESS commits no offset, so the new owner consumes the message again once it holds the lock."""
    config = Config(consume_mode="orderly", consume_message_batch_max_size=1)
    system, _seen, invoked = start_consuming(config, settle=3_010)
    system, seen = run(system, SetMembers(("c1", "c2")), CompleteConsume(invoked.request_id, OrderlyResult()),
                       Advance(system.now + 130_000))
    assert not [o for o in seen if isinstance(o, OffsetUpdated) and o.client_id == "c1" and o.queue == Q1]
    event("OR-11")
    assert [o.client_id for o in get_invoked(seen, "k1")] == ["c2"]


def test_a_retry_queue_with_no_committed_offset_whose_head_is_gone_starts_at_its_new_head():
    """[RB-04] [PL-08] A %RETRY% queue nobody committed an offset for starts at 0 (never at its end); with the head
    deleted that pull is OFFSET_ILLEGAL, and the queue is consumed from its new head, nothing of it skipped."""
    keys = ("k1", "k2", "k3")
    system, _seen, invoked = start_consuming(Config(consume_message_batch_max_size=3), keys=keys, queue_id=0)
    system, _ = run(system, CompleteConsume(invoked.request_id, RETRY_IN_1_S), Crash("c1"))
    system, _ = run(system, Advance(system.now + 2_000), ExpireQueueHead(RETRY_Q0, 2), SetMembers(("c2",)),
                    Advance(system.now + 60_000))
    system, seen = run(system, Advance(system.now + 1))
    assert system.broker.consumer_offsets.get((GROUP, RETRY_Q0.topic, 0)) is not None
    retried = [m.uniq_key for o in _ if isinstance(o, ListenerInvoked) and is_retry_topic(o.queue.topic)
               for m in o.messages]
    event("RB-04")
    assert retried == ["k3"]


@pytest.mark.parametrize("code", ERRORS)
def test_a_send_back_the_broker_refuses_goes_by_the_fallback(code):
    """[CC-06] [SY-13] Any error code from CONSUMER_SEND_MSG_BACK: the client's fallback send stores the retry at
    level 3 + reconsumeTimes with reconsumeTimes + 1; refused too, the message waits 5 s locally (CC-07)."""
    system, _seen, invoked = start_consuming(Config())
    system, seen = run(system, RefuseRequests("send_back", code), CompleteConsume(invoked.request_id, FAILED))
    (back,) = get_send_backs(seen)
    assert (back.path, back.stored.delay_time_level, back.stored.reconsume_times) == ("fallback", 3, 1)
    system, seen = run(system, Advance(system.now + 11_000), RefuseRequests("send", code))
    again = get_invoked(seen, "k1")[-1]
    system, seen = run(system, CompleteConsume(again.request_id, FAILED), Advance(system.now + 5_000))
    assert [o.path for o in get_send_backs(seen)] == ["failed"]
    assert [m.reconsume_times for o in get_invoked(seen, "k1") for m in o.messages] == [2]


def test_a_read_only_broker_refuses_both_sends_until_it_is_writeable_again():
    """[SB-02] [RS-07] [SY-13] Read-only: the send-back and the fallback are refused (NO_PERMISSION), so the message
    is retried locally every 5 s; writeable again, its next failure is stored by the broker's send-back."""
    system, _seen, invoked = start_consuming(Config())
    system, seen = run(system, SetBrokerPermission(PERM_READ), Produce("k2", 1),
                       CompleteConsume(invoked.request_id, FAILED), Advance(system.now + 5_000))
    assert [o.path for o in get_send_backs(seen)] == ["failed"]
    assert system.broker.store.get_max_offset_in_queue(TOPIC, 1) == 1, "a producer stored on a read-only broker"
    again = get_invoked(seen, "k1")[-1]
    system, seen = run(system, SetBrokerPermission(PERM_READ | PERM_WRITE), CompleteConsume(again.request_id, FAILED))
    (back,) = get_send_backs(seen)
    assert (back.path, back.stored.delay_time_level, back.stored.reconsume_times) == ("rpc", 3, 1)


@pytest.mark.parametrize("code", ERRORS)
def test_a_refused_pull_is_made_again_after_the_exception_delay(code):
    """[PL-11] A pull answered with an error code caches nothing and moves no offset; the same offset is pulled
    again pullTimeDelayMillsWhenException (1000 ms) later — one pull pending at a time (PL-01) — and consumed once
    the broker answers again."""
    system = create_system(Config(), ("c1",))
    system, seen = run(system, RefuseRequests("pull", code), Produce("k1", 1), Advance(2_500))
    refused = [(o.time, o.offset) for o in seen if isinstance(o, PullObserved) and o.queue == Q1]
    assert refused and all(o.status == code.name for o in seen if isinstance(o, PullObserved))
    assert [t for t, _ in refused] == list(range(refused[0][0], 2_501, 1_000)) and {off for _, off in refused} == {0}
    assert not get_invoked(seen)
    system, seen = run(system, RefuseRequests("pull", None), Advance(system.now + 1_000))
    event("PL-11")
    assert [o.client_id for o in get_invoked(seen, "k1")] == ["c1"]


def test_an_orderly_give_up_the_broker_refuses_keeps_the_message_suspended():
    """[OR-08] [SY-13] At maxReconsumeTimes the orderly consumer sends the message to %RETRY%; refused (read-only
    broker), the message stays, suspended, with reconsumeTimes + 1, and nothing is committed; writeable again, the
    next give-up is stored and the offset moves past it."""
    config = Config(consume_mode="orderly", consume_message_batch_max_size=1, max_reconsume_times=0)
    system, _seen, invoked = start_consuming(config, settle=3_010)
    suspend = OrderlyResult(OrderlyStatus.SUSPEND)
    system, seen = run(system, SetBrokerPermission(PERM_READ), CompleteConsume(invoked.request_id, suspend),
                       Advance(system.now + 2_000))
    assert not [o for o in seen if isinstance(o, OffsetUpdated)]
    again = get_invoked(seen, "k1")
    assert [m.reconsume_times for o in again for m in o.messages] == [1]
    system, seen = run(system, SetBrokerPermission(PERM_READ | PERM_WRITE),
                       CompleteConsume(again[0].request_id, suspend))
    event("OR-08")
    assert [(o.queue, o.offset) for o in seen if isinstance(o, OffsetUpdated)] == [(Q1, 1)]


def test_a_pull_held_back_by_flow_control_is_never_stale():
    """[LK-08] [PL-02] A pull held back by the cache's count check runs again every 50 ms, each run stamping
    lastPullTimestamp: when the cache shrinks after more than 120 s, the rebalance at that instant keeps the queue."""
    system, _seen, invoked = start_consuming(Config(pull_threshold_for_queue=1, pull_batch_size=2),
                                             keys=("k1", "k2", "k3"))
    system, _ = run(system, Advance(140_000 - 1))
    running = sorted(system.requests)
    system, seen = run(system, *[CompleteConsume(r) for r in running], Advance(140_000))
    assert not [o for o in seen if isinstance(o, Note) and "LK-08" in o.rules], "a held-back pull went stale"
    assert not [o for o in seen if isinstance(o, ConsumeProcessed) and o.discarded]
