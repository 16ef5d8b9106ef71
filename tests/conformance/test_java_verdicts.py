"""What the reference (RocketMQ's Java client 4.9.8) showed the harness had wrong, each as a hand-written run of
what the wire and the listener showed (conformance/runner/clients/java.md lists them): every one conforms now, and the
mistake each test pins would make it deviate again."""

from __future__ import annotations

from attrs import evolve
from hypothesis import given
from hypothesis import strategies as st

from conformance.checker.checks import get_late_retries
from conformance.checker.differential import predict_run
from conformance.checker.mechanisms import get_observed_fates
from conformance.checker.predict import predict
from conformance.checker.verdicts import check_declarations, judge
from conformance.codec.codes import CONSUMER_SEND_MSG_BACK
from conformance.history.records import FaultEvent, RunSettings, StoredCopy, WireRequest
from conformance.history.workload import Fault, MessageSpec, Workload
from tests.conformance.test_verdicts import JAVA, delivery, once, run_of, send_back, statuses_of

SETTINGS = RunSettings(retry_max_times=2)
SEND_MESSAGE_V2 = 310


def judge_java(workload, deliveries, requests=(), stored=(), settings=SETTINGS, faults=()):
    run = evolve(run_of(workload, deliveries, requests, stored, client=JAVA, settings=settings), faults=tuple(faults))
    verdicts = judge(run, predict_run(run))
    return run, verdicts, statuses_of(verdicts)


@once
@given(st.just(None))
def test_a_failed_send_back_followed_by_the_clients_own_send_to_retry_is_the_fallback(_):
    """DefaultMQPushConsumerImpl.sendMessageBack 4.9.8: the RPC fails, the inner producer sends the copy to
    %RETRY% with DELAY 3 + r and RECONSUME_TIME r + 1, and the retry comes one delay later. Before the observer
    knew the fallback, the retry had no due time (SY-06 "due None")."""
    workload = Workload((MessageSpec("m0", "TagA", 0, ("RECONSUME_LATER",)),), (Fault("send_back_error"),))
    first = delivery(1, 0.0, "m0", 100, 0, "RECONSUME_LATER", start_time=True)
    retry = delivery(2, 1100.0, "m0", 200, 1, "CONSUME_SUCCESS", origin=100, start_time=True)
    retry.message["properties"].pop("ORIGIN_MESSAGE_ID")  # the fallback loses it in 4.9.8 (apache/rocketmq#4050)
    requests = [send_back(10.0, 100, code=1, java=True), WireRequest(12.0, SEND_MESSAGE_V2, {"b": "%RETRY%G"})]
    stored = [StoredCopy(12.0, -1, "m0", 1, "%RETRY%G", 3, "fallback")]
    run, verdicts, found = judge_java(workload, [first, retry], requests, stored)
    assert found["SY-06"] == "conforms" and found["SY-10"] == "conforms", found
    assert get_observed_fates(run)["m0"].fate == "consumed"
    assert check_declarations(verdicts, run) == []
    _, _, without = judge_java(workload, [first, retry], requests, [])
    assert without["SY-06"] == "deviates"  # a retry with no send-back that stored it


@once
@given(st.just(None))
def test_a_restarted_broadcasting_instance_may_skip_what_arrived_where_it_stored_no_offset(_):
    """RB-04: a BROADCASTING instance with no offset in offsets.json starts the queue at its end, so m1, stored
    while the first instance was stopping, is never delivered; SY-10 is CLUSTERING's promise only."""
    workload = Workload((MessageSpec("m0"), MessageSpec("m1", delay_level=1)), model="broadcasting",
                        restart_after=1)
    run, verdicts, found = judge_java(workload, [delivery(1, 0.0, "m0", 100, 0, "CONSUME_SUCCESS", start_time=True)])
    assert "deviates" not in found.values(), [v for v in verdicts if v.status == "deviates"]
    assert check_declarations(verdicts, run) == []
    clustering = Workload(workload.messages, restart_after=1)
    _, _, lost = judge_java(clustering, [delivery(1, 0.0, "m0", 100, 0, "CONSUME_SUCCESS", start_time=True)])
    assert lost["SY-10"] == "deviates"  # CLUSTERING still promises it


