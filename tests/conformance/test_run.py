"""The glue's order of events (conformance/runner/run.py), with a fake backend and a fake client: a BROADCASTING
consumer without a stored offset starts at the queue's end, so its run produces only once the client pulls every queue;
a CLUSTERING run produces before the client starts; the broker is read once the client has stopped."""

from __future__ import annotations

import time

import pytest
from attrs import evolve

from conformance.codec.codes import CONSUMER_SEND_MSG_BACK, PULL_MESSAGE
from conformance.harness import SETTINGS
from conformance.history.records import BrokerRead, Delivery, FaultEvent, QueueRead, WireRequest
from conformance.history.timers import ALI_ONS, CPP, JAVA, SLACK_MS
from conformance.history.workload import (
    AfterDelivery,
    AfterMs,
    MessageSpec,
    ScheduledFault,
    Workload,
)
from conformance.runner.run import get_failure_wait_end_s, run_workload, wait_until_quiet

pytestmark = pytest.mark.timeout(60)


class FakeBackend:
    namesrv = "127.0.0.1:1"

    def __init__(self, log: list):
        self.log, self.requests = log, []

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        return None

    def produce(self, key, tags, delay_level, queue_id):
        self.log.append(("produce", key))

    def get_requests(self):
        return list(self.requests)

    def get_stored_copies(self):
        return []

    def has_delayed(self):
        return False

    def get_findings(self):
        return []

    def read_final(self):
        self.log.append(("read",))
        return BrokerRead((QueueRead("T", 0, 1, 2, (("m1", 0, 1),)),))

    def get_faults(self):
        return []


class FakeConsumer:
    """Pulls both queues of the topic when it starts, and consumes nothing."""

    def __init__(self, backend: FakeBackend, topic: str):
        self.backend, self.topic = backend, topic
        self.deliveries, self.errors, self.seen, self.client = [], [], {}, {"name": "fake", "version": "0"}

    def __enter__(self):
        self.backend.log.append(("start",))
        self.backend.requests += [WireRequest(0.0, PULL_MESSAGE, {"topic": self.topic, "queueId": str(q)})
                                  for q in range(SETTINGS.topic_queue_nums)]
        return self

    def __exit__(self, *exc):
        self.backend.log.append(("stop",))


def run_with(backend: FakeBackend, model: str, monkeypatch):
    monkeypatch.setattr("conformance.runner.run.QUIET_S", 0.1)
    workload = Workload((MessageSpec("m0"), MessageSpec("m1")), model=model)
    return run_workload(lambda settings, workload: backend, workload, evolve(SETTINGS, group="g"), "i",
                        open_client=lambda request, script, log_dir: FakeConsumer(backend, request.topic))


def run_logged(model: str, monkeypatch) -> list:
    log: list = []
    run_with(FakeBackend(log), model, monkeypatch)
    return log


def test_a_broadcasting_run_produces_after_the_client_pulls_every_queue(monkeypatch):
    assert run_logged("broadcasting", monkeypatch) == [("start",), ("produce", "m0"), ("produce", "m1"), ("stop",),
                                                       ("read",)]


def test_a_clustering_run_produces_before_the_client_starts(monkeypatch):
    assert run_logged("clustering", monkeypatch) == [("produce", "m0"), ("produce", "m1"), ("start",), ("stop",),
                                                     ("read",)]


class FaultyBackend(FakeBackend):
    """Records one fault, as the backends that inject faults report them."""

    def get_faults(self):
        return [FaultEvent("broker_killed", 5.0, 7.0)]


def test_a_run_records_the_final_read_its_end_and_the_backends_faults(monkeypatch):
    before = time.monotonic() * 1000
    run = run_with(FaultyBackend([]), "clustering", monkeypatch)
    assert run.final == BrokerRead((QueueRead("T", 0, 1, 2, (("m1", 0, 1),)),))
    assert before < run.ended_ms < time.monotonic() * 1000
    assert run.faults == (FaultEvent("broker_killed", 5.0, 7.0),)
    assert run_with(FakeBackend([]), "clustering", monkeypatch).faults == ()


class Unreachable(FakeBackend):
    def read_final(self):
        raise ConnectionRefusedError("the broker is down")


def test_a_broker_that_cannot_be_read_leaves_no_final_read(monkeypatch):
    assert run_with(Unreachable([]), "clustering", monkeypatch).final is None


def test_a_run_waits_out_the_clients_answer_to_each_failure():
    """A failed pull is retried after the client's pull back-off, a failed send-back may be consumed again locally
    after the fallback's budget and the local retry: the run is not quiet before the client's timers say so
    (conformance/history/timers.py), slack included. Seen in CI: a pull error on the only message's queue, and the
    run ended 2.5 s later, before ali-ons pulled it again (its back-off is 3 s)."""
    ons, java = {"name": ALI_ONS.name, "version": ALI_ONS.version}, {"name": JAVA.name, "version": JAVA.version}
    found, empty = WireRequest(1_000, PULL_MESSAGE, {}, 0, 0), WireRequest(2_000, PULL_MESSAGE, {}, 0, 19)
    assert get_failure_wait_end_s([found, empty], [], ons) == 0.0
    failed_pull = WireRequest(3_000, PULL_MESSAGE, {}, 0, 1)
    assert get_failure_wait_end_s([found, failed_pull, empty], [], ons) == (3_000 + 3_000 + SLACK_MS) / 1000
    unanswered = WireRequest(4_000, CONSUMER_SEND_MSG_BACK, {}, 0, None)
    # Java: the 5 s RPC timeout, then the fallback's 3 s and the 5 s local retry.
    assert get_failure_wait_end_s([failed_pull, unanswered], [], java) == (4_000 + 13_000 + SLACK_MS) / 1000


