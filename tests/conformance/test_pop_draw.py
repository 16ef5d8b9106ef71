"""The drawn 5.x workloads (conformance/suite/pop_draw.py): every drawn workload is one a run can carry out, the
shrinking candidates lead to the smallest workload that still shows a problem, a workload's source names it again,
and a lasting fault (read-only broker, name server down) is switched on at its delivery and off at its end
(conformance/runner/pop_run.py)."""

from __future__ import annotations

from hypothesis import given, settings
from hypothesis import strategies as st

from conformance.history.pop_workload import LASTING_KINDS, POP_FAULT_KINDS, PopFault, PopMessage, PopWorkload
from conformance.runner import pop_run
from conformance.runner.pop_run import RUN_LIMIT_S, PopRunner
from conformance.suite.pop_draw import (
    CUSTOMIZED_SHORT,
    format_pop_workload,
    get_answers,
    get_pop_candidates,
    pop_workloads,
)
from conformance.suite.shrink import Budget, shrink


@settings(max_examples=60, deadline=None)
@given(data=st.data(), api=st.sampled_from(("simple", "push", "pop")))
def test_a_drawn_workload_is_one_a_run_can_carry_out(data, api):
    workload = data.draw(pop_workloads(api))
    keys = [m.key for m in workload.messages]
    assert len(set(keys)) == len(keys) and workload.api == api
    assert all(set(m.script) <= set(get_answers(api)) for m in workload.messages)
    for fault in workload.faults:
        assert fault.kind in POP_FAULT_KINDS and fault.key in keys
        assert fault.delivery <= len(workload.spec_by_key[fault.key].script)
        assert (fault.duration_ms > 0) == (fault.kind in LASTING_KINDS)
    if workload.get_poison_keys():  # a poison message only where a run sees its end
        assert len(workload.get_poison_keys()) == 1
        assert workload.max_reconsume_times == 1 if api == "pop" else workload.retry_max_times <= 2
    assert not (api == "pop" and workload.fifo)


BIG = PopWorkload((PopMessage("m0", ("ACK", "CHANGE")), PopMessage("m1", ("NOTHING", "LATE_ACK"), forever=True),
                   PopMessage("m2", ("ACK",))), fifo=True, retry_max_times=2, policy=CUSTOMIZED_SHORT,
                  faults=(PopFault("broker_read_only", "m1", 1, 3000), PopFault("client_kill", "m0", 0)))


def test_shrinking_a_drawn_workload_ends_at_the_smallest_that_shows_the_problem():
    def shows(workload: PopWorkload, _unused: int) -> bool:
        return any("NOTHING" in m.script for m in workload.messages)

    shrunk = shrink((BIG, 0), shows, Budget(seconds=1e9, runs=100), candidates=get_pop_candidates)
    assert shrunk.workload == PopWorkload((PopMessage("m1", ("NOTHING",)),)) and shrunk.stopped == "minimal"
    assert all(len(list(get_pop_candidates(c))) < 30 for c, _ in get_pop_candidates(BIG))


def test_a_workload_source_names_the_same_workload():
    source = format_pop_workload(BIG)
    names = {"PopWorkload": PopWorkload, "PopMessage": PopMessage, "PopFault": PopFault, "__builtins__": {}}
    assert eval(source, names) == BIG  # noqa: S307 - the test's own source
    assert format_pop_workload(PopWorkload((PopMessage("m0"),))) == "PopWorkload((PopMessage('m0'),))"


class Target:
    def __init__(self):
        self.calls = []

    def set_fault(self, kind, on):
        self.calls.append((kind, on))


class Seen:
    def __init__(self, key, seen_before):
        self.uniq_key, self.seen_before = key, seen_before


class Consumer:
    def __init__(self, deliveries):
        self.deliveries, self.seen = deliveries, {}

    def stop(self):
        pass


def test_a_lasting_fault_is_on_from_its_delivery_until_its_duration_ends():
    workload = PopWorkload((PopMessage("m0", ("NOTHING",)),), faults=(PopFault("namesrv_stop", "m0", 1, 60_000),))
    target = Target()
    runner = PopRunner(None, workload, None, None, target)
    runner.consumers = [Consumer([Seen("m0", 0)])]
    runner.poll_faults()
    assert target.calls == [] and runner.faults == []  # its delivery has not come
    runner.consumers[0].deliveries.append(Seen("m0", 1))
    runner.poll_faults()
    runner.poll_faults()
    assert target.calls == [("namesrv_stop", True)] and runner.faults == []  # on, once, and not yet over
    runner.stop_all()
    assert target.calls == [("namesrv_stop", True), ("namesrv_stop", False)]
    assert [(f.kind, f.target) for f in runner.faults] == [("namesrv_stop", "m0")]
    assert runner.faults[0].end_ms >= runner.faults[0].time_ms


class Clock:
    """time.monotonic and time.sleep of a run, in simulated seconds."""

    def __init__(self):
        self.now = 0.0

    def monotonic(self):
        return self.now

    def sleep(self, seconds):
        self.now += seconds


class SlowRestartTarget:
    def __init__(self, clock, seconds):
        self.clock, self.seconds = clock, seconds

    def restart(self):
        self.clock.sleep(self.seconds)


def test_a_slow_broker_restart_does_not_count_against_the_run_limit(monkeypatch):
    """pop-broker-restart with a restart that took 78 s (load): the run still waits RUN_LIMIT_S beside it for the
    failed message to come back, instead of ending 12 s after the broker is back."""
    clock = Clock()
    monkeypatch.setattr(pop_run, "time", clock)
    workload = PopWorkload((PopMessage("m0", ("FAILURE",)),), api="pop", faults=(PopFault("proxy_restart"),))
    runner = PopRunner(None, workload, None, None, SlowRestartTarget(clock, 78.0))
    runner.consumers = [Consumer([Seen("m0", 0)])]
    runner.wait(cap=2)
    assert [f.kind for f in runner.faults] == ["proxy_restart"]
    assert RUN_LIMIT_S + 78.0 <= clock.now < RUN_LIMIT_S + 78.0 + 1.0
