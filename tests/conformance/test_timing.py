"""Timing that knows the client and the fault: the timers table (conformance/history/timers.py) and the checker's
lateness and indefinite decisions it drives (SY-06, SY-10), on hand-written histories."""

from __future__ import annotations

import re
from pathlib import Path

import pytest
from attrs import evolve, fields
from hypothesis import given
from hypothesis import strategies as st

from conformance.checker.checks import get_late_retries
from conformance.checker.differential import predict_run
from conformance.checker.mechanisms import get_observed_fates
from conformance.checker.verdicts import judge
from conformance.codec.codes import HEART_BEAT, PULL_MESSAGE, ResponseCode
from conformance.history.records import BrokerRead, FaultEvent, QueueRead, RunSettings, StoredCopy, WireRequest
from conformance.history.timers import (
    ALI_ONS,
    CLIENTS,
    CPP,
    GO,
    JAVA,
    SLACK_MS,
    ClientTimers,
    get_client_timers,
    get_disturbances,
    get_latest_ms,
    get_quiet_end_ms,
    get_recovery_ms,
)
from conformance.history.workload import Fault, MessageSpec, Workload
from conformance.runner.run import get_wait_end_s
from conformance.runner.schedule import Scheduler
from tests.conformance.test_verdicts import delivery, once, run_of, send_back, statuses_of

JAVA_ID = {"name": JAVA.name, "version": JAVA.version}
CPP_ID = {"name": CPP.name, "version": CPP.version}
SETTINGS = RunSettings(retry_max_times=2)
REPOSITORIES = {JAVA: r"apache/rocketmq/blob/rocketmq-all-4\.9\.8/client/",
                CPP: r"apache/rocketmq-client-cpp/blob/1\.2\.3/", ALI_ONS: r"ali-sdk/ali-ons/blob/v3\.12\.0/",
                GO: r"apache/rocketmq-client-go/blob/v2\.1\.2/"}


@pytest.mark.parametrize("timers", list(CLIENTS.values()), ids=lambda t: t.name)
def test_every_timer_cites_its_clients_source_at_its_release_by_line(timers):
    for field in fields(ClientTimers)[2:]:
        source = getattr(timers, field.name).source
        assert re.fullmatch(rf"https://github\.com/{REPOSITORIES[timers]}\S+#L[0-9]+-L[0-9]+", source), field.name


def test_a_client_is_known_by_name_and_version_else_by_name_else_as_the_reference():
    assert get_client_timers(CPP_ID) is CPP
    assert get_client_timers({"name": "ali-ons", "version": "3.13.0"}) is ALI_ONS
    assert get_client_timers({}) is JAVA


@pytest.mark.parametrize("timers, cause, bound_ms", [
    (JAVA, "send_back_timeout", 5000 + 3000 + 5000),  # RPC timeout, fallback send, local retry
    (JAVA, "send_back_error", 3000 + 5000),
    (JAVA, "unregistered", 30000 + 1000),  # the next heartbeat, then a pull back-off
    (JAVA, "pull_error", 1000),
    (JAVA, "broker_killed", 32000 + 1000),  # a lost pull reply outlasts the heartbeat
    (CPP, "send_back_error", 0),  # dropped: nothing comes back to wait for
    (CPP, "send_back_timeout", 3000 + 30000),  # its pulls in flight on the closed transport time out
    (CPP, "pull_error", 0),
    (ALI_ONS, "send_back_timeout", 3000 + 6000 + 5000),
    (ALI_ONS, "pull_error", 3000),
    # A scheduled fault, from its end: the broker restarted on its store knows no consumer until a heartbeat.
    (JAVA, "broker_kill", 32000 + 1000),
    (CPP, "broker_kill", 30000 + 0),
    (ALI_ONS, "broker_kill", 30000 + 3000),
    (JAVA, "broker_read_only", 1000),  # pulls went on; its refused send-backs are disturbances of their own
    (JAVA, "namesrv_stop", 1000),  # pulls went on on the cached route
    (ALI_ONS, "namesrv_stop", 3000),
    (JAVA, "client_kill", 0 + 1000),  # a started instance rebalances at once, then pulls
    (CPP, "client_restart", 0 + 0),
    (ALI_ONS, "client_restart", 0 + 3000),
])
def test_the_recovery_bound_of_a_cause_is_the_sum_of_the_clients_timers(timers, cause, bound_ms):
    assert get_recovery_ms(timers, cause) == bound_ms


