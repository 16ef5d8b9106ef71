"""A workload's schedule of process faults as the runner meets it (conformance/runner/schedule.py), with a fake
clock, backend and clients: each trigger fires its fault once at the right moment, each kind's action is taken and
undone after its duration, and each fault is recorded as a FaultEvent with its start and end."""

from __future__ import annotations

import pytest
from hypothesis import given

from conformance.codec.codes import PULL_MESSAGE, UPDATE_CONSUMER_OFFSET
from conformance.codec.headers import PULL_FLAG_COMMIT_OFFSET
from conformance.history.records import Delivery, FaultEvent, WireRequest
from conformance.history.workload import SCHEDULED_FAULT_KINDS, AfterDelivery, AfterMs, BeforeCommit, ScheduledFault
from conformance.runner.schedule import ClientSlot, Scheduler
from conformance.runner.workloads import DURATIONS_MS, MAX_SCHEDULED, schedules, workloads
from conformance.suite.full_run import get_scheduled_kinds

pytestmark = pytest.mark.timeout(30)


class Clock:
    """A clock the test moves (s)."""

    def __init__(self, now: float = 100.0):
        self.now = now

    def __call__(self) -> float:
        return self.now


class Backend:
    """Records each process action with the clock's time."""

    def __init__(self, clock: Clock):
        self.clock, self.log = clock, []

    def __getattr__(self, name):
        if name in ("set_writeable", "kill_broker", "restart_broker", "stop_namesrv", "start_namesrv"):
            return lambda *args: self.log.append((name, *args))
        raise AttributeError(name)


class Consumer:
    def __init__(self, log: list, number: int):
        self.log, self.number = log, number
        self.deliveries, self.errors, self.seen = [], [], {}

    def __enter__(self):
        self.log.append(("start", self.number))
        return self

    def __exit__(self, *exc):
        self.log.append(("stop", self.number))

    def kill(self):
        self.log.append(("kill", self.number))


def make(schedule, clock: Clock | None = None):
    """A scheduler over a fake backend and a slot with one started fake consumer; they share one log."""
    clock = clock or Clock()
    backend = Backend(clock)
    clients = ClientSlot(lambda: Consumer(backend.log, len(clients.consumers)))
    clients.start()
    return Scheduler(tuple(schedule), backend, clients, clock.now, clock), backend.log, clock


def deliver(scheduler: Scheduler, key: str, seen_before: int, at_s: float, queue_id: int = 0) -> Delivery:
    message = {"msgId": key, "topic": "T", "queueId": queue_id, "queueOffset": 0, "properties": {"UNIQ_KEY": key},
               "reconsumeTimes": 0}
    delivery = Delivery(1, at_s * 1000.0, message, "CONSUME_SUCCESS", seen_before)
    scheduler.clients.live.deliveries.append(delivery)
    return delivery


EXPECTED = {"broker_read_only": [("set_writeable", False), ("set_writeable", True)],
            "broker_kill": [("kill_broker",), ("restart_broker",)],
            "namesrv_stop": [("stop_namesrv",), ("start_namesrv",)],
            "client_restart": [("stop", 0), ("start", 1)],
            "client_kill": [("kill", 0), ("start", 1)]}


@pytest.mark.parametrize("kind", SCHEDULED_FAULT_KINDS)
def test_each_kind_is_fired_once_and_ended_after_its_duration(kind):
    scheduler, log, clock = make([ScheduledFault(kind, AfterMs(500), 2000)])
    del log[:]  # the first client's start
    scheduler.poll([])
    assert log == [] and scheduler.events == []
    clock.now += 0.5
    scheduler.poll([])
    assert log == EXPECTED[kind][:1] and not scheduler.is_settled()
    clock.now += 1.9
    scheduler.poll([])
    assert log == EXPECTED[kind][:1] and scheduler.events == []
    clock.now += 0.1
    scheduler.poll([])
    clock.now += 5.0
    scheduler.poll([])
    assert log == EXPECTED[kind]
    assert scheduler.events == [FaultEvent(kind, 100_500.0, 102_500.0, "at 500 ms")]
    assert scheduler.is_settled()


