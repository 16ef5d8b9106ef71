"""The verdict machinery on hand-written runs (no client, no server): each run is what the wire and the listener
would show, built from the reference's rules, and the expected verdicts are the claims of conformance/cpp.md."""

from __future__ import annotations

from attrs import evolve
from hypothesis import given, settings
from hypothesis import strategies as st

from conformance.checker.causes import is_in_a_raising_batch
from conformance.checker.checks import get_batch_verdict, get_broadcasting_verdict, get_swallowed
from conformance.checker.deviations import DECLARED
from conformance.checker.differential import predict_run
from conformance.checker.mechanisms import get_hit_faults, get_wire_send_back_faults
from conformance.checker.observe import check_invariants, get_replayed_originals
from conformance.checker.predict import predict
from conformance.checker.verdicts import check_declarations, explain_deviations, judge
from conformance.codec.codes import (
    CONSUMER_SEND_MSG_BACK,
    PULL_MESSAGE,
    SEND_MESSAGE_V2,
    UNREGISTER_CLIENT,
    UPDATE_CONSUMER_OFFSET,
)
from conformance.history.records import (
    BrokerRead,
    Delivery,
    FaultEvent,
    QueueRead,
    Run,
    RunSettings,
    StoredCopy,
    WireRequest,
)
from conformance.history.workload import AfterDelivery, Fault, MessageSpec, ScheduledFault, Workload
from model.values.message import compute_message_id

CPP = {"name": "rocketmq-client-cpp", "version": "1.2.3", "binding": "rocketmq", "bindingVersion": "0.4.4"}
JAVA = {"name": "rocketmq-client-java", "version": "4.9.8"}
SETTINGS = RunSettings(retry_max_times=2)
JAVA_HEADER = {"originMsgId": "x", "originTopic": "TopicTest", "unitMode": "false", "maxReconsumeTimes": "16"}


def delivery(number, at, key, offset, r, status, *, origin=None, start_time=False, seen=None):
    properties = {"UNIQ_KEY": key, "TAGS": "TagA"}
    if r:
        properties.update(RETRY_TOPIC="TopicTest", ORIGIN_MESSAGE_ID=compute_message_id(origin))
    if start_time:
        properties["CONSUME_START_TIME"] = str(int(at))
    message = {"msgId": key, "topic": "TopicTest", "queueId": 0, "queueOffset": r, "commitLogOffset": offset,
               "reconsumeTimes": r, "properties": properties}
    return Delivery(number, at, message, status, r if seen is None else seen)


def send_back(at, offset, code=0, java=False):
    fields = {"group": SETTINGS.group, "offset": str(offset), "delayLevel": "0", **(JAVA_HEADER if java else {})}
    return WireRequest(at, CONSUMER_SEND_MSG_BACK, fields, 0, code)


def persist(at, offset, oneway):
    fields = {"topic": "TopicTest", "consumerGroup": SETTINGS.group, "queueId": "0", "commitOffset": str(offset)}
    return WireRequest(at, UPDATE_CONSUMER_OFFSET, fields, 2 if oneway else 0)


def retry_chain(statuses, *, java=False, settings=SETTINGS):
    """m0 delivered once per status, 1 s apart; each failure sent back and stored as the model's broker would."""
    deliveries, requests, stored, offset = [], [], [], 100
    for r, status in enumerate(statuses):
        at = r * 1100.0
        deliveries.append(delivery(r + 1, at, "m0", offset, r, status, origin=100, start_time=java))
        if status != "CONSUME_SUCCESS":
            requests.append(send_back(at + 10, offset, java=java))
            dlq = r >= (16 if java else settings.retry_max_times)
            topic, level = ("%DLQ%G", 0) if dlq else ("%RETRY%G", 3 + r)
            stored.append(StoredCopy(at + 10, offset, "m0", r + 1, topic, level))
        offset += 100
    requests.append(persist(5000.0, 1, oneway=java))
    return deliveries, requests, stored


def run_of(workload, deliveries, requests, stored, client=CPP, settings=SETTINGS):
    return Run(client, workload, settings, tuple(deliveries), tuple(requests), tuple(stored))


def statuses_of(verdicts):
    return {v.rule: v.status for v in verdicts}


# The Ledger records the rules it checks as Hypothesis events, so each case runs as a one-example Hypothesis test.
once = settings(max_examples=1, database=None)


POISON = Workload((MessageSpec("m0", "TagA", 0, ("RECONSUME_LATER",) * 4),))


@once
@given(st.just(None))
def test_a_poison_message_of_the_cpp_client_is_dead_lettered_by_the_group_maximum(_):
    run = run_of(POISON, *retry_chain(["RECONSUME_LATER"] * 3))
    verdicts = judge(run, predict(POISON, SETTINGS), repr(POISON))
    found = statuses_of(verdicts)
    assert found["SB-09"] == "deviates"  # no maxReconsumeTimes: the group's 2 decides
    assert found["SY-05"] == "deviates"  # DLQ after 3 deliveries where the 4.9.8 client's 16 would go on
    assert found["RB-05"] == "deviates"
    assert found["CC-05"] == "deviates"
    assert all(found[rule] == "conforms" for rule in ("SY-04", "SY-06", "SY-09", "SY-10", "CC-02")), found
    assert found["CT-01"] == "not applicable"
    deviation = next(v for v in verdicts if v.rule == "SY-05")
    assert "MessageSpec" in deviation.counterexample and deviation.trace
    assert check_declarations(verdicts, run) == []


