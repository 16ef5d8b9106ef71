"""One orderly ConsumeRequest's steps compared whole (spec/12-orderly.md, OR-01 to OR-08): the gate's answer and
processConsumeResult's for every autoCommit x status, with the rules each cites.

The rules are part of the answer: the coverage reports credit a rule with every step whose answer names it
(properties/coverage.py), so a step that cites OR-06 where it applied OR-05, or drops its citation, moves coverage
silently. Every expected value below is written out by hand from ConsumeMessageOrderlyService 4.9.8
(`CMOS`, permalinks in each test), not read from model/client/orderly.py.
"""

from __future__ import annotations

import pytest
from attrs import evolve

from model.broker.state import create_broker
from model.client.orderly import Gate, OrderlyStatus, Step, process_consume_result, process_gate, process_take
from model.client.process_queue import create_process_queue, put_message
from model.values.config import Config
from model.values.message import Message

GROUP, TOPIC = "g", "t"
R = OrderlyStatus
NOW = 200_000


@pytest.mark.parametrize(
    ("locked", "lock_age", "dropped", "running_for", "first", "expected"),
    [
        # CMOS 4.9.8 L427-L430 and L438-L441: a dropped queue's request returns / breaks, nothing scheduled.
        (True, 0, True, 0, True, Gate(Step.STOP, 0, ("OR-01",))),
        (True, 0, True, 0, False, Gate(Step.STOP, 0, ("OR-01",))),
        # L434-L435 refuse an unlocked queue at entry, L564 re-locks 100 ms later; inside the loop L443-L447 10 ms.
        (False, 0, False, 0, True, Gate(Step.TRY_LOCK_LATER, 100, ("OR-01", "LK-04"))),
        (False, 0, False, 0, False, Gate(Step.TRY_LOCK_LATER, 10, ("OR-01", "LK-04"))),
        # L450-L454: a lock mark older than 30 s (ProcessQueue.isLockExpired, strict) is re-locked 10 ms later.
        (True, 30_001, False, 0, False, Gate(Step.TRY_LOCK_LATER, 10, ("OR-01", "LK-04"))),
        # L457-L460: strictly more than 60 s of consumption resubmits 10 ms later.
        (True, 0, False, 60_001, False, Gate(Step.RESUBMIT_LATER, 10, ("OR-02",))),
        # L466: otherwise the loop takes a batch — the gate let it through.
        (True, 30_000, False, 60_000, False, Gate(Step.TAKE, 0, ("OR-01",))),
        (True, 0, False, 0, True, Gate(Step.TAKE, 0, ("OR-01",))),
    ],
)
def test_each_gate_answer_is_exact_and_cites_its_rules(locked, lock_age, dropped, running_for, first, expected):
    """OR-01 OR-02 LK-04: ConsumeRequest.run (CMOS 4.9.8 L426-L466,
    https://github.com/apache/rocketmq/blob/rocketmq-all-4.9.8/client/src/main/java/org/apache/rocketmq/client/impl/consumer/ConsumeMessageOrderlyService.java#L426-L466,
    and L558-L565): what the request does next, its delay, and the rules it cites — OR-01 for the gate itself,
    LK-04 when the lock sends it away, OR-02 for the 60 s slice."""
    config = Config(consume_mode="orderly")
    pq = evolve(create_process_queue(0), locked=locked, dropped=dropped, last_lock_timestamp=NOW - lock_age)
    assert process_gate(pq, config, NOW, NOW - running_for, first) == expected


def take_two(config: Config, reconsume_times: tuple[int, int] = (0, 0)):
    """Offsets 4 and 5 cached and taken as one batch (consumeMessageBatchMaxSize 2)."""
    msgs = [Message(TOPIC, body=b"x", queue_offset=4 + i, reconsume_times=r) for i, r in enumerate(reconsume_times)]
    pq, _ = put_message(create_process_queue(0), msgs)
    return process_take(pq, config)


def offsets(tree) -> list[int]:
    return [offset for offset, _ in tree.items()]


# (autoCommit, status) -> (commit offset, continue, resubmit delay, rules, cached offsets, consuming offsets).
# autoCommit None: the listener left ConsumeOrderlyContext's default, true (ConsumeOrderlyContext 4.9.8 L26).
COMMITTED = (6, True, None, ("OR-05", "OR-10"), [], [])
EXPECTED = {
    (None, R.SUCCESS): COMMITTED,
    (None, R.COMMIT): COMMITTED,
    (None, R.ROLLBACK): COMMITTED,
    (True, R.SUCCESS): COMMITTED,
    (True, R.COMMIT): COMMITTED,
    (True, R.ROLLBACK): COMMITTED,
    (False, R.SUCCESS): (-1, True, None, ("OR-06",), [], [4, 5]),
    (False, R.COMMIT): (6, True, None, ("OR-06", "OR-10"), [], []),
    (False, R.ROLLBACK): (-1, False, 1_000, ("OR-06", "CFG-04"), [4, 5], []),
}