def test_a_client_due_back_while_the_name_server_is_stopped_comes_back_after_it():
    """As conformance-java-faults drew it: the name server stopped for 3 s, then the client killed for 2 s; a 4.9.8
    client cannot start without a name server, so it is started once the name server is back."""
    scheduler, log, clock = make([ScheduledFault("namesrv_stop", AfterMs(250), 3000),
                                  ScheduledFault("client_kill", AfterMs(750), 2000)])
    del log[:]
    for step_s in (0.25, 0.5, 2.0, 0.5):  # to 250 ms, 750 ms, 2750 ms (the kill is due), 3250 ms (the name server)
        clock.now += step_s
        scheduler.poll([])
        if step_s == 2.0:
            assert log == [("stop_namesrv",), ("kill", 0)]
    assert log == [("stop_namesrv",), ("kill", 0), ("start_namesrv",), ("start", 1)]
    assert [e.kind for e in scheduler.events] == ["namesrv_stop", "client_kill"]


def test_a_client_fired_first_in_the_same_poll_still_comes_back_after_the_name_server():
    """conformance-java-faults-real drew it: the client's start took longer than both triggers, so the first poll
    fired the schedule's client_restart (338 ms, 2 s) before its namesrv_stop (43 ms, 3 s); when both were due the
    client was started first, while the name server was still stopped, and the 4.9.8 client's start failed."""
    scheduler, log, clock = make([ScheduledFault("client_restart", AfterMs(338), 2000),
                                  ScheduledFault("namesrv_stop", AfterMs(43), 3000)])
    del log[:]
    clock.now += 0.4
    scheduler.poll([])
    assert log == [("stop", 0), ("stop_namesrv",)]
    clock.now += 3.5  # both due in one poll
    scheduler.poll([])
    assert log == [("stop", 0), ("stop_namesrv",), ("start_namesrv",), ("start", 1)]


def test_a_restart_waits_until_the_name_server_is_back():
    """A workload's restart_after falling in a name-server outage (conformance-java-faults drew it): the restart
    waits for the outage to end."""
    scheduler, log, clock = make([ScheduledFault("namesrv_stop", AfterMs(0), 500)])
    scheduler.poll([])
    assert log[-1] == ("stop_namesrv",)

    def requests():
        clock.now += 0.25
        return []

    scheduler.wait_while_namesrv_stopped(requests, poll_s=0.0)
    assert log[-1] == ("start_namesrv",) and scheduler.events[0].kind == "namesrv_stop"


def test_after_a_delivery_fires_at_the_first_poll_after_that_delivery_of_that_message():
    scheduler, log, clock = make([ScheduledFault("client_kill", AfterDelivery("m1", 1), 1000)])
    deliver(scheduler, "m1", 0, clock.now)
    deliver(scheduler, "m0", 1, clock.now)
    scheduler.poll([])
    assert log == [("start", 0)]
    clock.now += 0.2
    deliver(scheduler, "m1", 1, clock.now)
    scheduler.poll([])
    scheduler.poll([])
    assert log == [("start", 0), ("kill", 0)]
    assert scheduler.is_settled() is False
    clock.now += 1.0
    scheduler.poll([])
    assert scheduler.events == [FaultEvent("client_kill", 100_200.0, 101_200.0, "after m1 delivery 1")]
    # The next consumer carries on the deliveries counted per message.
    assert scheduler.clients.live.number == 1


def commit(at_s: float, queue_id: int, code: int = UPDATE_CONSUMER_OFFSET, flag: int = 0,
           offset: int = 1) -> WireRequest:
    fields = {"topic": "T", "queueId": str(queue_id), "sysFlag": str(flag), "commitOffset": str(offset)}
    return WireRequest(at_s * 1000.0, code, fields)


def test_before_a_commit_fires_right_after_the_delivery_and_says_whether_its_queue_committed():
    scheduler, log, clock = make([ScheduledFault("broker_kill", BeforeCommit("m0", 0), 1000)])
    scheduler.poll([commit(clock.now, 0)])
    assert log == [("start", 0)]
    deliver(scheduler, "m0", 0, clock.now, queue_id=1)
    clock.now += 0.05
    # A commit of another queue, a pull without the flag, a commit before the delivery, one of an offset before
    # the delivered copy's (0, the copy's own): none is its commit.
    scheduler.poll([commit(clock.now - 1, 1), commit(clock.now, 0), commit(clock.now, 1, PULL_MESSAGE),
                    commit(clock.now, 1, offset=0)])
    assert log[-1] == ("kill_broker",)
    clock.now += 1.0
    scheduler.poll([])
    assert scheduler.events[0].target == "m0 delivery 0, before its commit"