def test_a_recorded_fault_holds_the_run_until_the_clients_recovery_bound():
    """A fault the backend recorded, with no sign on the wire yet, holds the run as long as the client needs to
    recover from it: cpp's pulls in flight on the transport its timed-out send-back closed wait out their 30 s."""
    fault = FaultEvent("send_back_timeout", 2_000.0, None, "m0#0")
    cpp = {"name": CPP.name, "version": CPP.version}
    assert get_failure_wait_end_s([], [fault], cpp) == (2_000 + 3_000 + 30_000 + SLACK_MS) / 1000


class RecordedFault(FakeBackend):
    """A backend whose faults say the client needs longer than `limit_s` to recover."""

    def __init__(self, end_s: float):
        super().__init__([])
        self.end_s = end_s

    def get_faults(self):
        return [FaultEvent("pull_error", self.end_s * 1000 - SLACK_MS - JAVA.pull_backoff.ms, None, "11")]


def test_the_run_limit_grows_to_a_faults_recovery_bound(monkeypatch):
    """The run outlives its `limit_s` while a recorded fault's recovery bound runs (and stops once it passed)."""
    monkeypatch.setattr("conformance.runner.run.QUIET_S", 0.1)
    started = time.monotonic()
    backend = RecordedFault(started + 0.8)
    wait_until_quiet(backend, [], started, limit_s=0.3)
    assert backend.end_s <= time.monotonic() < backend.end_s + 1.0


class DelayedUntil(FakeBackend):
    """Holds a delayed copy until `due` on the monotonic clock."""

    def __init__(self, due: float):
        super().__init__([])
        self.due = due

    def has_delayed(self):
        return time.monotonic() < self.due


def test_a_delayed_copy_falling_due_starts_the_quiet_period_again(monkeypatch):
    """Seen in a 30-example Java run: the fallback's copy fell due after the run had been quiet for QUIET_S, and the
    run stopped the client before it pulled the copy (fate "lost"). Now the run waits QUIET_S after it falls due."""
    quiet = 3 / 10
    monkeypatch.setattr("conformance.runner.run.QUIET_S", quiet)
    started = time.monotonic()
    backend = DelayedUntil(started + 5 / 10)
    wait_until_quiet(backend, [], started, limit_s=10)
    assert time.monotonic() >= backend.due + quiet


class DeliveringConsumer(FakeConsumer):
    """Delivers m0 once as it starts (the count carried on from the consumer before it), and can be killed."""

    def __enter__(self):
        super().__enter__()
        seen = self.seen.get("m0", 0)
        self.seen["m0"] = seen + 1
        message = {"msgId": "m0", "topic": self.topic, "queueId": 0, "reconsumeTimes": 0,
                   "properties": {"UNIQ_KEY": "m0"}}
        self.deliveries.append(Delivery(1, time.monotonic() * 1000, message, "CONSUME_SUCCESS", seen))
        return self

    def kill(self):
        self.backend.log.append(("kill",))


class SwitchedBackend(FaultyBackend):
    """Takes the schedule's broker actions, logged with their time."""

    def set_writeable(self, writeable):
        self.log.append(("writeable", writeable, time.monotonic()))


def run_scheduled(backend: FakeBackend, schedule: tuple, monkeypatch):
    monkeypatch.setattr("conformance.runner.run.QUIET_S", 0.1)
    monkeypatch.setattr("conformance.history.timers.SLACK_MS", 100.0)
    workload = Workload((MessageSpec("m0"),), schedule=schedule)
    return run_workload(lambda settings, workload: backend, workload, evolve(SETTINGS, group="g"), "i",
                        open_client=lambda request, script, log_dir: DeliveringConsumer(backend, request.topic))


def test_a_scheduled_client_kill_starts_the_client_again_after_its_duration_and_is_recorded(monkeypatch):
    backend = FakeBackend([])
    run = run_scheduled(backend, (ScheduledFault("client_kill", AfterDelivery("m0", 0), 400),), monkeypatch)
    assert [entry for entry in backend.log if entry[0] != "produce"] == [("start",), ("kill",), ("start",),
                                                                         ("stop",), ("read",)]
    assert [(d.uniq_key, d.seen_before) for d in run.deliveries] == [("m0", 0), ("m0", 1)]
    (event,) = run.faults
    assert (event.kind, event.target) == ("client_kill", "after m0 delivery 0")
    assert event.time_ms >= run.deliveries[0].time_ms and 400 <= event.end_ms - event.time_ms < 1000
    assert run.deliveries[1].time_ms >= event.time_ms + 400  # the client was down for the duration
    # The run waited the client's recovery after the fault ended.
    assert run.ended_ms >= event.end_ms + 300


def test_a_scheduled_broker_fault_is_undone_and_recorded_with_the_backends_faults_in_time_order(monkeypatch):
    backend = SwitchedBackend([])
    run = run_scheduled(backend, (ScheduledFault("broker_read_only", AfterMs(0), 300),), monkeypatch)
    switched = [entry for entry in backend.log if entry[0] == "writeable"]
    assert [entry[:2] for entry in switched] == [("writeable", False), ("writeable", True)]
    assert switched[1][2] - switched[0][2] >= 0.3
    assert [event.kind for event in run.faults] == ["broker_killed", "broker_read_only"]
    assert run.faults[1].end_ms - run.faults[1].time_ms >= 300
