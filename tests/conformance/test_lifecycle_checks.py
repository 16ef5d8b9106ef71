"""The checks of conformance/checker/lifecycle.py on hand-written runs (no client, no server): the orderly suspend
interval (CFG-04), an orderly poison message under the default maxReconsumeTimes (OR-15) and the clean stop at a
run's end (RB-07) — each shown conforming and deviating — plus the poison messages of workloads (`forever`)."""

from __future__ import annotations

from attrs import evolve
from hypothesis import given
from hypothesis import strategies as st

from conformance.checker.lifecycle import get_orderly_poison_verdict, get_shutdown_verdict, get_suspend_verdict
from conformance.checker.predict import predict
from conformance.checker.verdicts import check_declarations, explain_deviations, judge
from conformance.codec.codes import UNREGISTER_CLIENT, UPDATE_CONSUMER_OFFSET
from conformance.history.records import BrokerRead, Delivery, FaultEvent, QueueRead, WireRequest
from conformance.history.workload import MessageSpec, Workload
from conformance.runner.run import get_forever_cap, has_kept_failing
from tests.conformance.test_verdicts import CPP, JAVA, SETTINGS, once, persist, run_of, statuses_of

SUSPEND = "SUSPEND_CURRENT_QUEUE_A_MOMENT"
ORDERLY_POISON = Workload((MessageSpec("m0", "TagA", forever=True),), mode="orderly")
MAX_DEFAULT = type("P", (), {"max_reconsume_times": 2**31 - 1})()


def orderly_delivery(number, at, key, status, *, offset=0, queue=0, r=None, seen=None):
    """An orderly delivery of `key` at queue offset `offset`: number n is its (n-1)-th local retry."""
    times = number - 1 if r is None else r
    message = {"msgId": key, "topic": "TopicTest", "queueId": queue, "queueOffset": offset, "commitLogOffset": 100,
               "reconsumeTimes": times, "properties": {"UNIQ_KEY": key, "TAGS": "TagA"}}
    return Delivery(number, at, message, status, number - 1 if seen is None else seen)


def suspends(gap_ms, count=3, final="SUCCESS"):
    """m0 suspended `count` times, each local retry `gap_ms` after the failure, then answered `final`."""
    return [orderly_delivery(n + 1, n * gap_ms, "m0", SUSPEND if n < count else final) for n in range(count + 1)]


def unregister(at):
    return WireRequest(at, UNREGISTER_CLIENT, {"clientID": "c", "consumerGroup": SETTINGS.group}, 0)


def test_suspends_of_the_java_interval_conform_and_a_short_or_long_one_deviates():
    workload = Workload((MessageSpec("m0", "TagA", 0, (SUSPEND,) * 3),), mode="orderly")
    assert get_suspend_verdict(run_of(workload, suspends(1010.0), [], []), MAX_DEFAULT)[0] == "conforms"
    for gap in (100.0, 2500.0):
        status, detail, keys = get_suspend_verdict(run_of(workload, suspends(gap), [], []), MAX_DEFAULT)
        assert (status, keys) == ("deviates", frozenset({"m0"})) and f"{gap:.0f} ms" in detail


def test_a_given_up_message_or_a_queue_that_moved_on_is_no_suspend():
    """At maxReconsumeTimes the message is given up (no suspend); a next delivery never seen before is another
    message: the queue moved on (OR-04's concern, not the interval's)."""
    at_max = type("P", (), {"max_reconsume_times": 0})()
    workload = Workload((MessageSpec("m0", "TagA", 0, (SUSPEND,)), MessageSpec("m1")), mode="orderly")
    moved_on = [orderly_delivery(1, 0.0, "m0", "EXCEPTION"), orderly_delivery(1, 5.0, "m1", "SUCCESS", offset=1)]
    assert get_suspend_verdict(run_of(workload, suspends(100.0), [], []), at_max) is None
    assert get_suspend_verdict(run_of(workload, moved_on, [], []), MAX_DEFAULT) is None


