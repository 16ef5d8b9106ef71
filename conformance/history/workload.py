"""Workloads for a real client under the harness, drawn by Hypothesis: messages, a listener outcome script per
message and delivery, faults the broker injects into single requests, a client restart, and a schedule of faults
of whole processes (broker, name server, client) at moments relative to what happened in the run.

A workload is a plain value: the harness runs it against a real client (conformance/runner/clients/) and the model
predicts what RocketMQ 4.9.8's client does with the same one (conformance/checker/verdicts.py). Real time costs, so the
sizes are small and bounded here, in one place (MAX_MESSAGES, MAX_SCRIPT).
"""

from __future__ import annotations

from attrs import field, frozen

MAX_MESSAGES = 3
MAX_SCRIPT = 4
TAGS = ("TagA", "TagB", None)

# Listener outcomes by consume mode. A delivery past the end of its script succeeds, unless the message is a poison
# one (MessageSpec.forever): then every delivery past its script fails with the mode's FOREVER_STATUSES answer.
CONCURRENTLY_STATUSES = ("CONSUME_SUCCESS", "RECONSUME_LATER", "EXCEPTION")
ORDERLY_STATUSES = ("SUCCESS", "SUSPEND_CURRENT_QUEUE_A_MOMENT", "EXCEPTION")
# Every answer a Java listener can give (DefaultMQPushConsumer's API): NULL returns null; COMMIT and ROLLBACK are
# the orderly answers of a listener that turned autoCommit off (with autoCommit on they count as SUCCESS).
ALL_CONCURRENTLY_STATUSES = (*CONCURRENTLY_STATUSES, "NULL")
ALL_ORDERLY_STATUSES = (*ORDERLY_STATUSES, "NULL", "COMMIT", "ROLLBACK")
SUCCESS_STATUSES = frozenset({"CONSUME_SUCCESS", "SUCCESS", "COMMIT"})
FOREVER_STATUSES = {"concurrently": "RECONSUME_LATER", "orderly": "SUSPEND_CURRENT_QUEUE_A_MOMENT"}

# Faults the model-backed broker injects. A send-back fault hits the CONSUMER_SEND_MSG_BACK that follows delivery
# `delivery` of message `key` (the broker knows the message by the header's commit-log offset), so the model and the
# client meet it at the same point whatever their threads do; a pull fault hits the `delivery`-th PULL_MESSAGE.
# "broker_not_writeable" refuses the client's own sends of the message to %RETRY% too (the fallback and its producer
# retries); "fallback_first_refused" refuses only the first of them, so the producer's retry is stored (RS-14).
SEND_BACK_FAULTS = {"send_back_error": "SYSTEM_ERROR", "send_back_timeout": "no response",
                    "broker_not_writeable": "NO_PERMISSION",
                    "fallback_first_refused": "SYSTEM_ERROR, then NO_PERMISSION to the fallback's first attempt"}
SEND_BACK_FAULT_KINDS = tuple(SEND_BACK_FAULTS)
FAULT_KINDS = (*SEND_BACK_FAULTS, "pull_error")


# Faults of a whole process, fired once at their trigger and ended after their duration (conformance/runner/
# schedule.py): the broker read-only (then writeable again), the broker killed with SIGKILL (then restarted on its
# store), the name server stopped (then started), the client stopped cleanly or its adapter process killed with
# SIGKILL (then started again).
SCHEDULED_FAULT_KINDS = ("broker_read_only", "broker_kill", "namesrv_stop", "client_restart", "client_kill")
# The scheduled faults after which a client may legitimately deliver again a copy it had consumed (its offset was
# not yet committed, or the broker lost the commit): at-least-once, so duplicates are allowed.
REDELIVERING_FAULT_KINDS = frozenset({"client_restart", "client_kill", "broker_kill"})


@frozen
class AfterDelivery:
    """Trigger: right after delivery `delivery` (0 = first) of message `key` reached the listener."""

    key: str = "m0"
    delivery: int = 0