@once
@given(st.just(None))
def test_a_client_that_does_what_the_model_predicts_conforms_and_breaks_the_cpp_declarations(_):
    workload = Workload((MessageSpec("m0", "TagA", 0, ("RECONSUME_LATER", "RECONSUME_LATER")),))
    settings = RunSettings(retry_max_times=16)
    run = run_of(workload, *retry_chain(["RECONSUME_LATER", "RECONSUME_LATER", "CONSUME_SUCCESS"], java=True,
                                        settings=settings), client=JAVA, settings=settings)
    verdicts = judge(run, predict(workload, settings))
    judged = [v for v in verdicts if v.status != "not judged"]
    assert {v.status for v in judged} == {"conforms"}, [v for v in judged if v.status != "conforms"]
    assert check_declarations(verdicts, run) == []
    as_cpp = [v.__class__(v.rule, {"name": "rocketmq-client-cpp", "version": "1.2.3"}, v.status) for v in verdicts]
    problems = check_declarations(as_cpp, run_of(workload, run.deliveries, run.requests, run.stored,
                                                 settings=settings))
    assert any("SB-09" in p and "did not happen" in p for p in problems), problems
    assert any("RB-05" in p and "did not happen" in p for p in problems), problems


@once
@given(st.just(None))
def test_an_exception_read_as_success_is_the_declared_binding_deviation(_):
    workload = Workload((MessageSpec("m0", "TagA", 0, ("EXCEPTION",)),))
    run = run_of(workload, [delivery(1, 0.0, "m0", 100, 0, "EXCEPTION")], [persist(5000.0, 1, False)], [])
    verdicts = judge(run, predict(workload, SETTINGS))
    found = statuses_of(verdicts)
    assert found["CC-04"] == "deviates" and "SB-09" not in found, found
    assert check_declarations(verdicts, run) == []
    as_java = [v.__class__(v.rule, JAVA, v.status) for v in verdicts]
    assert any(p.startswith("undeclared deviation of CC-04") for p in check_declarations(as_java, run))


@once
@given(st.just(None))
def test_a_failed_send_back_loses_the_message_as_declared(_):
    workload = Workload((MessageSpec("m0", "TagA", 0, ("RECONSUME_LATER",)),), (Fault("send_back_error", "m0", 0),))
    requests = [send_back(10.0, 100, code=1), persist(5000.0, 1, False)]
    run = run_of(workload, [delivery(1, 0.0, "m0", 100, 0, "RECONSUME_LATER")], requests, [])
    verdicts = judge(run, predict(workload, SETTINGS))
    found = statuses_of(verdicts)
    assert found["CC-06"] == "deviates" and found["SY-10"] == "deviates", found
    assert check_declarations(verdicts, run) == []


@once
@given(st.just(None))
def test_a_retry_delivered_before_its_delay_deviates_from_sy06(_):
    deliveries, requests, stored = retry_chain(["RECONSUME_LATER", "CONSUME_SUCCESS"])
    early = deliveries[1].__class__(2, 500.0, deliveries[1].message, "CONSUME_SUCCESS", 1)
    workload = Workload((MessageSpec("m0", "TagA", 0, ("RECONSUME_LATER",)),))
    run = run_of(workload, [deliveries[0], early], requests, stored)
    verdicts = judge(run, predict(workload, SETTINGS))
    assert statuses_of(verdicts)["SY-06"] == "deviates"
    assert any(p.startswith("undeclared deviation of SY-06") for p in check_declarations(verdicts, run))


def probe_batch_run():
    """What the real client did with m0 (always RECONSUME_LATER), m1 (EXCEPTION once) and m2 (no failure), all three
    in one pulled batch, against a broker with retryMaxTimes 2 (a throwaway responder, 1 s delay levels; times and
    offsets as recorded): the listener saw only m0, yet every send-back carried all three commit-log offsets."""
    deliveries = [delivery(1, 77.0, "m0", 100, 0, "RECONSUME_LATER"),
                  delivery(2, 1091.0, "m0", 3100, 1, "RECONSUME_LATER", origin=100),
                  delivery(3, 2107.0, "m0", 6100, 2, "RECONSUME_LATER", origin=100)]
    requests, stored = [], []
    for r, (at, offsets) in enumerate([(95.0, (100, 1100, 2100)), (1110.0, (3100, 4100, 5100)),
                                       (2126.0, (6100, 7100, 8100))]):
        for key, offset in zip(("m0", "m1", "m2"), offsets, strict=True):
            requests.append(send_back(at, offset))
            topic, level = ("%DLQ%G", 0) if r == 2 else ("%RETRY%G", 3 + r)
            stored.append(StoredCopy(at, offset, key, r + 1, topic, level))
    requests += [persist(5096.0, 3, False), persist(7096.0, 3, False)]
    return deliveries, requests, stored