def pull(at: float, code: int | None) -> WireRequest:
    fields = {"topic": f"%RETRY%{SETTINGS.group}", "queueId": "0", "maxMsgNums": "32", "suspendTimeoutMillis": "15000"}
    return WireRequest(at, PULL_MESSAGE, fields, 0, code)


REFUSED = ResponseCode.SUBSCRIPTION_NOT_EXIST


def test_a_spell_of_refused_pulls_is_one_disturbance_from_its_first_pull():
    """The consumer is unregistered from the first SUBSCRIPTION_NOT_EXIST on; the pulls refused after it do not
    move the bound (the client's heartbeat grid does not move), but a spell after a pull answered again does."""
    requests = [pull(1000, 0), pull(2000, REFUSED), pull(3000, REFUSED), pull(4000, 19), pull(9000, REFUSED)]
    found = [(d.cause, d.start_ms, d.end_ms) for d in get_disturbances(JAVA_ID, [], requests)]
    assert found == [("unregistered", 2000, 33000), ("unregistered", 9000, 40000)]


def test_the_quiet_end_is_the_latest_recovery_of_the_faults_and_the_wire():
    fault = FaultEvent("broker_killed", 1000.0, 5000.0)
    assert get_quiet_end_ms(JAVA_ID, [fault], [pull(2000, 1)]) == 5000 + 33000 + SLACK_MS
    assert get_quiet_end_ms(JAVA_ID, [], [pull(2000, 1)]) == 2000 + 1000 + SLACK_MS
    assert get_quiet_end_ms(JAVA_ID, [], [pull(2000, 0)]) == 0.0


def test_a_run_under_a_schedule_waits_for_the_clients_recovery_from_each_scheduled_fault_by_its_kind():
    scheduler = Scheduler((), None, None, 0.0)
    scheduler.events = [FaultEvent("client_kill", 1000.0, 3000.0), FaultEvent("broker_kill", 2000.0, 4000.0)]
    assert get_wait_end_s([], [], JAVA_ID, scheduler) == (4000 + 33000 + SLACK_MS) / 1000
    assert get_wait_end_s([], [], CPP_ID, scheduler) == (4000 + 30000 + SLACK_MS) / 1000
    scheduler.events = [FaultEvent("client_kill", 1000.0, 3000.0)]
    assert get_wait_end_s([pull(2000, 1)], [], JAVA_ID, scheduler) == (3000 + 1000 + SLACK_MS) / 1000


def test_a_disturbance_extends_a_retrys_bound_only_if_it_began_before_the_retry_was_due_and_slack():
    [spell] = get_disturbances(JAVA_ID, [], [pull(10000, REFUSED)])
    assert get_latest_ms(8000, [spell]) == 41000 + SLACK_MS
    assert get_latest_ms(6000, [spell]) == 6000 + SLACK_MS  # consumed by 9000 without it


# m0 fails, its send-back is never answered; 5 s later the Java client's fallback stores the copy with level 3
# (1 s in the compressed table: due at 6010), the broker has unregistered the consumer (the client closed its
# socket) and refuses its pulls until the heartbeat at 29000; the copy comes 24 s past due, as measured.
TIMEOUT = Workload((MessageSpec("m0", "TagA", 0, ("RECONSUME_LATER",)),), (Fault("send_back_timeout"),))
FIRST = delivery(1, 0.0, "m0", 100, 0, "RECONSUME_LATER", start_time=True)
AGAIN = delivery(2, 30010.0, "m0", 200, 1, "CONSUME_SUCCESS", origin=100, start_time=True)
UNANSWERED = send_back(10.0, 100, code=None, java=True)
FALLBACK = WireRequest(5010.0, 310, {"b": "%RETRY%G", "l": "16", "i": "UNIQ_KEY\x01m0"}, 0, 0)
SPELL = [pull(6010.0 + 1000 * n, REFUSED) for n in range(23)]
HEARTBEAT_THEN_PULL = [WireRequest(29000.0, HEART_BEAT, {}), pull(29500.0, 0)]
COPY = StoredCopy(5010.0, -1, "m0", 1, "%RETRY%G", 3, "fallback")