@once
@given(st.just(None))
def test_a_copy_sent_back_then_delivered_again_after_a_restart_was_sent_back_for_its_failure(_):
    """The stop raced the offset update: the original came again after the restart and succeeded; its send-back
    followed the failed delivery, which is what CC-02 asks."""
    workload = Workload((MessageSpec("m0", "TagA", 0, ("EXCEPTION",)),), restart_after=1)
    deliveries = [delivery(1, 0.0, "m0", 100, 0, "EXCEPTION", start_time=True),
                  delivery(2, 3000.0, "m0", 100, 0, "CONSUME_SUCCESS", start_time=True, seen=1)]
    stored = [StoredCopy(10.0, 100, "m0", 1, "%RETRY%G", 3)]
    run, verdicts, found = judge_java(workload, deliveries, [send_back(10.0, 100, java=True)], stored)
    assert found["CC-02"] == "conforms", found


@once
@given(st.just(None))
def test_an_orderly_rollback_with_autocommit_is_a_success_and_without_it_a_retry_at_the_same_count(_):
    """ConsumeMessageOrderlyService.processConsumeResult 4.9.8: with autoCommit a ROLLBACK is read as SUCCESS;
    without it, ROLLBACK puts the batch back and it comes again with reconsumeTimes unchanged (no + 1)."""
    acked = Workload((MessageSpec("m0", None, 0, ("ROLLBACK",)),), mode="orderly")
    run, verdicts, found = judge_java(acked, [delivery(1, 0.0, "m0", 100, 0, "ROLLBACK")])
    assert get_observed_fates(run)["m0"].fate == "consumed" == predict(acked, SETTINGS).fates["m0"].fate
    assert "deviates" not in found.values(), found
    rolled = Workload((MessageSpec("m0", None, 0, ("ROLLBACK", "COMMIT")),), mode="orderly", auto_commit=False)
    deliveries = [delivery(1, 0.0, "m0", 100, 0, "ROLLBACK"), delivery(2, 1000.0, "m0", 100, 0, "COMMIT", seen=1)]
    run, verdicts, found = judge_java(rolled, deliveries)
    assert found["OR-07"] == "conforms" and "deviates" not in found.values(), found
    assert predict(rolled, SETTINGS).fates["m0"].reconsume_times == (0, 0)


def test_a_listener_without_autocommit_that_never_commits_is_predicted_in_bounded_time():
    """The model's drain waits for every offset to be persisted, which never happens without a COMMIT; the
    prediction stops when the run would be quiet."""
    workload = Workload((MessageSpec("m0", "TagB", 2),), mode="orderly", auto_commit=False)
    assert predict(workload, SETTINGS).fates["m0"].fate == "consumed"


@once
@given(st.just(None))
def test_an_orderly_give_up_is_judged_by_the_maximum_its_own_send_carried(_):
    """An orderly consumer at maxReconsumeTimes 1 sends the message to %RETRY% itself (SEND_MESSAGE_V2, header l
    = 1) and the broker dead-letters it: the maximum applied is the send's, not the group's retryMaxTimes 2."""
    workload = Workload((MessageSpec("m0", None, 0, ("SUSPEND_CURRENT_QUEUE_A_MOMENT",) * 2),), mode="orderly")
    deliveries = [delivery(1, 0.0, "m0", 100, 0, "SUSPEND_CURRENT_QUEUE_A_MOMENT"),
                  delivery(2, 1000.0, "m0", 100, 0, "SUSPEND_CURRENT_QUEUE_A_MOMENT", seen=1)]
    deliveries[1].message["reconsumeTimes"] = 1  # a local retry: the count lives in the client only
    requests = [WireRequest(1010.0, SEND_MESSAGE_V2, {"b": "%RETRY%G", "j": "1", "l": "1"})]
    stored = [StoredCopy(1010.0, -1, "m0", 1, "%DLQ%G", 0, "fallback")]
    settings = RunSettings(retry_max_times=2, max_reconsume_times=1)
    run, verdicts, found = judge_java(workload, deliveries, requests, stored, settings)
    assert found["SY-05"] == "conforms" and get_observed_fates(run)["m0"].fate == "dlq", found
    assert predict(workload, settings).fates["m0"].fate == "dlq"
    assert check_declarations(verdicts, run) == []
    _, _, by_group = judge_java(workload, deliveries, requests[:0], stored, settings)
    assert by_group["SY-05"] == "deviates"  # judged by the group's 2, the DLQ at r = 1 would be early