@once
@given(st.just(None))
def test_the_probed_batch_send_back_is_the_declared_cc02_deviation(_):
    workload = Workload((MessageSpec("m0", "TagA", 0, ("RECONSUME_LATER",) * 4), MessageSpec("m1", "TagA", 0,
                         ("EXCEPTION",)), MessageSpec("m2", "TagA")))
    settings = RunSettings(retry_max_times=2, topic_queue_nums=1)
    run = run_of(workload, *probe_batch_run(), settings=settings)
    verdicts = judge(run, predict(workload, settings))
    found = statuses_of(verdicts)
    assert found["CC-02"] == "deviates" and "never delivered" in next(v.detail for v in verdicts if v.rule == "CC-02")
    assert found["SY-10"] == "conforms"  # dead-lettered, so accounted for: the loss is m1's and m2's consumption
    assert check_declarations(verdicts, run) == []


@once
@given(st.just(None))
def test_orderly_local_retries_without_reconsume_times_are_the_declared_or07_deviation(_):
    """As probed: three suspends, each retried locally ~100 ms later with reconsumeTimes still 0."""
    suspend = "SUSPEND_CURRENT_QUEUE_A_MOMENT"
    workload = Workload((MessageSpec("m0", "TagA", 0, (suspend,) * 3),), mode="orderly")
    deliveries = [delivery(n + 1, 100.0 * n, "m0", 100, 0, suspend if n < 3 else "SUCCESS", seen=n) for n in range(4)]
    run = run_of(workload, deliveries, [persist(5000.0, 1, False)], [])
    verdicts = judge(run, predict(workload, SETTINGS))
    found = statuses_of(verdicts)
    assert found["OR-07"] == "deviates" and "(0, 1, 2, 3)" in next(v.detail for v in verdicts if v.rule == "OR-07")
    assert check_declarations(verdicts, run) == []
    fixed = run_of(workload, [delivery(n + 1, 100.0 * n, "m0", 100, 0, "SUCCESS") for n in range(1)], [], [])
    problems = check_declarations(judge(fixed, predict(Workload((MessageSpec("m0"),), mode="orderly"), SETTINGS)),
                                  run_of(workload, deliveries, [], []))
    assert any("OR-07" in p and "did not happen" in p for p in problems), problems


@once
@given(st.just(None))
def test_a_broadcasting_batch_with_a_failure_loses_the_unseen_message_as_declared(_):
    """As probed: BROADCASTING, m0 fails and m1 shares its pulled batch; the listener never sees m1, nothing is
    sent back, and m1 is lost: CC-02's deviation, found by the prediction. SY-10 is CLUSTERING's promise only
    (BROADCASTING makes none), so it is not what this run breaks."""
    workload = Workload((MessageSpec("m0", "TagA", 0, ("RECONSUME_LATER",)), MessageSpec("m1", "TagA")),
                        model="broadcasting")
    settings = RunSettings(retry_max_times=2, topic_queue_nums=1)
    run = run_of(workload, [delivery(1, 0.0, "m0", 100, 0, "RECONSUME_LATER")], [], [], settings=settings)
    verdicts = judge(run, predict(workload, settings))
    found = statuses_of(verdicts)
    assert found["CC-09"] == "conforms" and found["CC-02"] == "deviates" and found["SY-10"] == "conforms", found
    assert check_declarations(verdicts, run) == []


@once
@given(st.just(None))
def test_a_send_back_refused_by_a_read_only_broker_deviates_from_cc06_and_cc07(_):
    """NO_PERMISSION to the send-back: the 4.9.8 client's fallback send fails too and it retries locally 5 s later;
    rocketmq-client-cpp drops the message."""
    workload = Workload((MessageSpec("m0", "TagA", 0, ("RECONSUME_LATER",)),),
                        (Fault("broker_not_writeable", "m0", 0),))
    requests = [send_back(10.0, 100, code=16), persist(5000.0, 1, False)]
    run = run_of(workload, [delivery(1, 0.0, "m0", 100, 0, "RECONSUME_LATER")], requests, [])
    verdicts = judge(run, predict(workload, SETTINGS))
    found = statuses_of(verdicts)
    assert found["CC-06"] == found["CC-07"] == found["SY-10"] == "deviates", found
    assert check_declarations(verdicts, run) == []


ALI_ONS = {"name": "ali-ons", "version": "3.12.0"}


