"""Workloads for a RocketMQ 5.x consumer under the harness (server-side retry: POP, invisible time, the proxy's DLQ),
and what such a run recorded. A plain value, like workload.py's 4.x one: the runner (conformance/runner/pop_run.py)
runs it against a real client and the real 5.3.3; the checker (conformance/checker/pop_verdicts.py) reads the run.

A message's script is the consumer's answer per delivery, by the consumer's API:
- a SimpleConsumer (api "simple"): ACK, CHANGE (changeInvisibleDuration to `change_ms`), NOTHING (a lost ack: the
  message was processed but never acked), LATE_ACK (an ack after the invisible time ran out);
- a push listener (api "push": the gRPC PushConsumer; "pop": the 5.x remoting push consumer in POP mode): SUCCESS,
  FAILURE, EXCEPTION, SLOW (succeeds after outliving the invisible time).
Past its script a message succeeds, unless it is a poison one (`forever`): then every delivery fails.

A remoting POP workload may give some messages to a pulling consumer of the same group (`PopMessage.pulled`: the 5.x
remoting push consumer with client rebalance on, which retries by 4.x send-back; spec/18-pop-consumer.md PC-04):
the topic then has two queues, the pulled messages go to queue 0 with tag PULL_TAG, the popped ones to queue 1 with
POP_TAG, each consumer subscribing its own tag.
"""

from __future__ import annotations

from attrs import field, frozen

APIS = ("simple", "push", "pop")
SIMPLE_ACTIONS = ("ACK", "CHANGE", "NOTHING", "LATE_ACK")
LISTENER_ANSWERS = ("SUCCESS", "FAILURE", "EXCEPTION", "SLOW")
# How much longer than the invisible time a LATE_ACK or SLOW answer waits.
LATE_BY_MS = 1500
# Scheduled faults of a 5.x run (conformance/runner/schedule.py's kinds where they apply): the consumer's process
# killed with messages in flight, or stopped cleanly, then started again; RocketMQ 5.3.3 (proxy and broker) stopped
# and started again on its store (proxy_restart), or killed (`kill -9`, proxy_kill: PO-10's crash) and started
# again, the consumer left running; for `duration_ms`, the broker read-only (brokerPermission 4) or the name server
# not answering (namesrv_stop: on 5.3.3 its process is paused, as `run` stops the broker when the name server ends).
POP_FAULT_KINDS = ("client_kill", "client_restart", "proxy_restart", "proxy_kill", "broker_read_only", "namesrv_stop")
# The faults that last `duration_ms`, and those that restart RocketMQ 5.3.3 under the consumer.
LASTING_KINDS = ("broker_read_only", "namesrv_stop")
RESTART_KINDS = ("proxy_restart", "proxy_kill")
# The tags of a workload with a pulling consumer beside the popping one: each subscribes its own.
PULL_TAG, POP_TAG = "PULL", "POP"


@frozen
class PopMessage:
    """One produced message: its key (the UNIQ_KEY, the gRPC message id), its script, whether it is poison; for a
    FIFO group the message group it is sent in; `pulled`: for the group's pulling consumer (api "pop" only)."""

    key: str
    script: tuple[str, ...] = ()
    forever: bool = False
    message_group: str = "g0"
    pulled: bool = False

    def get_answer(self, delivery: int, api: str) -> str:
        """The answer to delivery `delivery` (0 = first)."""
        if delivery < len(self.script):
            return self.script[delivery]
        if api == "simple":
            return "NOTHING" if self.forever else "ACK"
        return "FAILURE" if self.forever else "SUCCESS"


@frozen
class PopFault:
    """A fault (POP_FAULT_KINDS) right after delivery `delivery` (0 = first) of `key` reached the consumer (its
    answer may be on its way): the consumer is killed or stopped with that message in flight and started again, or
    the proxy with its broker is restarted or killed under it; or, for `duration_ms` (LASTING_KINDS), the broker is
    read-only or the name server does not answer."""

    kind: str
    key: str = "m0"
    delivery: int = 0
    duration_ms: int = 0


