"""What the 5.x client suites share: the workloads every client runs (by API), and one run judged — the workload
through the client against the session's RocketMQ 5.3.3, its verdicts recorded and its problems raised
(conformance/harness.py judge_pop_run), the rule x verdict map returned."""

from __future__ import annotations

import pytest

from conformance.harness import judge_pop_run
from conformance.history.pop_workload import RESTART_KINDS, PopFault, PopMessage, PopWorkload
from conformance.runner.backends import admin
from conformance.runner.backends.pop_backend import RealPopBackend
from conformance.runner.clients.protocol import get_transcript_problems
from conformance.runner.pop_run import run_pop_workload

# The proxy's longest receive hold in the client suites' deployment (pop_fixtures.py): its 5 s minimum.
LONG_POLLING_MS = 5000
PROXY_CONF = {"grpcClientConsumerMaxLongPollingTimeoutMillis": str(LONG_POLLING_MS)}
CUSTOMIZED_20S = {"type": "CUSTOMIZED", "customizedRetryPolicy": {"next": [20_000]}}
EXPONENTIAL_20S = {"type": "EXPONENTIAL", "exponentialRetryPolicy": {"initial": 20_000, "max": 60_000, "multiplier": 2}}

# How long a lasting fault of the fixed workloads stays on: past a redelivery's due time (invisible time, revive lag
# 2-9 s) so that the redelivery, or the proxy's forward to the DLQ, falls within it.
LASTING_MS = 12_000
# A SimpleConsumer: a lost ack, a change, an ack after the invisible time ran out; a poison message to the DLQ; a
# FIFO group whose first message is not acked once; the consumer killed with a message in flight; the proxy with its
# broker restarted while a message waits for its invisible time to end; a poison message whose last attempt falls in
# a read-only broker (the proxy's forward to the DLQ is a send-back, refused while the broker is not writeable:
# spec/16-proxy.md PD-03).
SIMPLE = {
    "lost-change-late": PopWorkload((PopMessage("m0", ("NOTHING",)), PopMessage("m1", ("CHANGE",)),
                                     PopMessage("m2", ("LATE_ACK",)))),
    "poison": PopWorkload((PopMessage("m0", forever=True),)),
    "fifo": PopWorkload((PopMessage("m0", ("NOTHING",)), PopMessage("m1"), PopMessage("m2")), fifo=True),
    "kill": PopWorkload((PopMessage("m0"), PopMessage("m1")), faults=(PopFault("client_kill", "m0", 0),)),
    "proxy-restart": PopWorkload((PopMessage("m0", ("NOTHING",)), PopMessage("m1")),
                                 faults=(PopFault("proxy_restart", "m0", 0),)),
    "read-only-poison": PopWorkload((PopMessage("m0", forever=True),),
                                    faults=(PopFault("broker_read_only", "m0", 1, LASTING_MS),)),
}
# RocketMQ 5.3.3's remoting push consumer in POP mode (popInvisibleTime 5 s, the least the client takes): an
# exception, then success (its POP delay table); a success that outlives the invisible time; a poison message up to
# maxReconsumeTimes 1 (then its next delay is 30 s or more: the run ends there); a kill in flight; the broker
# restarted, or crashed (PO-10: what was popped since the last persist is popped again), while a failed message waits
# for its POP delay; the broker read-only, or the name server not answering, while it waits.
POP = {
    "fail-once": PopWorkload((PopMessage("m0", ("EXCEPTION",)), PopMessage("m1")), api="pop", invisible_ms=5000),
    "slow": PopWorkload((PopMessage("m0", ("SLOW",)),), api="pop", invisible_ms=5000),
    "poison": PopWorkload((PopMessage("m0", ("FAILURE",), forever=True),), api="pop", invisible_ms=5000,
                          max_reconsume_times=1),
    "kill": PopWorkload((PopMessage("m0"), PopMessage("m1")), api="pop", invisible_ms=5000,
                        faults=(PopFault("client_kill", "m0", 0),)),
    "broker-restart": PopWorkload((PopMessage("m0", ("FAILURE",)), PopMessage("m1")), api="pop", invisible_ms=5000,
                                  faults=(PopFault("proxy_restart", "m0", 0),)),
    "broker-crash": PopWorkload((PopMessage("m0", ("FAILURE",)), PopMessage("m1")), api="pop", invisible_ms=5000,
                                faults=(PopFault("proxy_kill", "m0", 0),)),
    "read-only": PopWorkload((PopMessage("m0", ("FAILURE",)), PopMessage("m1")), api="pop", invisible_ms=5000,
                             faults=(PopFault("broker_read_only", "m0", 0, LASTING_MS),)),
    "namesrv-down": PopWorkload((PopMessage("m0", ("FAILURE",)), PopMessage("m1")), api="pop", invisible_ms=5000,
                                faults=(PopFault("namesrv_stop", "m0", 0, LASTING_MS),)),
    "beside-pull": PopWorkload((PopMessage("m0", ("FAILURE",), pulled=True), PopMessage("m1", ("FAILURE",))),
                               api="pop", invisible_ms=5000),
}
# A push listener's success after HOLD_MS + LATE_BY_MS: past the proxy's 60 s invisible time for an auto-renewed
# receive and the revive lag after it; RocketMQ 5.3.3's proxy never renews it (spec/16-proxy.md PD-07), so it is
# delivered again meanwhile.
HOLD_MS = 70_000
# A push listener: a poison message; failure, exception and a slow success; a group whose retry policy is
# exponential from 20 s, and one whose customized policy waits 20 s (both outlast the revive lag and the proxy's hold,
# so a client that nacks for less shows it); a FIFO group; the consumer restarted with a message in flight; the name
# server not answering while a failed message waits for its retry; a message held past the proxy's invisible time.
PUSH = {
    "poison": PopWorkload((PopMessage("m0", forever=True),), api="push"),
    "fail-raise-slow": PopWorkload((PopMessage("m0", ("FAILURE", "EXCEPTION")), PopMessage("m1", ("SLOW",))),
                                   api="push", retry_max_times=3),
    "exponential": PopWorkload((PopMessage("m0", ("FAILURE",)),), api="push", retry_max_times=3,
                               policy=EXPONENTIAL_20S),
    "customized": PopWorkload((PopMessage("m0", ("FAILURE",)),), api="push", retry_max_times=3,
                              policy=CUSTOMIZED_20S),
    "fifo": PopWorkload((PopMessage("m0", ("FAILURE",)), PopMessage("m1"), PopMessage("m2")), api="push", fifo=True,
                        retry_max_times=3),
    "restart": PopWorkload((PopMessage("m0"), PopMessage("m1")), api="push",
                           faults=(PopFault("client_restart", "m0", 0),)),
    "namesrv-down": PopWorkload((PopMessage("m0", ("FAILURE",)), PopMessage("m1")), api="push", retry_max_times=3,
                                faults=(PopFault("namesrv_stop", "m0", 0, LASTING_MS),)),
    "hold": PopWorkload((PopMessage("m0", ("SLOW",)),), api="push", invisible_ms=HOLD_MS),
}