@frozen
class BeforeCommit:
    """Trigger: between delivery `delivery` of `key` and the next offset commit the client sends that covers it
    (UPDATE_CONSUMER_OFFSET, or a pull with the commit-offset flag, of its queue and past its offset): right after
    that delivery if no such commit came yet; the fault's event records whether one had."""

    key: str = "m0"
    delivery: int = 0


@frozen
class AfterMs:
    """Trigger: `ms` milliseconds after the run started (before the messages were produced)."""

    ms: int = 0


@frozen
class ScheduledFault:
    """One fault of a whole process (SCHEDULED_FAULT_KINDS), fired once at `trigger`, ended `duration_ms` after it
    took effect."""

    kind: str
    trigger: AfterDelivery | BeforeCommit | AfterMs = AfterDelivery()
    duration_ms: int = 1000


@frozen
class MessageSpec:
    """One produced message: its key (UNIQ_KEY), tags, delay level, and the listener's answer per delivery;
    `forever`: a poison message, whose listener fails every delivery past its script too."""

    key: str
    tags: str | None = None
    delay_level: int = 0
    script: tuple[str, ...] = ()
    forever: bool = False

    def get_status(self, delivery: int, mode: str = "concurrently") -> str:
        """The answer to this message's delivery number `delivery` (0 = first); past its script, success, or the
        mode's failure (FOREVER_STATUSES) for a poison message."""
        if delivery < len(self.script):
            return self.script[delivery]
        return FOREVER_STATUSES[mode] if self.forever else "CONSUME_SUCCESS"


@frozen
class Fault:
    kind: str
    key: str = "m0"
    delivery: int = 0

    @property
    def is_send_back(self) -> bool:
        return self.kind in SEND_BACK_FAULTS


@frozen
class Workload:
    messages: tuple[MessageSpec, ...]
    faults: tuple[Fault, ...] = ()
    mode: str = "concurrently"
    model: str = "clustering"
    # Restart the client after this many deliveries (None: never).
    restart_after: int | None = None
    # Orderly: the listener leaves ConsumeOrderlyContext.autoCommit as it is (True) or turns it off in every call.
    auto_commit: bool = True
    # Faults of whole processes at moments relative to what happened (conformance/runner/schedule.py).
    schedule: tuple[ScheduledFault, ...] = ()
    spec_by_key: dict = field(init=False, eq=False, repr=False)

    def __attrs_post_init__(self) -> None:
        object.__setattr__(self, "spec_by_key", {m.key: m for m in self.messages})

    def is_success(self, status: str) -> bool:
        """Whether the client takes this answer as consumed: with autoCommit an orderly ROLLBACK (and COMMIT) is
        read as SUCCESS ("we think you want to ack these message", ConsumeMessageOrderlyService 4.9.8 L282-L289)."""
        return status in SUCCESS_STATUSES or (self.mode == "orderly" and self.auto_commit and status == "ROLLBACK")

    def get_status(self, key: str, delivery: int) -> str:
        """The answer to `key`'s delivery number `delivery`; past its script, the mode's success."""
        spec = self.spec_by_key.get(key)
        status = "CONSUME_SUCCESS" if spec is None else spec.get_status(delivery, self.mode)
        return "SUCCESS" if status == "CONSUME_SUCCESS" and self.mode == "orderly" else status

    def get_forever_keys(self) -> frozenset[str]:
        """The poison messages: those whose listener fails every delivery (MessageSpec.forever)."""
        return frozenset(m.key for m in self.messages if m.forever)

    def make_script(self):
        """The outcome script a client driver calls: (message record, deliveries before this one) -> status, or
        the outcome's fields (status and context settings) where the workload sets a context field."""

        def script(message: dict, seen: int) -> str | dict:
            status = self.get_status(message["properties"].get("UNIQ_KEY", ""), seen)
            return status if self.auto_commit else {"status": status, "autoCommit": False}

        return script

    def get_send_back_fault(self, key: str, delivery: int) -> Fault | None:
        """The fault the broker injects into the send-back after `key`'s delivery `delivery`, if any."""
        for fault in self.faults:
            if fault.is_send_back and fault.key == key and fault.delivery == delivery:
                return fault
        return None
