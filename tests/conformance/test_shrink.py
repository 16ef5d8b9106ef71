"""The workload shrinker (conformance/suite/shrink.py) on fake predicates — pure functions over workloads, no client —
and a full run's failure message (conformance/suite/full_run.py) with the client's runs replaced by such a function."""

from __future__ import annotations

import random

from attrs import evolve
from hypothesis import given, settings
from hypothesis import strategies as st

from conformance.checker.deviations import COUNTEREXAMPLES
from conformance.history.workload import (
    SCHEDULED_FAULT_KINDS,
    AfterDelivery,
    Fault,
    MessageSpec,
    ScheduledFault,
    Workload,
)
from conformance.runner.clients.cpp import open_cpp_consumer
from conformance.runner.workloads import workloads
from conformance.suite import full_run
from conformance.suite.full_run import parse_counterexample
from conformance.suite.shrink import Budget, format_case, get_candidates, get_signature, shrink

UNLIMITED = Budget(seconds=1e9, runs=10**6)
BIG = (Workload((MessageSpec("m0", "TagB", 2, ("RECONSUME_LATER", "RECONSUME_LATER")),
                 MessageSpec("m1", None, 1, ("RECONSUME_LATER", "EXCEPTION", "CONSUME_SUCCESS", "EXCEPTION")),
                 MessageSpec("m2", "TagA", 0, ("EXCEPTION",))),
                (Fault("send_back_error", "m1", 1), Fault("pull_error", "m0", 2)), restart_after=3), 2)


def has_exception_behind_send_back_error(workload: Workload, _client_max: int = -1) -> bool:
    """The planted condition: a message answered EXCEPTION at the delivery whose send-back a send_back_error hits."""
    return any(f.kind == "send_back_error" and f.key in workload.spec_by_key
               and workload.get_status(f.key, f.delivery) == "EXCEPTION" for f in workload.faults)


def test_the_shrinker_finds_the_minimal_workload_of_a_planted_condition():
    shrunk = shrink(BIG, has_exception_behind_send_back_error, UNLIMITED)
    assert (shrunk.workload, shrunk.client_max) == (
        Workload((MessageSpec("m1", "TagA", 0, ("RECONSUME_LATER", "EXCEPTION")),),
                 (Fault("send_back_error", "m1", 1),)), -1)
    assert shrunk.stopped == "minimal"


@settings(max_examples=60, deadline=None)
@given(workloads("concurrently"), st.sampled_from((-1, 1, 2)))
def test_a_shrunk_case_holds_and_none_of_its_candidates_does(workload, client_max):
    """Greedy shrinking ends in a case the predicate accepts and from which no one step smaller is accepted."""
    condition = has_exception_behind_send_back_error
    shrunk = shrink((workload, client_max), condition, UNLIMITED)
    assert shrunk.stopped == "minimal"
    if condition(workload):
        assert condition(shrunk.workload)
        assert not any(condition(*candidate) for candidate in get_candidates(shrunk.workload, shrunk.client_max))
    else:
        assert (shrunk.workload, shrunk.client_max, shrunk.runs) == (workload, client_max,
                                                                    len(list(get_candidates(workload, client_max))))


def test_the_shrinker_spends_no_more_re_runs_than_its_budget():
    calls = []
    shrunk = shrink(BIG, lambda *case: calls.append(case) or True, Budget(seconds=1e9, runs=3))
    assert len(calls) == shrunk.runs == 3
    assert shrunk.stopped == "budget"
    assert (shrunk.workload, shrunk.client_max) == calls[-1]


def test_the_shrinker_starts_no_re_run_that_would_outlast_its_seconds():
    """Each fake re-run takes 10 s: with 25 s, a third one (20 s spent + the longest, 10 s) would not fit."""
    now = [0.0]

    def takes_ten_seconds(*_case):
        now[0] += 10.0
        return False

    shrunk = shrink(BIG, takes_ten_seconds, Budget(seconds=25.0, runs=100), clock=lambda: now[0])
    assert (shrunk.runs, shrunk.seconds, shrunk.stopped) == (2, 20.0, "budget")
    assert (shrunk.workload, shrunk.client_max) == BIG


@settings(max_examples=30, deadline=None)
@given(st.integers(0, 2**32))
def test_the_shrinker_never_returns_a_candidate_the_predicate_rejected(seed):
    """A flaky predicate (a real client's race): the result is the original case or one it accepted."""
    chance, accepted = random.Random(seed), [BIG]

    def flaky(*case):
        if chance.random() < 0.3:
            accepted.append(case)
            return True
        return False

    shrunk = shrink(BIG, flaky, UNLIMITED)
    assert (shrunk.workload, shrunk.client_max) == accepted[-1]


def test_every_declared_counterexample_prints_as_declared():
    for source in {s for s in COUNTEREXAMPLES.values() if s}:
        assert format_case(*parse_counterexample(source)) == source