@once
@given(st.just(None))
def test_cpp_100_ms_orderly_retry_is_its_declared_cfg04_deviation_and_java_would_not_be(_):
    workload = Workload((MessageSpec("m0", "TagA", 0, (SUSPEND,) * 3),), mode="orderly")
    flat = [orderly_delivery(n + 1, n * 100.0, "m0", SUSPEND if n < 3 else "SUCCESS", r=0) for n in range(4)]
    run = run_of(workload, flat, [persist(5000.0, 1, False)], [])
    verdicts, problems = explain_deviations(judge(run, predict(workload, SETTINGS)), run)
    cfg04 = next(v for v in verdicts if v.rule == "CFG-04")
    assert cfg04.status == "deviates" and cfg04.cause == "orderly retry after 100 ms" and problems == []
    as_java = run_of(workload, flat, [persist(5000.0, 1, True)], [], client=JAVA)
    java_problems = check_declarations(judge(as_java, predict(workload, SETTINGS)), as_java)
    assert any(p.startswith("undeclared deviation of CFG-04") for p in java_problems), java_problems
    java_like = run_of(workload, suspends(1000.0), [persist(5000.0, 1, False)], [])
    assert any("CFG-04" in p and "did not happen" in p
               for p in check_declarations(judge(java_like, predict(workload, SETTINGS)), java_like))


def poison_run(*, dead=(), client=JAVA):
    """The orderly poison m0 suspended five times 1 s apart until the run ended, the broker still holding it."""
    deliveries = [orderly_delivery(n + 1, n * 1000.0, "m0", SUSPEND) for n in range(5)]
    final = BrokerRead((QueueRead("TopicTest", 0, 0, 1, (("m0", 0, 0),)),), dead)
    return evolve(run_of(ORDERLY_POISON, deliveries, [persist(4500.0, 0, True)], [], client=client), final=final)


@once
@given(st.just(None))
def test_an_orderly_poison_message_retries_until_the_run_ends_indefinite_never_lost(_):
    run = poison_run()
    found = statuses_of(judge(run, predict(ORDERLY_POISON, SETTINGS)))
    assert found["OR-15"] == found["CFG-04"] == "conforms", found
    assert found["SY-10"] == "indefinite" and found["OR-07"] == "conforms", found


def test_a_dead_lettered_orderly_poison_message_deviates_from_or15():
    status, detail, keys = get_orderly_poison_verdict(poison_run(dead=(("m0", 5),)), MAX_DEFAULT)
    assert (status, keys) == ("deviates", frozenset({"m0"})) and "dead-lettered: ['m0']" in detail
    bounded = evolve(poison_run(), settings=evolve(SETTINGS, max_reconsume_times=2))
    assert get_orderly_poison_verdict(bounded, MAX_DEFAULT) is None  # judged by the fates (OR-07) instead


def test_a_poison_message_fails_every_delivery_in_its_modes_words():
    spec = MessageSpec("m0", "TagA", 0, ("EXCEPTION",), forever=True)
    assert [spec.get_status(n) for n in range(3)] == ["EXCEPTION", "RECONSUME_LATER", "RECONSUME_LATER"]
    assert ORDERLY_POISON.get_status("m0", 7) == SUSPEND
    assert Workload((MessageSpec("m0", "TagA", 0, ("EXCEPTION",)),)).get_status("m0", 1) == "CONSUME_SUCCESS"


def test_the_model_dead_letters_a_concurrently_poison_message_after_1_plus_max_deliveries():
    workload = Workload((MessageSpec("m0", "TagA", forever=True),))
    assert predict(workload, SETTINGS).fates["m0"].reconsume_times == tuple(range(17))
    assert predict(workload, SETTINGS).fates["m0"].fate == "dlq"
    bounded = predict(workload, evolve(SETTINGS, max_reconsume_times=1)).fates["m0"]
    assert (bounded.reconsume_times, bounded.fate) == ((0, 1), "dlq")
    orderly = predict(ORDERLY_POISON, SETTINGS).fates["m0"]
    assert orderly.fate == "lost" and len(orderly.reconsume_times) > 10  # the model retries as long as it drains