@once
@given(st.just(None))
def test_a_broadcasting_listener_that_raises_is_dropped_not_sent_back(_):
    """CC-09: BROADCASTING drops a failed message, a raised one too, so CC-04 (a raise counts as
    RECONSUME_LATER, hence a send-back) cannot show in BROADCASTING; found by a full run."""
    workload = Workload((MessageSpec("m0", "TagA", 0, ("EXCEPTION",)), MessageSpec("m1")), model="broadcasting")
    deliveries = [delivery(1, 0.0, "m0", 100, 0, "EXCEPTION", start_time=True),
                  delivery(2, 5.0, "m1", 200, 0, "CONSUME_SUCCESS", start_time=True)]
    run, verdicts, found = judge_java(workload, deliveries)
    assert "CC-04" not in found and found["CC-09"] == "conforms", found
    assert "deviates" not in found.values() and check_declarations(verdicts, run) == []
    clustering = Workload(workload.messages)
    _, _, swallowed = judge_java(clustering, deliveries)
    assert swallowed["CC-04"] == "deviates"  # in CLUSTERING the raise must be sent back


def restarted_run(workload, deliveries, requests=(), stored=()):
    return judge_java(workload, deliveries, requests, stored, RunSettings(retry_max_times=2, max_reconsume_times=2))


@once
@given(st.just(None))
def test_a_copy_a_restarted_client_delivers_again_forks_the_lineage_and_is_judged_by_the_invariants_only(_):
    """The first instance's offset of m0 was not persisted: the second delivers the original again beside the
    retry, the script's answers fall on other deliveries, and the fate differs from the one-instance prediction."""
    workload = Workload((MessageSpec("m0", None, 0, ("EXCEPTION", "NULL", "EXCEPTION")),), restart_after=2)
    deliveries = [delivery(1, 0.0, "m0", 100, 0, "EXCEPTION", start_time=True),
                  delivery(2, 1000.0, "m0", 200, 1, "NULL", origin=100, start_time=True, seen=1),
                  delivery(3, 3000.0, "m0", 100, 0, "EXCEPTION", start_time=True, seen=2),
                  delivery(4, 4000.0, "m0", 300, 1, "CONSUME_SUCCESS", origin=100, start_time=True, seen=3)]
    requests = [send_back(10.0, 100, java=True), send_back(1010.0, 200, java=True), send_back(3010.0, 100, java=True)]
    stored = [StoredCopy(10.0, 100, "m0", 1, "%RETRY%G", 3), StoredCopy(1010.0, 200, "m0", 2, "%RETRY%G", 4),
              StoredCopy(3010.0, 100, "m0", 1, "%RETRY%G", 3)]
    run, verdicts, found = restarted_run(workload, deliveries, requests, stored)
    assert "DIFF" not in found and "deviates" not in found.values(), found


def test_a_retry_due_while_the_restarted_client_was_away_is_due_when_it_pulls_again():
    workload = Workload((MessageSpec("m0", None, 0, ("RECONSUME_LATER",)),), restart_after=1)
    deliveries = [delivery(1, 0.0, "m0", 100, 0, "RECONSUME_LATER", start_time=True),
                  delivery(2, 5000.0, "m0", 200, 1, "CONSUME_SUCCESS", origin=100, start_time=True)]
    stored = [StoredCopy(10.0, 100, "m0", 1, "%RETRY%G", 3)]
    away = [WireRequest(20.0, 35, {}), WireRequest(4500.0, 11, {"topic": "TopicTest", "queueId": "0"})]
    run = run_of(workload, deliveries, [send_back(10.0, 100, java=True), *away], stored, client=JAVA)
    assert get_late_retries(run) == []
    assert get_late_retries(evolve(run, requests=run.requests[:1])) == [("m0", "m0 r=1 at +3990 ms after due")]


# The counterexample CI drew (conformance-java, 2026-11-27): m0 (delay level 2) and m2 (level 1) share queue 0.
ROLLED_BACK = Workload((MessageSpec("m0", "TagA", 2),
                        MessageSpec("m1", "TagB", 0, ("NULL", "SUSPEND_CURRENT_QUEUE_A_MOMENT")),
                        MessageSpec("m2", "TagB", 1, ("SUSPEND_CURRENT_QUEUE_A_MOMENT", "ROLLBACK"))),
                       mode="orderly", auto_commit=False)
QUEUE_OF = {"m0": (0, 100), "m1": (1, 200), "m2": (0, 300)}