@once
@given(st.just(None))
def test_a_retry_answered_reconsume_later_that_nobody_sent_back_is_ali_ons_declared_cc06(_):
    """The first failure is sent back; the retry's RECONSUME_LATER is read as a success (no second send-back)."""
    workload = Workload((MessageSpec("m0", "TagA", 0, ("RECONSUME_LATER", "RECONSUME_LATER")),))
    deliveries, requests, stored = retry_chain(["RECONSUME_LATER"], java=True)
    requests[-1] = persist(5000.0, 1, oneway=False)  # ali-ons' UPDATE_CONSUMER_OFFSET lacks the one-way flag
    deliveries.append(delivery(2, 1100.0, "m0", 200, 1, "RECONSUME_LATER", origin=100))
    run = run_of(workload, deliveries, requests, stored, client=ALI_ONS)
    verdicts = judge(run, predict(workload, SETTINGS))
    found = statuses_of(verdicts)
    assert found["CC-06"] == "deviates" and found["SY-10"] == "deviates" and "DIFF" not in found, found
    assert check_declarations(verdicts, run) == []
    as_java = [v.__class__(v.rule, JAVA, v.status) for v in verdicts]
    assert any(p.startswith("undeclared deviation of CC-06") for p in check_declarations(as_java, run))


@once
@given(st.just(None))
def test_a_null_answer_read_as_success_deviates_from_cc04_not_diff(_):
    workload = Workload((MessageSpec("m0", "TagA", 0, ("NULL",)),))
    run = run_of(workload, [delivery(1, 0.0, "m0", 100, 0, "NULL")], [persist(5000.0, 1, False)], [],
                 client=ALI_ONS)
    verdicts = judge(run, predict(workload, SETTINGS))
    found = statuses_of(verdicts)
    assert found["CC-04"] == "deviates" and "DIFF" not in found, found
    assert check_declarations(verdicts, run) == []


@once
@given(st.just(None))
def test_a_send_back_in_the_millisecond_of_its_delivery_sends_back_a_seen_copy(_):
    """The trace keeps whole milliseconds: a send-back at 10 ms follows a delivery the driver recorded at 10.6 ms."""
    workload = Workload((MessageSpec("m0", "TagA", 0, ("RECONSUME_LATER",)),))
    deliveries = [delivery(1, 10.6, "m0", 100, 0, "RECONSUME_LATER", start_time=True),
                  delivery(2, 1100.0, "m0", 200, 1, "CONSUME_SUCCESS", origin=100, start_time=True)]
    requests = [send_back(10.0, 100, java=True), persist(5000.0, 1, True)]
    run = run_of(workload, deliveries, requests, [StoredCopy(10.0, 100, "m0", 1, "%RETRY%G", 3)], client=JAVA)
    found = statuses_of(judge(run, predict(workload, SETTINGS)))
    assert found["CC-02"] == "conforms", found


ONCE_FAILING = Workload((MessageSpec("m0", "TagA", 0, ("RECONSUME_LATER",)),))


def lost_after(code):
    """m0 delivered once, failed, its send-back answered `code`; nothing else happened (cpp drops the message)."""
    deliveries = [delivery(1, 0.0, "m0", 100, 0, "RECONSUME_LATER")]
    return run_of(ONCE_FAILING, deliveries, [send_back(10.0, 100, code=code), persist(5000.0, 1, oneway=False)], [])


def explained(run):
    verdicts, problems = explain_deviations(judge(run, predict(run.workload, SETTINGS)), run)
    return {v.rule: v for v in verdicts}, problems


@once
@given(st.just(None))
def test_a_loss_behind_a_refused_send_back_is_the_declared_cause_and_names_it(_):
    """The real read-only broker answers the send-back NO_PERMISSION (16): cpp's SY-10 deviation, declared with the
    cause 'a failed send-back dropped', covers m0 and the record names that cause."""
    found, problems = explained(lost_after(16))
    assert found["SY-10"].status == "deviates" and found["SY-10"].keys == ("m0",)
    assert "a failed send-back dropped" in found["SY-10"].cause
    assert [p for p in problems if "undeclared" in p] == []


@once
@given(st.just(None))
def test_a_loss_no_declared_cause_explains_fails_even_though_the_rule_is_declared(_):
    """m0 succeeded at the listener's first answer in the workload's eyes, but the history shows a failure that was
    neither sent back nor dropped after a failed send-back (no request at all): cpp declares SY-10, yet none of its
    causes explains this loss, so it is undeclared."""
    deliveries = [delivery(1, 0.0, "m0", 100, 0, "SUSPEND_CURRENT_QUEUE_A_MOMENT")]
    run = run_of(ONCE_FAILING, deliveries, [persist(5000.0, 1, oneway=False)], [])
    found, problems = explained(run)
    assert found["SY-10"].status == "deviates" and found["SY-10"].cause == ""
    assert any(p.startswith("undeclared deviation of SY-10") and "for m0" in p for p in problems), problems


@once
@given(st.just(None))
def test_a_message_the_broker_still_holds_is_indefinite_not_lost(_):
    """The same history as a loss, but the final read finds m0 past the group's committed offset: the run ended
    before the client came back to it, so SY-10 is indefinite and no deviation is declared or needed."""
    pending = BrokerRead((QueueRead("TopicTest", 0, 0, 1, (("m0", 0, 0),)),))
    run = evolve(lost_after(1), final=pending)
    found, problems = explained(run)
    assert found["SY-10"].status == "indefinite" and found["SY-10"].keys == ("m0",)
    assert [p for p in problems if "SY-10" in p] == []


