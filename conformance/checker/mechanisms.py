"""What a history shows about one message, read only from what the run recorded: the wire, the listener, the faults,
the final read of the broker. Each function is a mechanism a verdict or a declared deviation's cause can name.

A message's fate is one of FATES: consumed (its listener's last answer was a success and that copy was not sent back
after it), dead-lettered (a copy in %DLQ%), indefinite (not yet either, but the broker still holds a copy the group
can consume: the run ended before the client could have come back to it — Jepsen's :info), or lost (none of these:
nothing is left anywhere that could still deliver it). An indefinite retry whose latest time by the client's timers
had passed when the run ended (history/timers.py) is also late: SY-06's, checks.get_late_retries.
"""

from __future__ import annotations

from collections import defaultdict

from attrs import frozen

from conformance.codec.codes import CONSUMER_SEND_MSG_BACK, ResponseCode
from conformance.codec.headers import SEND_FIELDS
from conformance.history.records import SUCCESS, Run
from conformance.history.workload import SEND_BACK_FAULTS, Fault

FATES = ("consumed", "dlq", "indefinite", "lost")
# The topic field of SEND_MESSAGE and SEND_MESSAGE_V2 (whose header fields are single letters: b is the topic).
SEND_TOPIC_FIELDS = SEND_FIELDS["topic"]
FAILURES = frozenset({"RECONSUME_LATER", "EXCEPTION", "NULL", "SUSPEND_CURRENT_QUEUE_A_MOMENT", "ROLLBACK"})


@frozen
class ObservedFate:
    key: str
    reconsume_times: tuple[int, ...]
    fate: str


def get_deliveries(run: Run, key: str) -> list:
    return [d for d in run.deliveries if d.uniq_key == key]


def get_offsets_of(run: Run, key: str) -> set[int]:
    """The commit-log offsets of every copy of `key` the listener was shown."""
    return {d.message["commitLogOffset"] for d in get_deliveries(run, key)}


def get_send_backs(run: Run, key: str) -> list:
    """The CONSUMER_SEND_MSG_BACK requests naming a copy of `key` the listener was shown."""
    offsets = get_offsets_of(run, key)
    return [r for r in run.get_requests(CONSUMER_SEND_MSG_BACK) if int(r.fields.get("offset", -1)) in offsets]


def has_failed_send_back(run: Run, key: str) -> bool:
    """[CC-06] A send-back of `key` was answered with an error or never answered (a fault injected by the harness,
    or the broker's own refusal, e.g. NO_PERMISSION while read-only)."""
    return any(r.response_code != SUCCESS for r in get_send_backs(run, key))


def has_refused_send_back(run: Run, key: str) -> bool:
    """[CC-07] A send-back of `key` was refused for want of permission (NO_PERMISSION: the broker is not
    writeable, so a fallback send would fail too)."""
    return any(r.response_code == ResponseCode.NO_PERMISSION for r in get_send_backs(run, key))


def get_hit_faults(run: Run) -> list[Fault]:
    """The send-back faults that hit a failure, as the run recorded them (Run.faults: the backend injected the fault
    into the send-back that followed delivery `delivery` of message `key`, target "<key>#<delivery>") and that
    delivery failed at the listener: a send-back of a copy the listener accepted (a batch sent back whole, CC-02)
    carries the fault but no failure the client owes a retry."""
    failed = {(d.uniq_key, d.seen_before) for d in run.deliveries if not run.workload.is_success(d.status)}
    hit = []
    for event in run.faults:
        key, _, delivery = event.target.rpartition("#")
        if event.kind in SEND_BACK_FAULTS and key and delivery.isdigit() and (key, int(delivery)) in failed:
            hit.append(Fault(event.kind, key, int(delivery)))
    return hit


def get_retry_sends(run: Run, key: str) -> list:
    """The client's own sends of `key` to a %RETRY% topic (the fallback after a failed send-back, an orderly
    give-up), as seen on the wire, whatever their answer."""
    found = []
    for request in run.requests:
        field = SEND_TOPIC_FIELDS.get(request.code)
        if field and request.fields.get(field, "").startswith("%RETRY%") and key in str(request.fields):
            found.append(request)
    return found


def has_fallback(run: Run, key: str) -> bool:
    """The client tried to send `key` to %RETRY% itself (CC-06's fallback), whatever the broker answered."""
    return bool(get_retry_sends(run, key))


def is_raised(status: str) -> bool:
    return status in ("EXCEPTION", "NULL")


