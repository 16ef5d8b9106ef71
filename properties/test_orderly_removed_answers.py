"""OR-11 beyond the plain case (spec/12-orderly.md): the answer of a listener whose ProcessQueue a 5.3.3 forced
unlock removed while it ran — its give-up stored by the producer's retry, and the waiting ConsumeRequest of the
queue's new ProcessQueue finding its lock expired when the old loop finally releases the queue's lock object.

Every expected value is read from RocketMQ 5.3.3 (cited per test) and the DefaultMQPushConsumer defaults; the
removal is the one of `test_a_forcibly_removed_queues_listener_still_gives_up_and_holds_the_queue_until_it_returns`:
c1's lockAll fails from 0.5 s, so at 21 s its lock mark (0) is over 20 s old and the rebalance that gives the queue
to c0 removes it under "a"'s listener (RebalancePushImpl 5.3.3 L110-L135); c0 leaves at once and c1 takes the queue
back as a new ProcessQueue, locked at 21 s, whose ConsumeRequest waits on the queue's lock object
(ConsumeMessageOrderlyService, CMOS below, L434-L435)."""

from __future__ import annotations

import pytest

from model.client.observations import ListenerInvoked, Note, OffsetUpdated
from model.client.orderly import OrderlyResult, OrderlyStatus
from model.client.orderly_service import OrderlyProcessed
from model.system.events import Advance, CompleteConsume, LockRequestsFail, Produce, SetMembers
from model.system.step import create_system
from model.values.config import Config
from model.values.message import MessageQueue, get_dlq_topic
from model.values.names import GROUP, TOPIC
from properties.steps import run

MQ = MessageQueue(TOPIC, 0)


def remove_while_listening(*after):
    """c1 (5.3.3, maxReconsumeTimes 0) consumes "a" from 0 s; its queue is removed under that listener at 21 s and
    added back as a new ProcessQueue whose request waits; then `after`. Returns the system and the invocation."""
    system = create_system(Config(consume_mode="orderly", profile="5.3.3", max_reconsume_times=0), ("c1",),
                           topic_queue_nums=1)
    system, seen = run(system, Produce("a"), Advance(0))
    (invoked,) = [o for o in seen if isinstance(o, ListenerInvoked)]
    system, seen = run(system, Advance(500), LockRequestsFail("c1"), Advance(21_000), SetMembers(("c0", "c1")),
                       LockRequestsFail("c1", False), SetMembers(("c1",)), *after)
    assert [o.time for o in seen if isinstance(o, Note) and "waits" in o.what] == [21_000]
    return system, invoked


@pytest.mark.parametrize(("retried", "reconsume_times", "rules"), [
    (False, 1, ("OR-11", "OR-07", "OR-08")),
    (True, 0, ("OR-11", "OR-07", "OR-08", "RS-14")),
])
def test_a_removed_listeners_give_up_stored_by_the_producers_retry_restarts_its_count(retried, reconsume_times,
                                                                                     rules):
    """[OR-11] [RS-14] The removed listener's SUSPEND at 21.5 s is processed on its dropped ProcessQueue (CMOS
    L555, L274-L345): "a" is at reconsumeTimes 0 >= maxReconsumeTimes 0, so checkReconsumeTimes sends it to
    %RETRY% with RECONSUME_TIME 1 and MAX_RECONSUME_TIMES 0 (L360-L398). When the producer's first attempt is
    refused and its retry stores it, the retry carries neither (DefaultMQProducerImpl L1005-L1017 cleared them from
    the message): the broker stores reconsumeTimes 0 (SendMessageProcessor L298), not 1. Both copies land in the DLQ
    at once — 1 > 0 for the first (L209), and for the retry the group's unexpired queue lock, c1's of 21 s
    (L199-L209, RS-04) — and nothing is committed."""
    system, invoked = remove_while_listening(Advance(21_500))
    answer = CompleteConsume(invoked.request_id, OrderlyResult(OrderlyStatus.SUSPEND), send_retried=retried)
    _, seen = run(system, answer)
    (processed,) = [o for o in seen if isinstance(o, OrderlyProcessed)]
    (stored,) = processed.sent
    assert (stored.topic, stored.uniq_key, stored.reconsume_times, stored.store_timestamp) == (
        get_dlq_topic(GROUP), "a", reconsume_times, 21_500)
    assert (processed.commit_offset, processed.discarded, processed.rules) == (-1, True, rules)
    assert not [o for o in seen if isinstance(o, OffsetUpdated)]


def test_a_waiting_request_finding_its_lock_expired_tries_to_lock_100_ms_later():
    """[OR-11] [OR-01] [LK-04] The new ProcessQueue was locked at 21 s; c1's lock requests fail again from then
    on, so lockAll at 41 s renews nothing and at 51.5 s the lock is over 30 s old (isLockExpired: now -
    lastLockTimestamp > 30 000, ProcessQueue 5.3.3 L40-L41, L64-L66). The removed listener answers SUCCESS at
    51.5 s (lock requests work again): nothing to commit on a dropped ProcessQueue, and its loop ends. The waiting
    ConsumeRequest then holds the lock object and, at its entry, finds the lock expired:
    tryLockLaterAndReconsume(..., 100) (CMOS L436-L437, L566) — not the loop's 10 ms (L445-L457). At 51.6 s
    lockOneMQ is granted and the request is resubmitted 10 ms later (L226-L236): "a" again at 51.61 s, at
    reconsumeTimes 0 (its ProcessQueue is new, the message read from the broker)."""
    system, invoked = remove_while_listening(LockRequestsFail("c1"), Advance(51_500), LockRequestsFail("c1", False))
    _, seen = run(system, CompleteConsume(invoked.request_id, OrderlyResult()), Advance(52_000))
    (processed,) = [o for o in seen if isinstance(o, OrderlyProcessed)]
    assert (processed.status, processed.commit_offset, processed.sent, processed.discarded, processed.time) == (
        OrderlyStatus.SUCCESS, -1, (), True, 51_500)
    assert [(o.time, o.rules) for o in seen if isinstance(o, Note) and str(MQ) in o.what] == [
        (51_500, ("OR-01", "LK-04")), (51_600, ("LK-01",))]
    assert [(o.time, m.uniq_key, m.reconsume_times) for o in seen if isinstance(o, ListenerInvoked)
            for m in o.messages] == [(51_610, "a", 0)]