@once
@given(st.just(None))
def test_a_failure_in_flight_when_cpp_stopped_is_its_own_declared_cause(_):
    """The CI run of 2026-11-27 (conformance-cpp, a restart after two deliveries): m0 and m1 both failed, only m1's
    send-back went out before the client stopped, and the offset it persisted on the way out moved past m0. The
    loss is cpp's CC-06 and SY-10 by the cause 'a failure in flight when the client stopped', not by a failed
    send-back; without a stop after the failure, nothing explains it."""
    workload = Workload((MessageSpec("m0", "TagA", 0, ("RECONSUME_LATER",)),
                         MessageSpec("m1", "TagA", 0, ("RECONSUME_LATER",))), restart_after=2)
    deliveries = [delivery(1, 0.0, "m0", 100, 0, "RECONSUME_LATER"), delivery(2, 1.0, "m1", 124, 0, "RECONSUME_LATER"),
                  delivery(3, 1020.0, "m1", 300, 1, "CONSUME_SUCCESS", origin=124)]
    stop = WireRequest(2.0, UNREGISTER_CLIENT, {"consumerGroup": SETTINGS.group})
    requests = [send_back(2.0, 124), persist(2.0, 1, oneway=False), stop]
    stored = [StoredCopy(2.0, 124, "m1", 1, "%RETRY%G", 3)]
    run = run_of(workload, deliveries, requests, stored)
    found, problems = explained(run)
    assert [p for p in problems if "undeclared" in p] == [], problems
    assert "a failure in flight when the client stopped" in found["SY-10"].cause
    assert "a failure in flight when the client stopped" in found["CC-06"].cause
    _found, problems = explained(evolve(run, requests=tuple(requests[:2])))
    assert any(p.startswith("undeclared deviation of SY-10") for p in problems), problems


@once
@given(st.just(None))
def test_a_refused_send_back_of_a_retry_copy_is_cpps_declared_cc07_cause(_):
    """conformance-cpp drew it: m0's first send-back was stored, its retry failed again and that send-back was refused
    (NO_PERMISSION), and cpp dropped it. The cause 'a refused send-back not retried locally' looks at the refused
    send-back only, not at the earlier one that succeeded and brought the retry."""
    workload = Workload((MessageSpec("m0", "TagA", 0, ("RECONSUME_LATER",) * 2),),
                        (Fault("broker_not_writeable", "m0", 1),))
    deliveries = [delivery(1, 0.0, "m0", 100, 0, "RECONSUME_LATER"),
                  delivery(2, 1100.0, "m0", 200, 1, "RECONSUME_LATER", origin=100)]
    requests = [send_back(10.0, 100), send_back(1110.0, 200, code=16), persist(5000.0, 1, oneway=False)]
    stored = [StoredCopy(10.0, 100, "m0", 1, "%RETRY%G", 3)]
    run = evolve(run_of(workload, deliveries, requests, stored),
                 faults=(FaultEvent("broker_not_writeable", 1110.0, None, "m0#1"),))
    found, problems = explained(run)
    assert [p for p in problems if "undeclared" in p] == [], problems
    assert found["CC-07"].status == "deviates" and "a refused send-back not retried locally" in found["CC-07"].cause


def test_only_a_raise_inside_a_pulled_batch_is_the_raising_batch_cause():
    """conformance-cpp drew it: m1 (RECONSUME_LATER) and m0 (EXCEPTION) in one pulled batch, the same millisecond;
    cpp sent back a copy it never showed and lost m0. A raise inside a batch is the binding's documented trigger; a
    raise alone, or apart from the others, is not."""
    workload = Workload((MessageSpec("m0", "TagA", 0, ("EXCEPTION",)),
                         MessageSpec("m1", "TagA", 0, ("RECONSUME_LATER",))))
    together = [delivery(1, 0.0, "m1", 100, 0, "RECONSUME_LATER"), delivery(2, 0.0, "m0", 124, 0, "EXCEPTION")]
    run = run_of(workload, together, [send_back(2.0, 1369)], [])
    assert is_in_a_raising_batch(run, "m0") and is_in_a_raising_batch(run, "m1")
    apart = [together[0], delivery(2, 900.0, "m0", 124, 0, "EXCEPTION")]
    assert not is_in_a_raising_batch(run_of(workload, apart, [], []), "m0")
    alone = run_of(Workload(workload.messages[:1]), together[1:], [], [])
    assert not is_in_a_raising_batch(alone, "m0")