def test_an_orderly_poison_run_ends_after_a_few_deliveries_past_the_bound():
    class Consumer:
        deliveries = poison_run().deliveries

    assert get_forever_cap(ORDERLY_POISON, SETTINGS) == 5
    assert get_forever_cap(ORDERLY_POISON, evolve(SETTINGS, max_reconsume_times=2)) == 8
    assert get_forever_cap(Workload((MessageSpec("m0", "TagA", forever=True),)), SETTINGS) is None
    assert has_kept_failing([Consumer()], frozenset({"m0"}), 5)
    assert not has_kept_failing([Consumer()], frozenset({"m0"}), 6)


def stopped(requests, deliveries, workload=None, ended=10_000.0):
    workload = workload or Workload((MessageSpec("m0", "TagA"), MessageSpec("m1", "TagA")))
    return evolve(run_of(workload, deliveries, requests, [], client=JAVA), ended_ms=ended)


def two_consumed():
    return [orderly_delivery(1, 0.0, "m0", "CONSUME_SUCCESS"), orderly_delivery(1, 5.0, "m1", "CONSUME_SUCCESS",
                                                                                 offset=1)]


def test_a_stop_that_persists_the_consumed_offsets_then_unregisters_conforms():
    run = stopped([persist(10_001.0, 2, True), unregister(10_002.0)], two_consumed())
    assert get_shutdown_verdict(run) == ("conforms", "persisted TopicTest:0=2, then UNREGISTER_CLIENT")
    assert get_shutdown_verdict(evolve(run, ended_ms=0.0)) is None  # no recorded stop: a hand-written history


def test_after_a_restart_the_last_stop_answers_for_the_queues_the_last_instance_consumed_from():
    """conformance-cpp drew it: the first instance consumed m0 from queue 0 and stopped (persisting it); the second
    consumed only from queue 1, so its stop persists queue 1; queue 0 is not the second instance's to persist."""
    m1_on_1 = orderly_delivery(1, 6_000.0, "m1", "CONSUME_SUCCESS", queue=1)
    m1_on_1.message["commitLogOffset"] = 200  # another copy than m0's
    persist_1 = WireRequest(10_001.0, UPDATE_CONSUMER_OFFSET, {"topic": "TopicTest", "queueId": "1",
                                                                  "commitOffset": "1"}, 2)
    requests = [persist(4_000.0, 1, True), unregister(4_001.0), persist_1, unregister(10_002.0)]
    run = stopped(requests, [orderly_delivery(1, 0.0, "m0", "CONSUME_SUCCESS"), m1_on_1])
    assert get_shutdown_verdict(run)[0] == "conforms", get_shutdown_verdict(run)
    unpersisted = stopped([persist(4_000.0, 1, True), unregister(4_001.0), unregister(10_002.0)],
                          [orderly_delivery(1, 0.0, "m0", "CONSUME_SUCCESS"), m1_on_1])
    assert get_shutdown_verdict(unpersisted) == ("deviates", "TopicTest:1 not persisted")


def test_after_a_kill_the_last_stop_answers_for_what_the_restarted_instance_consumed():
    """The fault-verdict table drew it (cpp, client_kill): the killed instance sent no UNREGISTER_CLIENT, so its end
    is the scheduled fault's; the restarted instance consumed only from queue 1 and persisted queue 1."""
    m1_on_1 = orderly_delivery(1, 6_000.0, "m1", "CONSUME_SUCCESS", queue=1)
    m1_on_1.message["commitLogOffset"] = 200
    persist_1 = WireRequest(10_001.0, UPDATE_CONSUMER_OFFSET, {"topic": "TopicTest", "queueId": "1",
                                                                  "commitOffset": "1"}, 2)
    run = stopped([persist_1, unregister(10_002.0)], [orderly_delivery(1, 0.0, "m0", "CONSUME_SUCCESS"), m1_on_1])
    assert get_shutdown_verdict(run) == ("deviates", "TopicTest:0 not persisted")
    killed = evolve(run, faults=(FaultEvent("client_kill", 1_000.0, 3_000.0, "after m0 delivery 0"),))
    assert get_shutdown_verdict(killed)[0] == "conforms", get_shutdown_verdict(killed)