@settings(max_examples=60, deadline=None)
@given(workloads("orderly", auto_commit=st.booleans()) | workloads("concurrently", scheduled=SCHEDULED_FAULT_KINDS),
       st.sampled_from((-1, 1, 2)))
def test_a_printed_case_reads_back_as_itself(workload, client_max):
    """Every part of a workload survives printing: messages (a poison one's `forever` too), faults, the schedule of
    process faults, the restart, the mode and autoCommit."""
    assert parse_counterexample(format_case(workload, client_max)) == (workload, client_max)


def test_a_scheduled_fault_and_a_poison_message_each_have_a_smaller_candidate():
    kill = ScheduledFault("client_kill", AfterDelivery("m0", 0), 1000)
    workload = Workload((MessageSpec("m0", "TagA", 0, (), forever=True),), schedule=(kill,))
    smaller = [w for w, _max in get_candidates(workload, -1)]
    assert evolve(workload, schedule=()) in smaller
    assert evolve(workload, messages=(MessageSpec("m0", "TagA"),)) in smaller


def test_a_problem_is_the_same_whatever_its_message_and_detail():
    client = ("rocketmq-client-cpp", "1.2.3")
    undeclared = [f"undeclared deviation of CC-04 by {client} for {key} (no declared cause explains it): {detail}"
                  for key, detail in (("m0", "a"), ("m2", "b"))]
    assert get_signature(undeclared[0]) == get_signature(undeclared[1]) == "undeclared CC-04"
    assert get_signature(f"declared deviation of SB-09 by {client} did not happen: x") == "did not happen SB-09"
    assert get_signature("the server could not serve the client: {'kind': 'bad-frame', 'x': 1}") \
        == "harness fault bad-frame"


class FakeRun:
    def __init__(self, workload, backend="model"):
        self.workload, self.backend = workload, backend


def find_problems(run):
    """The planted condition's problem (an undeclared CC-06), in place of the checker's."""
    return [], (["undeclared deviation of CC-06 by x for m1 (no declared cause explains it): d"]
                if has_exception_behind_send_back_error(run.workload) else [])


def test_a_full_run_failure_shows_each_problem_shrunk_with_its_replay_command(monkeypatch, tmp_path):
    """The client's re-runs replaced: a run's problems are the planted condition's (an undeclared CC-06)."""

    monkeypatch.setattr(full_run, "run_case", lambda _client, workload, *_args: FakeRun(workload))
    monkeypatch.setattr(full_run, "find_problems", find_problems)
    monkeypatch.setattr(full_run, "SHRUNK", {})
    monkeypatch.setenv("RMQSPEC_SHRINK_BUDGET_RUNS", "1000")
    failure = "\n".join(["undeclared deviation of CC-06 ...", *(f"wire line {n} " + "x" * 1000 for n in range(500))])
    message = full_run.explain_failure(failure, FakeRun(BIG[0]), open_cpp_consumer, 2, str(tmp_path))
    source = 'Workload((MessageSpec("m1", "TagA", 0, ("RECONSUME_LATER", "EXCEPTION")),), ' \
             '(Fault("send_back_error", "m1", 1),)), -1'
    assert f"shrunk (undeclared CC-06): {source}" in message
    assert f"replay: python -m conformance.suite.replay --client cpp '{source}'" in message
    assert "stopped: minimal" in message
    assert len(message) < 25_000
    assert list(full_run.SHRUNK) == [("cpp", "model", repr(BIG[0]), 2, "undeclared CC-06")]


def test_a_failure_on_the_real_broker_is_shrunk_on_it_and_replayed_on_it(monkeypatch, tmp_path):
    """Each re-run opens the failing run's backend (with a fresh topic), and the replay command names it, inside a
    loopback-only namespace."""
    opened = []

    def run_case(_client, workload, _max, _log_dir, _prefix, open_backend, fresh_topic):
        opened.append((open_backend, fresh_topic))
        return FakeRun(workload, "rocketmq-4.9.8")

    monkeypatch.setattr(full_run, "run_case", run_case)
    monkeypatch.setattr(full_run, "find_problems", find_problems)
    monkeypatch.setattr(full_run, "SHRUNK", {})
    real = object()
    message = full_run.explain_failure("undeclared deviation of CC-06 ...", FakeRun(BIG[0], "rocketmq-4.9.8"),
                                       open_cpp_consumer, 2, str(tmp_path), (real, True))
    assert opened and set(opened) == {(real, True)}
    assert "replay: python -m conformance.runner.backends.loopback python -m conformance.suite.replay --client cpp " \
           "--backend rocketmq-4.9.8 'Workload(" in message


def test_dropping_a_message_drops_the_send_back_faults_on_it_and_keeps_pull_faults():
    """A send-back fault on a message no longer produced could never hit: it goes with the message (one re-run
    fewer); a pull fault names no message and stays."""
    dropped_m1 = next(w for w, _ in get_candidates(*BIG) if "m1" not in w.spec_by_key)
    assert dropped_m1.faults == (Fault("pull_error", "m0", 2),)