def test_a_raise_shown_alone_whose_unshown_batch_mate_was_sent_back_is_the_raising_batch_cause():
    """conformance-cpp (seed 1102) drew it: m0 raised, shown alone; 3 ms later cpp sent back m0 and a copy at an offset
    the listener never saw (m2, its pulled batch-mate), whose send-back failed: m2 lost, never delivered. The
    listener-visible batch held one message, so only the unshown send-back tells the batch was shared."""
    workload = Workload((MessageSpec("m0", "TagA", 0, ("EXCEPTION",)), MessageSpec("m2", "TagB", 0, ("EXCEPTION",))))
    shown = [delivery(1, 0.0, "m0", 0, 0, "EXCEPTION")]
    run = run_of(workload, shown, [send_back(1.1, 0), send_back(3.1, 268, code=1)], [])
    assert is_in_a_raising_batch(run, "m2")
    assert not is_in_a_raising_batch(run_of(workload, shown, [send_back(1.1, 0)], []), "m2")  # no unshown copy
    late = run_of(workload, shown, [send_back(1.1, 0), send_back(900.0, 268, code=1)], [])
    assert not is_in_a_raising_batch(late, "m2")  # not the raise's batch
    # Seed 1106: the raising message itself shown alone, an unshown copy sent back right after its raise: its own
    # loss is the same cause; a message that did not raise there is not covered by it.
    assert is_in_a_raising_batch(run, "m0")
    other = run_of(workload, [*shown, delivery(2, 500.0, "m2", 300, 0, "RECONSUME_LATER")],
                   [send_back(1.1, 0), send_back(3.1, 268, code=1)], [])
    assert is_in_a_raising_batch(other, "m0") and not is_in_a_raising_batch(other, "m2")


def test_a_fault_on_the_send_back_of_an_accepted_copy_is_no_hit_failure():
    """The final CI rehearsal drew it: cpp sent m0's accepted third copy back with a failing batch-mate, the backend
    faulted that send-back (m0#2), and cpp's SY-10 'when' then demanded a loss that could not be: m0 was consumed.
    A hit is a fault on the send-back of a delivery that failed."""
    workload = Workload((MessageSpec("m0", "TagA", 0, ("RECONSUME_LATER", "RECONSUME_LATER")),))
    deliveries = [delivery(1, 0.0, "m0", 100, 0, "RECONSUME_LATER"),
                  delivery(2, 1100.0, "m0", 200, 1, "RECONSUME_LATER", origin=100),
                  delivery(3, 2200.0, "m0", 300, 2, "CONSUME_SUCCESS", origin=100)]
    run = evolve(run_of(workload, deliveries, [], []),
                 faults=(FaultEvent("send_back_timeout", 2210.0, None, "m0#2"),))
    assert get_hit_faults(run) == []
    failed_then = evolve(run, faults=(FaultEvent("send_back_timeout", 1110.0, None, "m0#1"),))
    assert get_hit_faults(failed_then) == [Fault("send_back_timeout", "m0", 1)]


@once
@given(st.just(None))
def test_a_send_back_the_broker_refused_on_its_own_is_judged_under_cc06_like_an_injected_fault(_):
    """No fault injected: the broker itself answered NO_PERMISSION (read-only, as a scheduled fault makes it), the
    Java client's fallback send to %RETRY% was stored and m0 came back through it. CC-06 is judged from the wire and
    conforms (before, no CC-06 verdict was given for want of an injected fault); the same run without the fallback's
    copy delivered deviates."""
    workload = Workload((MessageSpec("m0", "TagA", 0, ("RECONSUME_LATER",)),))
    fallback = WireRequest(20.0, SEND_MESSAGE_V2, {"b": "%RETRY%G", "a": "CLIENT_INNER_PRODUCER", "m0": "m0"}, 0, 0)
    requests = [send_back(10.0, 100, code=16, java=True), fallback, persist(5000.0, 1, True)]
    deliveries = [delivery(1, 0.0, "m0", 100, 0, "RECONSUME_LATER", start_time=True),
                  delivery(2, 1100.0, "m0", 200, 1, "CONSUME_SUCCESS", origin=100, start_time=True)]
    stored = [StoredCopy(20.0, 200, "m0", 1, "%RETRY%G", 4)]
    found = statuses_of(judge(run_of(workload, deliveries, requests, stored, client=JAVA), predict(workload, SETTINGS)))
    assert found.get("CC-06") == "conforms", found
    lost = statuses_of(judge(run_of(workload, deliveries[:1], requests, stored, client=JAVA),
                             predict(workload, SETTINGS)))
    assert lost.get("CC-06") == "deviates", lost