def test_a_stop_without_unregister_or_persist_or_with_a_stale_offset_deviates():
    cases = {"no UNREGISTER_CLIENT": [persist(10_001.0, 2, True)],
             "not persisted": [persist(9_000.0, 2, True), unregister(10_002.0)],
             "after UNREGISTER_CLIENT": [unregister(10_001.0), persist(10_002.0, 2, True)],
             "persisted 1; consumed offset in [2, None]": [persist(10_001.0, 1, True), unregister(10_002.0)]}
    for problem, requests in cases.items():
        status, detail = get_shutdown_verdict(stopped(requests, two_consumed()))
        assert status == "deviates" and problem in detail, (problem, detail)


def test_a_periodic_persist_after_unregister_that_repeats_the_offset_is_no_deviation_another_offset_is():
    """rocketmq-client-cpp 1.2.3's shutdown persists, then unregisters, then stops its factory, whose 5 s persist
    timer can fire in between (DefaultMQPushConsumer::shutdown, MQClientFactory::persistAllConsumerOffset): the CI
    rehearsal's smoke saw the same offsets persisted again after UNREGISTER_CLIENT. RB-07 asks that every queue was
    persisted before unregistering, which it was; a late persist of another offset is still a deviation."""
    repeated = [persist(10_001.0, 2, True), unregister(10_002.0), persist(10_003.0, 2, True)]
    assert get_shutdown_verdict(stopped(repeated, two_consumed())) == (
        "conforms", "persisted TopicTest:0=2, then UNREGISTER_CLIENT")
    moved = [persist(10_001.0, 2, True), unregister(10_002.0), persist(10_003.0, 1, True)]
    assert get_shutdown_verdict(stopped(moved, two_consumed())) == (
        "deviates", "TopicTest:0 persisted [1] after UNREGISTER_CLIENT, 2 before")


def test_a_stop_behind_an_orderly_poison_message_persists_its_offset_not_past_it():
    consumed = orderly_delivery(1, 0.0, "m1", "SUCCESS")
    poison = [orderly_delivery(n + 1, 10.0 + n * 1000.0, "m0", SUSPEND, offset=1) for n in range(3)]
    workload = Workload((MessageSpec("m0", "TagA", forever=True), MessageSpec("m1")), mode="orderly")
    final = BrokerRead((QueueRead("TopicTest", 0, 1, 2, (("m0", 0, 1),)),))
    held = [consumed, *poison]
    ok = evolve(stopped([persist(10_001.0, 1, True), unregister(10_002.0)], held, workload), final=final)
    assert get_shutdown_verdict(ok)[0] == "conforms"
    past = evolve(stopped([persist(10_001.0, 2, True), unregister(10_002.0)], held, workload), final=final)
    assert get_shutdown_verdict(past) == ("deviates", "TopicTest:0 persisted 2; consumed offset in [1, 1]")


@once
@given(st.just(None))
def test_a_clean_stop_is_judged_for_every_client_and_cpp_declares_no_deviation_of_it(_):
    run = evolve(stopped([persist(10_001.0, 2, False), unregister(10_002.0)], two_consumed()), client=CPP)
    verdicts, problems = explain_deviations(judge(run, predict(run.workload, SETTINGS)), run)
    assert next(v for v in verdicts if v.rule == "RB-07").status == "conforms"
    broken = evolve(run, requests=(persist(10_001.0, 2, False),))
    verdicts, problems = explain_deviations(judge(broken, predict(run.workload, SETTINGS)), broken)
    assert any(p.startswith("undeclared deviation of RB-07") for p in problems), problems


def test_a_local_retry_that_kept_the_fallbacks_retry_topic_is_of_the_original_queue():
    """As the Java client showed with the broker not writeable: the local retry carries RETRY_TOPIC (set by the
    refused fallback) but is the original copy of TopicTest:0 (same commit-log offset), so that queue is the one
    persisted past it."""
    first = orderly_delivery(1, 0.0, "m0", "RECONSUME_LATER")
    again = orderly_delivery(2, 5000.0, "m0", "CONSUME_SUCCESS")
    again.message["properties"]["RETRY_TOPIC"] = "TopicTest"
    run = stopped([persist(10_001.0, 1, True), unregister(10_002.0)], [first, again],
                  Workload((MessageSpec("m0", "TagA", 0, ("RECONSUME_LATER",)),)))
    assert get_shutdown_verdict(run) == ("conforms", "persisted TopicTest:0=1, then UNREGISTER_CLIENT")