def orderly_deliveries(answers, offsets):
    """Deliveries off the topic itself: (time, key, reconsumeTimes, answer) each, the key's queue and queue
    offset fixed (a local retry is the same message), the number of earlier deliveries of the key as seen."""
    deliveries, seen = [], {}
    for number, (at, key, r, status) in enumerate(answers, start=1):
        queue, commit_log_offset = QUEUE_OF[key]
        made = delivery(number, at, key, commit_log_offset, 0, status, seen=seen.get(key, 0))
        made.message.update(queueId=queue, queueOffset=offsets[key], reconsumeTimes=r)
        deliveries.append(made)
        seen[key] = seen.get(key, 0) + 1
    return deliveries


@once
@given(st.just(None))
def test_an_orderly_rollback_takes_back_what_its_queue_held_before_it_in_the_order_the_broker_stored_it(_):
    """ConsumeMessageOrderlyService 4.9.8 with autoCommit off: SUCCESS commits nothing, so a later ROLLBACK puts
    m0 back with m2 only if m0 came first in their queue. m0 and m2 were both delayed 1 s; which one the broker's
    timer stored first is a race between its level tasks, so the prediction takes the order the run shows
    (predict_run). Judged in the other order, the reference deviated from OR-07 in CI."""
    m0_first = orderly_deliveries([(0.0, "m1", 0, "NULL"), (340.0, "m0", 0, "SUCCESS"),
                                   (440.0, "m2", 0, "SUSPEND_CURRENT_QUEUE_A_MOMENT"),
                                   (1010.0, "m1", 1, "SUSPEND_CURRENT_QUEUE_A_MOMENT"), (1440.0, "m2", 1, "ROLLBACK"),
                                   (2010.0, "m1", 2, "SUCCESS"), (2440.0, "m0", 0, "SUCCESS"),
                                   (2441.0, "m2", 1, "SUCCESS")], {"m0": 0, "m1": 0, "m2": 1})
    run, verdicts, found = judge_java(ROLLED_BACK, m0_first)
    assert "deviates" not in found.values(), [v for v in verdicts if v.status == "deviates"]
    assert found["OR-07"] == "conforms" and check_declarations(verdicts, run) == []
    other_order = judge(run, predict(ROLLED_BACK, SETTINGS, ("m2", "m0", "m1")))
    assert statuses_of(other_order)["OR-07"] == "deviates"
    m2_first = orderly_deliveries([(0.0, "m1", 0, "NULL"), (340.0, "m2", 0, "SUSPEND_CURRENT_QUEUE_A_MOMENT"),
                                   (1010.0, "m1", 1, "SUSPEND_CURRENT_QUEUE_A_MOMENT"), (1340.0, "m2", 1, "ROLLBACK"),
                                   (2010.0, "m1", 2, "SUCCESS"), (2340.0, "m2", 1, "SUCCESS"),
                                   (2341.0, "m0", 0, "SUCCESS")], {"m0": 1, "m1": 0, "m2": 0})
    run, verdicts, found = judge_java(ROLLED_BACK, m2_first)
    assert "deviates" not in found.values(), [v for v in verdicts if v.status == "deviates"]
    assert predict_run(run).fates["m0"].reconsume_times == (0,)