# The rule each workload is there for: its run must judge it (conforms, or deviates as declared). Where the proxy
# restarted under a gRPC client the run may end with the message still waiting (indefinite): the restarted proxy has
# lost the client's settings and answers every receive INTERNAL_SERVER_ERROR until the client sends them again — the
# Python client every 300 s (ClientTelemetryManager's sync period), longer than a run; the Node client at once
# (spec/13-clients.md).
JUDGES = {"simple-lost-change-late": "PG-03", "simple-poison": "PG-02", "simple-fifo": "FF-02", "simple-kill": "PG-01",
          "simple-proxy-restart": "PG-01", "pop-broker-restart": "PG-01",
          "push-poison": "PG-02", "push-fail-raise-slow": "RP-03", "push-exponential": "RP-03",
          "push-customized": "RP-03", "push-fifo": "FF-02",
          "push-restart": "PG-01", "pop-fail-once": "PC-01", "pop-slow": "PC-03", "pop-poison": "PC-02",
          "pop-kill": "PG-01", "simple-read-only-poison": "PG-02", "push-namesrv-down": "PG-01",
          "pop-broker-crash": "PG-01", "pop-read-only": "PC-01", "pop-namesrv-down": "PC-01",
          "pop-beside-pull": "PC-04", "push-hold": "PD-07"}