def has_swallowed_failure(run: Run, key: str) -> bool:
    """The listener failed `key` (raised, returned null or RECONSUME_LATER) and the client neither sent that copy
    back nor delivered it again: it read the failure as a success."""
    seen = get_deliveries(run, key)
    sent = {int(r.fields.get("offset", -1)) for r in run.get_requests(CONSUMER_SEND_MSG_BACK)}
    for index, delivery in enumerate(seen):
        later = seen[index + 1:]
        if delivery.status in FAILURES and not run.workload.is_success(delivery.status) \
                and delivery.message["commitLogOffset"] not in sent and not later:
            return True
    return False


def is_orderly_raised_and_moved_on(run: Run, key: str) -> bool:
    """[OR-04] Orderly: the listener's last answer to `key` was an exception and the message never came again."""
    seen = get_deliveries(run, key)
    return run.workload.mode == "orderly" and bool(seen) and seen[-1].status == "EXCEPTION"


def get_dead_keys(run: Run) -> set[str]:
    """Keys with a copy in %DLQ%: in the broker's final read, or stored by a send-back during the run."""
    dead = {copy.key for copy in run.stored if copy.topic.startswith("%DLQ%")}
    return dead | ({key for key, _times in run.final.dead} if run.final is not None else set())


def is_consumed(run: Run, key: str, sends: list[tuple[int, float]]) -> bool:
    """The last delivery of `key` succeeded and no send-back of that copy followed it."""
    seen = get_deliveries(run, key)
    last = seen[-1] if seen else None
    return last is not None and run.workload.is_success(last.status) and not any(
        offset == last.message["commitLogOffset"] and at >= last.time_ms for offset, at in sends)


def get_observed_fates(run: Run) -> dict[str, ObservedFate]:
    """Per produced key: reconsumeTimes of its deliveries in order, and its fate (FATES)."""
    sends = [(int(r.fields.get("offset", -1)), r.time_ms) for r in run.get_requests(CONSUMER_SEND_MSG_BACK)]
    dead = get_dead_keys(run)
    pending = run.final.get_pending_keys() if run.final is not None else set()
    by_key = defaultdict(list)
    for delivery in run.deliveries:
        by_key[delivery.uniq_key].append(delivery.reconsume_times)
    fates = {}
    for spec in run.workload.messages:
        fate = "dlq" if spec.key in dead else "consumed" if is_consumed(run, spec.key, sends) \
            else "indefinite" if spec.key in pending else "lost"
        fates[spec.key] = ObservedFate(spec.key, tuple(by_key.get(spec.key, ())), fate)
    return fates


def get_deliveries_by_offset(deliveries) -> dict[int, list]:
    """The deliveries of each commit-log offset, in the order given (a send-back names its message by that offset)."""
    by_offset = defaultdict(list)
    for delivery in deliveries:
        by_offset[delivery.message["commitLogOffset"]].append(delivery)
    return by_offset


def get_sent_back_delivery(deliveries, time_ms: float):
    """[CC-07] The failed delivery a send-back at `time_ms` answers, among the deliveries of its commit-log offset:
    the last one before it. A 4.9.8 client that retried a message locally (its send-back and fallback both failed)
    sends back the same offset again, so one offset has several deliveries; None when none came before."""
    before = [d for d in deliveries if d.time_ms <= time_ms]
    return before[-1] if before else None


def get_wire_send_back_faults(run: Run) -> tuple[Fault, ...]:
    """[CC-06] [CC-07] Each send-back of a failed delivery that the wire shows failed with no injected fault naming
    it — the broker's own refusal (NO_PERMISSION while a scheduled fault has it read-only), or no answer (killed) —
    as the request fault whose effect it had on the 4.9.8 client: its fallback sent and refused too,
    broker_not_writeable; no answer, send_back_timeout; otherwise send_back_error. The prediction runs with them
    (predict_run), so it knows what the history shows the broker did."""
    failed = get_deliveries_by_offset(d for d in run.deliveries if not run.workload.is_success(d.status))
    found: dict[tuple[str, int], Fault] = {}
    for request in run.get_requests(CONSUMER_SEND_MSG_BACK):
        delivery = get_sent_back_delivery(failed.get(int(request.fields.get("offset", -1)), ()), request.time_ms)
        if request.response_code == SUCCESS or delivery is None \
                or run.workload.get_send_back_fault(delivery.uniq_key, delivery.seen_before) is not None:
            continue
        fallbacks = [r for r in get_retry_sends(run, delivery.uniq_key) if r.time_ms >= request.time_ms]
        if request.response_code is None:
            kind = "send_back_timeout"
        elif fallbacks and all(r.response_code != SUCCESS for r in fallbacks):
            kind = "broker_not_writeable"
        else:
            kind = "send_back_error"
        key = (delivery.uniq_key, delivery.seen_before)
        found.setdefault(key, Fault(kind, *key))
    return tuple(found.values())