def timed_out_run(deliveries=(FIRST, AGAIN), requests=(UNANSWERED, FALLBACK, *SPELL, *HEARTBEAT_THEN_PULL)):
    fault = FaultEvent("send_back_timeout", 10.0, None, "m0#0")
    return evolve(run_of(TIMEOUT, deliveries, requests, [COPY], client={"name": JAVA.name, "version": "4.9.8"}),
                  faults=(fault,))


def test_the_reference_late_behind_an_unregistered_spell_is_on_time():
    assert get_late_retries(timed_out_run()) == []
    assert get_late_retries(evolve(timed_out_run(), faults=(), requests=(UNANSWERED, FALLBACK))) == [
        ("m0", "m0 r=1 at +24000 ms after due")]


@once
@given(st.just(None))
def test_the_reference_with_a_faulted_send_back_and_an_unregistered_spell_conforms(_):
    run = timed_out_run()
    found = statuses_of(judge(run, predict_run(run)))
    assert "deviates" not in found.values() and found["SY-06"] == "conforms", found


def held_at_end(ended_ms: float, held: bool = True):
    """The timed-out run without the redelivery: the broker still holds m0's copy (or nothing) when it ended."""
    queue = QueueRead("%RETRY%G", 0, 0, 1, (("m0", 1, 0),) if held else ())
    return evolve(timed_out_run(deliveries=(FIRST,), requests=(UNANSWERED, FALLBACK, *SPELL[:5])),
                  final=BrokerRead((queue,)), ended_ms=ended_ms)


def test_a_retry_held_when_the_run_ended_before_its_bound_is_indefinite_not_late():
    run = held_at_end(ended_ms=30000.0)  # the spell from 6010 ends by 37010 (+ slack)
    assert (get_observed_fates(run)["m0"].fate, get_late_retries(run)) == ("indefinite", [])


def test_a_retry_held_when_the_run_ended_past_its_bound_is_late():
    run = held_at_end(ended_ms=41000.0)
    assert get_observed_fates(run)["m0"].fate == "indefinite"
    assert get_late_retries(run) == [("m0", "m0 r=1 not delivered when the run ended, 34990 ms after due "
                                            "(34000 ms allowed)")]


def test_a_retry_nothing_holds_when_the_run_ended_is_lost_not_late():
    run = held_at_end(ended_ms=41000.0, held=False)
    assert (get_observed_fates(run)["m0"].fate, get_late_retries(run)) == ("lost", [])


def test_the_spec_states_every_timer_the_harness_applies_with_its_source():
    """spec/11-guarantees.md (beside SY-06) lists each client's timers as timers.py holds them."""
    chapter = (Path(__file__).resolve().parents[2] / "spec" / "11-guarantees.md").read_text(encoding="utf-8")
    missing = [(timers.name, field.name) for timers in CLIENTS.values() for field in fields(ClientTimers)[2:]
               if f"]({getattr(timers, field.name).source})" not in chapter]
    assert missing == []


def test_a_refused_route_of_the_subscribed_topic_holds_the_client_until_its_next_route_query_and_rebalance():
    """An instance started while the broker was down gets TOPIC_NOT_EXIST for its topic and has no queue until its
    next route query (30 s) and rebalance (20 s): the run waits that long (a CI rehearsal of conformance-java-faults
    stopped the reference 17 s after the route came back and judged its unsent retry a swallow). A refused %RETRY%
    or TBW102 route (normal before the first heartbeat) and an unanswered query are no such sign."""
    route = [WireRequest(100.0, 105, {"topic": t}, 0, ResponseCode.TOPIC_NOT_EXIST) for t in ("TopicTest", "%RETRY%G")]
    found = get_disturbances(JAVA_ID, (), route)
    assert [(d.cause, d.end_ms) for d in found] == [("route_missing", 100.0 + 30_000 + 20_000 + 1000)]
    assert get_disturbances(JAVA_ID, (), [evolve(route[0], response_code=None), route[1],
                                          WireRequest(200.0, 105, {"topic": "TBW102"}, 0, 17)]) == []
    assert get_quiet_end_ms(JAVA_ID, (), route) == 51_100.0 + SLACK_MS