def test_before_a_commit_records_that_the_commit_had_come():
    scheduler, _log, clock = make([ScheduledFault("namesrv_stop", BeforeCommit("m0", 0), 1000)])
    deliver(scheduler, "m0", 0, clock.now, queue_id=1)
    scheduler.poll([commit(clock.now + 0.01, 1, PULL_MESSAGE, PULL_FLAG_COMMIT_OFFSET)])
    clock.now += 1.0
    scheduler.poll([])
    assert scheduler.events[0].target == "m0 delivery 0, after its commit"


def test_a_run_is_not_settled_while_a_time_trigger_waits_and_a_delivery_trigger_may_never_come():
    waiting, _log, _clock = make([ScheduledFault("client_restart", AfterMs(3000), 1000)])
    assert not waiting.is_settled()
    never, _log, _clock = make([ScheduledFault("client_restart", AfterDelivery("m9", 3), 1000)])
    never.poll([])
    assert never.is_settled() and never.events == []


def test_finish_restores_the_broker_and_leaves_a_killed_client_down():
    scheduler, log, clock = make([ScheduledFault("broker_read_only", AfterMs(0), 3000),
                                  ScheduledFault("client_kill", AfterMs(0), 3000)])
    scheduler.poll([])
    clock.now += 1.0
    scheduler.finish()
    assert log == [("start", 0), ("set_writeable", False), ("kill", 0), ("set_writeable", True)]
    assert [(e.kind, e.time_ms, e.end_ms) for e in scheduler.events] == [("broker_read_only", 100_000.0, 101_000.0),
                                                                        ("client_kill", 100_000.0, 101_000.0)]
    assert scheduler.clients.live is None


def test_the_client_slot_carries_the_counts_on_and_keeps_at_most_one_consumer_live():
    log: list = []
    clients = ClientSlot(lambda: Consumer(log, len(clients.consumers)))
    clients.start()
    clients.live.seen["m0"] = 2
    clients.start()
    assert len(clients.consumers) == 1
    clients.restart()
    assert clients.live.seen == {"m0": 2} and log == [("start", 0), ("stop", 0), ("start", 1)]
    clients.kill()
    clients.restart()  # nothing while the client is down
    clients.stop()
    assert log == [("start", 0), ("stop", 0), ("start", 1), ("kill", 1)] and clients.live is None


@given(schedules(("m0", "m1"), ("client_kill", "broker_read_only")))
def test_a_drawn_schedule_is_small_of_the_asked_kinds_and_short(schedule):
    assert len(schedule) <= MAX_SCHEDULED
    for fault in schedule:
        assert fault.kind in ("client_kill", "broker_read_only") and fault.duration_ms in DURATIONS_MS
        assert getattr(fault.trigger, "key", "m0") in ("m0", "m1")


@given(workloads())
def test_a_workload_draws_no_schedule_unless_asked(workload):
    assert workload.schedule == ()


def test_a_full_run_asks_for_scheduled_kinds_by_name():
    assert get_scheduled_kinds({}) == ()
    assert get_scheduled_kinds({"RMQSPEC_SCHEDULED_FAULTS": "client_kill, broker_kill"}) == ("client_kill",
                                                                                              "broker_kill")
    with pytest.raises(ValueError, match="unknown kinds"):
        get_scheduled_kinds({"RMQSPEC_SCHEDULED_FAULTS": "client_crash"})


@pytest.mark.parametrize("kind", SCHEDULED_FAULT_KINDS)
def test_two_faults_of_one_kind_on_at_once_act_once_until_the_later_ends(kind):
    """The CI rehearsal's conformance-java-faults-real drew two broker_kill at 517 ms: the second SIGKILL met a broker
    already gone and waited for a route the name server had back (a registration it took after the connection
    closed), and each end would have started a broker. Overlapping faults of one kind are one outage, from the first
    start to the later end, each still recorded."""
    scheduler, log, clock = make([ScheduledFault(kind, AfterMs(500), 2000), ScheduledFault(kind, AfterMs(1500), 2000)])
    del log[:]
    clock.now += 0.5
    scheduler.poll([])
    clock.now += 1.0
    scheduler.poll([])
    assert log == EXPECTED[kind][:1]
    clock.now += 1.0  # the first is due: the second is still on
    scheduler.poll([])
    assert log == EXPECTED[kind][:1] and len(scheduler.events) == 1
    clock.now += 1.0
    scheduler.poll([])
    assert log == EXPECTED[kind]
    assert [e.end_ms for e in scheduler.events] == [102_500.0, 103_500.0] and scheduler.is_settled()