@once
@given(st.just(None))
def test_a_fallback_stored_by_the_producers_retry_starts_the_count_again(_):
    """RS-14 at maxReconsumeTimes 1: the send-back errs, the fallback's first attempt is refused and its retry is
    stored with reconsumeTimes 0, so m0 comes as three copies (0, 0, 1) before the DLQ where SY-05 alone allows
    1 + 1. The Ledger counted that as a deviation of SY-05 by the reference in a full run."""
    workload = Workload((MessageSpec("m0", "TagB", 2, ("NULL", "NULL", "RECONSUME_LATER")),),
                        (Fault("fallback_first_refused"),))
    settings = RunSettings(retry_max_times=2, max_reconsume_times=1)
    first = delivery(1, 0.0, "m0", 100, 0, "NULL", start_time=True)
    restarted = delivery(2, 1100.0, "m0", 200, 0, "NULL", start_time=True)
    restarted.message["properties"]["RETRY_TOPIC"] = "TopicTest"  # from %RETRY%, without ORIGIN_MESSAGE_ID
    retry = delivery(3, 2200.0, "m0", 300, 1, "RECONSUME_LATER", origin=200, start_time=True)
    header = {**send_back(0.0, 0, java=True).fields, "maxReconsumeTimes": "1"}
    requests = [WireRequest(10.0, CONSUMER_SEND_MSG_BACK, {**header, "offset": "100"}, 0, 1),
                WireRequest(12.0, SEND_MESSAGE_V2, {"b": "%RETRY%G", "j": "1", "l": "1"}, 0, 16),
                WireRequest(14.0, SEND_MESSAGE_V2, {"b": "%RETRY%G", "j": "0"}),
                WireRequest(1110.0, CONSUMER_SEND_MSG_BACK, {**header, "offset": "200"}),
                WireRequest(2210.0, CONSUMER_SEND_MSG_BACK, {**header, "offset": "300"})]
    stored = [StoredCopy(14.0, -1, "m0", 0, "%RETRY%G", 3, "fallback"), StoredCopy(1110.0, 200, "m0", 1, "%RETRY%G", 3),
              StoredCopy(2210.0, 300, "m0", 2, "%DLQ%G", 0)]
    injected = [FaultEvent("fallback_first_refused", 10.0, None, "m0#0")]  # as the backend records it
    run, verdicts, found = judge_java(workload, [first, restarted, retry], requests, stored, settings, injected)
    assert "deviates" not in found.values(), [v for v in verdicts if v.status == "deviates"]
    assert found["SY-05"] == "conforms" and found["RS-14"] == "conforms", found
    # RS-14 is judged from the fault the run recorded: without that record the run shows no fault to judge.
    assert statuses_of(judge_java(workload, [first, restarted, retry], requests, stored, settings)[1]).get("RS-14") \
        is None
    assert check_declarations(verdicts, run) == []


@once
@given(st.just(None))
def test_a_given_up_message_that_a_rollback_puts_back_comes_again_at_its_count(_):
    """ConsumeMessageOrderlyService.checkReconsumeTimes 4.9.8: at maxReconsumeTimes 1, m0's EXCEPTION at
    reconsumeTimes 1 gives it up (sent to %RETRY%, the count kept); without autoCommit, m2's ROLLBACK puts m0 back,
    and it comes again at 1. The OR-07 verdict called that a retry not counted, in CI (this run's deliveries)."""
    workload = Workload((MessageSpec("m0", None, 2, ("NULL", "EXCEPTION")),
                         MessageSpec("m1", None, 2, ("SUCCESS", "SUSPEND_CURRENT_QUEUE_A_MOMENT")),
                         MessageSpec("m2", "TagB", 2, ("ROLLBACK", "NULL", "ROLLBACK", "NULL"))),
                        mode="orderly", auto_commit=False)
    deliveries = orderly_deliveries([(0.0, "m1", 0, "SUCCESS"), (3.0, "m0", 0, "NULL"), (1024.0, "m0", 1, "EXCEPTION"),
                                     (1037.0, "m2", 0, "ROLLBACK"), (2040.0, "m0", 1, "SUCCESS"),
                                     (2041.0, "m2", 0, "NULL"), (3045.0, "m2", 1, "ROLLBACK"),
                                     (4047.0, "m0", 1, "SUCCESS"), (4048.0, "m2", 1, "NULL")],
                                    {"m0": 0, "m1": 0, "m2": 1})
    for put_back in (deliveries[4], deliveries[7]):  # the give-up's send marked the client's message object
        put_back.message["properties"]["RETRY_TOPIC"] = "TopicTest"
    requests = [WireRequest(1034.0, SEND_MESSAGE_V2, {"b": "%RETRY%G", "j": "1", "l": "1"}),
                WireRequest(4050.0, SEND_MESSAGE_V2, {"b": "%RETRY%G", "j": "1", "l": "1"})]
    stored = [StoredCopy(1034.0, -1, "m0", 1, "%DLQ%G", 0, "fallback"),
              StoredCopy(4050.0, -1, "m2", 1, "%DLQ%G", 0, "fallback")]
    settings = RunSettings(retry_max_times=2, max_reconsume_times=1)
    run, verdicts, found = judge_java(workload, deliveries, requests, stored, settings)
    assert found["OR-07"] == "conforms", [v for v in verdicts if v.status == "deviates"]
    assert check_declarations(verdicts, run) == []
    _, _, unbounded = judge_java(workload, deliveries, requests, stored, evolve(settings, max_reconsume_times=2))
    assert unbounded["OR-07"] == "deviates"  # below the maximum, the same count again is a retry not counted