@once
@given(st.just(None))
def test_the_prediction_knows_a_send_back_the_broker_refused_on_its_own(_):
    """conformance-java-faults drew it: maxReconsumeTimes 1, m1 fails, the broker (read-only by a scheduled fault)
    refuses the send-back, and the Java client's fallback — reconsumeTimes 1, not below the maximum — goes straight
    to %DLQ%: (0,) then the DLQ, where a send-back the broker took gives (0, 1) then the DLQ. The prediction runs
    with the refusal the wire shows (a send_back_error), so the reference conforms."""
    workload = Workload((MessageSpec("m1", "TagB", 0, ("NULL", "EXCEPTION")),))
    settings = evolve(SETTINGS, max_reconsume_times=1)
    fallback = WireRequest(20.0, SEND_MESSAGE_V2, {"b": "%RETRY%G", "a": "CLIENT_INNER_PRODUCER", "m1": "m1"}, 0, 0)
    requests = [send_back(10.0, 100, code=16, java=True), fallback, persist(5000.0, 1, True)]
    deliveries = [delivery(1, 0.0, "m1", 100, 0, "NULL", start_time=True)]
    stored = [StoredCopy(20.0, 200, "m1", 1, "%DLQ%G", 0)]
    run = run_of(workload, deliveries, requests, stored, client=JAVA, settings=settings)
    assert get_wire_send_back_faults(run) == (Fault("send_back_error", "m1", 0),)
    assert predict_run(run).fates["m1"].reconsume_times == (0,)
    found = statuses_of(judge(run, predict_run(run)))
    assert (found.get("CC-06"), found.get("CC-07")) == ("conforms", None), found


def test_a_send_back_is_paired_with_the_delivery_before_it_not_the_last_of_its_offset():
    """The CI rehearsal's conformance-java drew it: the broker refused m1's first send-back (an injected
    broker_not_writeable) and its fallback, the 4.9.8 client retried m1 locally (reconsumeTimes 1, the same commit-log
    offset) and sent that offset back again, taken. Pairing each send-back with the last delivery of its offset
    made the refusal one of delivery 1, a refusal no fault named, and the prediction ran with a fault too many:
    (0, 1, 2, 3, 4) against the reference's (0, 1, 1, 2, 3)."""
    workload = Workload((MessageSpec("m1", "TagA", 0, ("RECONSUME_LATER", "NULL", "CONSUME_SUCCESS")),),
                        (Fault("broker_not_writeable", "m1", 0),))
    refused = WireRequest(20.0, SEND_MESSAGE_V2, {"b": "%RETRY%G", "a": "CLIENT_INNER_PRODUCER", "m1": "m1"}, 0, 16)
    requests = [send_back(10.0, 100, code=16, java=True), refused, send_back(5010.0, 100, java=True)]
    deliveries = [delivery(1, 0.0, "m1", 100, 0, "RECONSUME_LATER"),
                  delivery(2, 5000.0, "m1", 100, 1, "NULL", origin=100, seen=1),
                  delivery(3, 6100.0, "m1", 200, 1, "CONSUME_SUCCESS", origin=100, seen=2)]
    stored = [StoredCopy(5020.0, 200, "m1", 1, "%RETRY%G", 3)]
    run = run_of(workload, deliveries, requests, stored, client=JAVA)
    assert get_wire_send_back_faults(run) == ()
    assert predict_run(run).fates["m1"].reconsume_times == (0, 1, 1)


@once
@given(st.just(None))
def test_ali_ons_retry_copy_loss_need_not_show_under_a_scheduled_fault(_):
    """ali-ons answers RECONSUME_LATER on a retry copy, then is killed before its offset was committed: the restarted
    instance delivers the copy again and it is consumed. The CC-06/SY-10 loss that a plain run must show did not
    happen here, and that is no problem: under a scheduled fault the declaration need not show."""
    kill = ScheduledFault("client_kill", AfterDelivery("m0", 1), 1000)
    workload = Workload((MessageSpec("m0", "TagA", 0, ("RECONSUME_LATER", "RECONSUME_LATER")),), schedule=(kill,))
    deliveries, requests, stored = retry_chain(["RECONSUME_LATER"], java=True)
    requests[-1] = persist(5000.0, 1, oneway=False)
    deliveries += [delivery(2, 1100.0, "m0", 200, 1, "RECONSUME_LATER", origin=100),
                   delivery(3, 4000.0, "m0", 200, 1, "CONSUME_SUCCESS", origin=100, seen=2)]
    run = evolve(run_of(workload, deliveries, requests, stored, client=ALI_ONS),
                 faults=(FaultEvent("client_kill", 1200.0, 2200.0, "m0 delivery 1"),))
    verdicts = judge(run, predict(workload, SETTINGS))
    assert not [p for p in check_declarations(verdicts, run) if "did not happen" in p]


def test_cpps_sy05_need_not_show_where_nothing_is_dead_lettered():
    """conformance-cpp (seed 1105) drew a BROADCASTING poison message: a broadcasting consumer drops a failure (CC-09),
    so SY-05's DLQ after retryMaxTimes cannot show, and its `when` must not demand it; a CLUSTERING one must."""
    poison = MessageSpec("m0", "TagA", 0, ("RECONSUME_LATER",) * 3)
    [sy05] = [d for d in DECLARED if d.rule == "SY-05" and d.client == ("rocketmq-client-cpp", "1.2.3")]
    broadcasting = Workload((poison,), model="broadcasting")
    assert not sy05.when(run_of(broadcasting, [], [], []))
    assert sy05.when(run_of(Workload((poison,)), [], [], []))