@frozen
class PopWorkload:
    """Messages and their scripts for one consumer API; the group's retry settings (`retry_max_times`, so maxAttempts
    = retry_max_times + 1; `policy` None: the default customized one, else the group's retryPolicy JSON); `fifo`: a
    FIFO topic and an orderly group; `invisible_ms`: a SimpleConsumer's receive or the remoting consumer's
    popInvisibleTime; `change_ms`: CHANGE's duration; `max_reconsume_times`: the remoting consumer's (-1: its 16)."""

    messages: tuple[PopMessage, ...]
    api: str = "simple"
    fifo: bool = False
    retry_max_times: int = 1
    policy: dict | None = None
    invisible_ms: int = 2000
    change_ms: int = 1000
    max_reconsume_times: int = -1
    faults: tuple[PopFault, ...] = ()
    spec_by_key: dict = field(init=False, eq=False, repr=False)

    def __attrs_post_init__(self) -> None:
        object.__setattr__(self, "spec_by_key", {m.key: m for m in self.messages})
        if any(m.pulled for m in self.messages) and (self.api != "pop" or self.fifo or self.faults):
            raise ValueError(f"a pulled message needs api 'pop', not FIFO, no faults (api={self.api!r}, "
                             f"fifo={self.fifo}, faults={len(self.faults)})")

    def get_answer(self, key: str, delivery: int) -> str:
        spec = self.spec_by_key.get(key)
        return spec.get_answer(delivery, self.api) if spec else ("ACK" if self.api == "simple" else "SUCCESS")

    def is_final(self, answer: str) -> bool:
        """The answer ends the message's story: an ack in time, a success; a slow success only where the proxy keeps
        renewing the message meanwhile (a gRPC push consumer). After a late ack, or the remoting POP consumer's slow
        success, the message comes back."""
        return answer in ("ACK", "SUCCESS", "CONSUME_SUCCESS") or (answer == "SLOW" and self.api == "push")

    def get_late_ms(self) -> int:
        """How long a LATE_ACK or SLOW answer takes."""
        return self.invisible_ms + LATE_BY_MS

    def get_pulled_keys(self) -> frozenset[str]:
        """The messages for a pulling consumer of the group (beside the popping one)."""
        return frozenset(m.key for m in self.messages if m.pulled)

    def get_route(self, message: PopMessage) -> tuple[int, str]:
        """(queue, tag) a message is sent to: queue 0 with "TagA"; beside a pulling consumer, its own queue and tag."""
        if not self.get_pulled_keys():
            return 0, "TagA"
        return (0, PULL_TAG) if message.pulled else (1, POP_TAG)

    def get_poison_keys(self) -> frozenset[str]:
        return frozenset(m.key for m in self.messages if m.forever)

    def get_fault(self, key: str, delivery: int) -> PopFault | None:
        return next((f for f in self.faults if f.key == key and f.delivery == delivery), None)

    def make_outcome(self, answer: str) -> dict:
        """The protocol outcome (ADAPTER.md v2) of one answer: the remoting consumer's statuses are 4.x ones."""
        late = self.get_late_ms()
        if answer == "CHANGE":
            return {"status": "CHANGE_INVISIBLE", "invisibleMs": self.change_ms}
        if answer == "LATE_ACK":
            return {"status": "ACK", "slowMs": late}
        if self.api == "pop" and self.fifo:  # an orderly listener's statuses
            status = {"SLOW": "SUCCESS", "FAILURE": "SUSPEND_CURRENT_QUEUE_A_MOMENT"}
            outcome = {"status": status.get(answer, answer)}
        elif self.api == "pop":
            status = {"SUCCESS": "CONSUME_SUCCESS", "SLOW": "CONSUME_SUCCESS", "FAILURE": "RECONSUME_LATER"}
            outcome = {"status": status.get(answer, answer)}
        else:
            outcome = {"status": "SUCCESS" if answer == "SLOW" else answer}
        return {**outcome, "slowMs": late} if answer == "SLOW" else outcome

    def make_script(self):
        """The driver's outcome script: (message record, deliveries of it before this one) -> outcome."""

        def script(message: dict, seen: int) -> dict:
            key = message["properties"].get("UNIQ_KEY", message["msgId"])
            return self.make_outcome(self.get_answer(key, seen))

        return script