def get_outcomes(workload: PopWorkload) -> tuple[str, ...]:
    """The verdicts the rule a workload is there for may get."""
    restarted = workload.api != "pop" and any(f.kind in RESTART_KINDS for f in workload.faults)
    return ("conforms", "deviates", "indefinite") if restarted else ("conforms", "deviates")


def get_params(*apis: str) -> list:
    """The workloads of `apis` ("simple", "push", "pop") as pytest params (workload, the rule it is there for), ids
    `<api>-<name>`: every one on either backend, the model-backed server making each fault as RocketMQ 5.3.3 does
    (conformance/suite/pop_targets.py)."""
    suites = {"simple": SIMPLE, "push": PUSH, "pop": POP}
    return [pytest.param(w, JUDGES[f"{api}-{name}"], id=f"{api}-{name}") for api in apis
            for name, w in suites[api].items()]


def require_client(reason: str | None) -> None:
    """Fail (not skip) where the client cannot run: the suite's tox env is meant to run it."""
    if reason:
        pytest.fail(reason)


class PopTarget:
    """A running RocketMQ 5.3.3 as the runs use it: `backend` (a RealPopBackend: topics, groups, sends, reads),
    `namesrv`, `endpoints` (the proxy's gRPC address), and `restart()` for a proxy_restart fault (the backend's
    connections are made again)."""

    def __init__(self, rocketmq5) -> None:
        self.rocketmq5 = rocketmq5
        self.backend = self.connect()

    def connect(self):
        self.namesrv, self.endpoints = self.rocketmq5.namesrv_addr, self.rocketmq5.proxy_grpc_addr
        return RealPopBackend(self.rocketmq5.broker_addr, self.endpoints)

    def restart(self) -> None:
        self.backend.close()
        self.rocketmq5.restart()
        self.backend = self.connect()

    def crash(self) -> None:
        """A proxy_kill fault: `kill -9` of the proxy's JVM (its broker inside), started again on its store."""
        self.backend.close()
        self.rocketmq5.crash()
        self.backend = self.connect()

    def set_fault(self, kind: str, on: bool) -> None:
        """A lasting fault on or off: broker_read_only (brokerPermission 4, else 6), namesrv_stop (the name server's
        process paused, else resumed)."""
        if kind == "broker_read_only":
            self.backend.set_broker_config(brokerPermission=admin.PERM_READ if on else admin.PERM_READ_WRITE)
        elif kind == "namesrv_stop":
            self.rocketmq5.pause_namesrv(on)
        else:
            raise ValueError(f"not a lasting fault: {kind!r}; lasting ones: broker_read_only, namesrv_stop")

    def get_revive_drops(self, topic: str) -> tuple[tuple[int, int], ...]:
        """What the broker's revive dropped of `topic` (RocketMQ5.get_revive_drops)."""
        return self.rocketmq5.get_revive_drops(topic)

    def reconnect(self):
        """The backend's connections again (the broker closes one idle for 120 s): the new backend."""
        self.backend.close()
        self.backend = self.connect()
        return self.backend

    def close(self) -> None:
        self.backend.close()


def run_and_judge_pop(target: PopTarget, open_client, workload: PopWorkload, log_dir: str) -> dict[str, str]:
    """{rule: status} of one judged run; raises AssertionError on an undeclared or vanished deviation, and on a
    line either way that adapter protocol v2's schema rejects (jsonschema: the dev extra, the tox envs)."""
    consumers: list = []
    run = run_pop_workload(target, open_client, workload, log_dir, long_polling_ms=LONG_POLLING_MS,
                           consumers=consumers)
    problems = get_transcript_problems(consumers)
    assert not problems, problems[:5]
    verdicts = judge_pop_run(run, repr(workload))
    return {v.rule: v.status for v in verdicts}