def test_an_original_the_restarted_broker_stored_again_is_a_second_lineage_only_after_a_broker_kill():
    """The CI rehearsal's conformance-java-faults drew it: the broker killed while delayed messages were due, its
    delay timer resumed from its last flushed offset and stored them again, so the reference was shown m2's original
    twice (two commit-log offsets) and each lineage retried with its own origin id. After a broker kill that is two
    lineages (no SY-05 / SY-09 failure); without one, a second original is still caught."""
    workload = Workload((MessageSpec("m0", "TagA", 0, ("RECONSUME_LATER", "CONSUME_SUCCESS") * 2),))
    deliveries, requests, stored = retry_chain(["RECONSUME_LATER", "CONSUME_SUCCESS"], java=True)
    deliveries += [delivery(3, 5000.0, "m0", 900, 0, "RECONSUME_LATER", start_time=True),
                   delivery(4, 6100.0, "m0", 1000, 1, "CONSUME_SUCCESS", origin=900, start_time=True)]
    requests.append(send_back(5010.0, 900, java=True))
    stored.append(StoredCopy(5010.0, 900, "m0", 1, "%RETRY%G", 3))
    run = run_of(workload, deliveries, requests, stored, client=JAVA)
    assert set(check_invariants(run, 16)) == {"SY-09"}
    killed = evolve(run, faults=(FaultEvent("broker_kill", 3000.0, 4000.0, "at 3000 ms"),))
    assert get_replayed_originals(killed) == {"m0"} and check_invariants(killed, 16) == {}


def test_a_failure_in_flight_at_a_stop_shown_again_after_it_is_not_read_as_success():
    """The CI rehearsal's conformance-java-faults drew it: m0 answered NULL as the client was restarted; the stopping
    instance sent nothing back, and the next one was shown the same copy again. Not CC-04's swallowed failure: that
    one commits past the copy, which is never shown again."""
    workload = Workload((MessageSpec("m0", "TagA", 0, ("NULL", "CONSUME_SUCCESS")),), restart_after=1)
    shown = [delivery(1, 0.0, "m0", 100, 0, "NULL"), delivery(2, 3000.0, "m0", 100, 0, "CONSUME_SUCCESS", seen=1)]
    assert get_swallowed(run_of(workload, shown, [], [])) == []
    assert [d.number for d in get_swallowed(run_of(workload, shown[:1], [], []))] == [1]


def test_a_send_back_of_a_delivery_recorded_a_little_later_is_of_that_delivery():
    """[CC-02] The driver may record a delivery after the send-back it led to (its line read late, at load): with no
    delivery of the copy before the send-back, the first within RECORD_LAG_MS is the one sent back; a copy first
    delivered later than that was never delivered when it was sent back."""
    workload = Workload((MessageSpec("m0", "TagA", 0, ("RECONSUME_LATER",)),))
    late = run_of(workload, [delivery(1, 125.0, "m0", 100, 0, "RECONSUME_LATER")], [send_back(100.0, 100)], [])
    assert get_batch_verdict(late)[0] == "conforms"
    later = run_of(workload, [delivery(1, 700.0, "m0", 100, 0, "RECONSUME_LATER")], [send_back(100.0, 100)], [])
    assert get_batch_verdict(later)[:2] == ("deviates", "offset 100: never delivered")


def test_a_broadcast_failure_is_judged_dropped_only_once_the_restarted_client_pulled_its_queue():
    """CC-09 in a restart run: a failure not delivered again is dropped only if the next instance read its queue
    (rocketmq-client-go consumes it again from its offset table, declared); a run that ended before any pull of that
    queue after the restart shows nothing either way: indefinite, naming the message."""
    workload = Workload((MessageSpec("m0", "TagA", 0, ("RECONSUME_LATER",)), MessageSpec("m1")),
                        model="broadcasting", restart_after=2)
    deliveries = [delivery(1, 100.0, "m0", 100, 0, "RECONSUME_LATER"), delivery(2, 200.0, "m1", 200, 0,
                                                                                "CONSUME_SUCCESS")]
    stop = WireRequest(1000.0, UNREGISTER_CLIENT, {})

    def pull(at, queue):
        return WireRequest(at, PULL_MESSAGE, {"topic": "TopicTest", "queueId": str(queue), "queueOffset": "1"})

    ended_first = run_of(workload, deliveries, [pull(50.0, 0), stop, pull(1500.0, 1)], [], client=JAVA)
    assert get_broadcasting_verdict(ended_first) == (
        "indefinite", "the restarted client pulled queues [0] of its failures no more", frozenset({"m0"}))
    pulled = run_of(workload, deliveries, [pull(50.0, 0), stop, pull(1500.0, 0)], [], client=JAVA)
    assert get_broadcasting_verdict(pulled) == ("conforms", "1 failed deliveries dropped")
    without_restart = run_of(evolve(workload, restart_after=None), deliveries, [pull(50.0, 0)], [], client=JAVA)
    assert get_broadcasting_verdict(without_restart)[0] == "conforms"