@pytest.mark.parametrize(("auto_commit", "status"), list(EXPECTED))
def test_process_consume_result_is_exact_for_every_auto_commit_and_status(auto_commit, status):
    """OR-05 OR-06 OR-10 CFG-04: processConsumeResult (CMOS 4.9.8 L272-L343,
    https://github.com/apache/rocketmq/blob/rocketmq-all-4.9.8/client/src/main/java/org/apache/rocketmq/client/impl/consumer/ConsumeMessageOrderlyService.java#L272-L343)
    for offsets 4 and 5 taken together. With autoCommit COMMIT and ROLLBACK fall through to SUCCESS (L282-L289):
    commit() answers 5 + 1 and consumption continues. Without it SUCCESS only counts (L308-L310, commitOffset stays
    -1L, L279, and the batch stays in the consuming map), COMMIT commits (L311-L313), ROLLBACK puts the batch back
    and resubmits after the context's -1, i.e. the consumer's suspendCurrentQueueTimeMillis 1000
    (L314-L321, submitConsumeRequestLater L252-L255) — and returns continueConsume false, not merely a false-ish
    value. The answer's rules: OR-05 for autoCommit's table, OR-06 for the manual one, OR-10 when an offset is
    committed, CFG-04 for the suspend time."""
    config = Config(consume_mode="orderly", consume_message_batch_max_size=2)
    broker = create_broker(config, GROUP, {TOPIC: 1})
    pq, msgs = take_two(config)
    kwargs = {} if auto_commit is None else {"auto_commit": auto_commit}
    result = process_consume_result(broker, pq, config, GROUP, msgs, status, 0, **kwargs)
    got = (result.commit_offset, result.continue_consume, result.resubmit_after, result.rules,
           offsets(result.pq.msg_tree_map), offsets(result.pq.consuming_msg_orderly_tree_map))
    assert got == EXPECTED[(auto_commit, status)]
    assert (result.peer, result.sent) == (broker, ())


@pytest.mark.parametrize("retried", [None, False, True])
@pytest.mark.parametrize("outcome", [R.SUSPEND, R.EXCEPTION])
def test_a_give_up_cites_the_producers_retry_only_when_it_stored_the_copy(retried, outcome):
    """OR-04 OR-07 OR-08 RS-14: maxReconsumeTimes 1, offset 4 at reconsumeTimes 1 and offset 5 at 1, the listener
    suspends (or throws, CMOS 4.9.8 L498-L508, read as SUSPEND): checkReconsumeTimes (L358-L375) sends both to
    %RETRY%g (L362-L364), nothing is left to retry, so autoCommit commits 5 + 1 and consumption goes on (L299-L301).
    Sent by the first attempt (`retried` False, or not given: the normal case) the copy carries RECONSUME_TIME 1 in
    its header and the 4.9.8 broker routes it to %DLQ%g (SendMessageProcessor 4.9.8 L364-L373, 1 >= 1; the
    properties it sets afterwards, L295-L296, bring DELAY back, so the copy is parked with REAL_TOPIC %DLQ%g);
    stored by the producer's retry the header is gone — the first attempt cleared both properties from the message
    (DefaultMQProducerImpl 4.9.8 L779-L790,
    https://github.com/apache/rocketmq/blob/rocketmq-all-4.9.8/client/src/main/java/org/apache/rocketmq/client/impl/producer/DefaultMQProducerImpl.java#L779-L790)
    — so it is stored as a %RETRY% message at reconsumeTimes 0, and only then does the answer cite RS-14."""
    config = Config(consume_mode="orderly", profile="4.9.8", max_reconsume_times=1, consume_message_batch_max_size=2,
                    retry_queue_nums=1)
    broker = create_broker(config, GROUP, {TOPIC: 1})
    pq, msgs = take_two(config, (1, 1))
    kwargs = {} if retried is None else {"send_retried": retried}
    result = process_consume_result(broker, pq, config, GROUP, msgs, outcome, 0, **kwargs)
    thrown = ("OR-04",) if outcome is R.EXCEPTION else ()
    per_send = ("OR-08", "RS-14") if retried else ("OR-08",)
    assert result.rules == thrown + ("OR-07",) + per_send * 2 + ("OR-05", "OR-10")
    assert (result.commit_offset, result.continue_consume, result.resubmit_after) == (6, True, None)
    real_topic = "%RETRY%g" if retried else "%DLQ%g"
    assert [stored.properties["REAL_TOPIC"] for stored in result.sent] == [real_topic] * 2
