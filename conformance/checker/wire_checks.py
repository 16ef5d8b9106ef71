"""Rules read straight off one run's wire requests and deliveries, beside the Ledger and the differential check
(conformance/checker/verdicts.py): each check answers (status, detail), or None when the run did not exercise its rule.
"""

from __future__ import annotations

from collections import defaultdict

from conformance.checker.observe import PULL_COMMIT_OFFSET_FLAG, SUCCESS_STATUSES
from conformance.codec.codes import PULL_MESSAGE
from conformance.history.records import Run

# DefaultMQPushConsumer's pullBatchSize, and DefaultMQPushConsumerImpl.BROKER_SUSPEND_MAX_TIME_MILLIS (4.9.8).
DEFAULT_PULL_BATCH_SIZE = 32
BROKER_SUSPEND_MAX_TIME_MILLIS = 15_000


def get_pulls(run: Run) -> list:
    return run.get_requests(PULL_MESSAGE)


def get_pull_defaults_verdict(run: Run) -> tuple[str, str] | None:
    """[CFG-01] With the client's defaults, a pull asks for 32 messages and lets the broker hold it 15 s."""
    pulls = get_pulls(run)
    if not pulls:
        return None
    asked = sorted({(r.fields.get("maxMsgNums"), r.fields.get("suspendTimeoutMillis")) for r in pulls}, key=str)
    expected = [(str(DEFAULT_PULL_BATCH_SIZE), str(BROKER_SUSPEND_MAX_TIME_MILLIS))]
    if asked != expected:
        return "deviates", f"(maxMsgNums, suspendTimeoutMillis) sent: {asked}; 4.9.8's defaults: {expected}"
    return "conforms", f"{len(pulls)} pulls of maxMsgNums 32 held up to 15000 ms"


def get_retry_pull_verdict(run: Run) -> tuple[str, str] | None:
    """[PL-09] A CLUSTERING consumer also pulls its group's %RETRY% topic; a BROADCASTING one never does."""
    pulls = get_pulls(run)
    if not pulls:
        return None
    retry_topic = f"%RETRY%{run.settings.group}"
    pulled = any(r.fields.get("topic") == retry_topic for r in pulls)
    if pulled == (run.workload.model == "clustering"):
        return "conforms", f"{run.workload.model}: {retry_topic} {'pulled' if pulled else 'never pulled'}"
    return "deviates", f"{run.workload.model}: {retry_topic} {'pulled' if pulled else 'never pulled'}"


def get_pull_commit_verdict(run: Run) -> tuple[str, str] | None:
    """[PL-07] Only a CLUSTERING pull carries a commit offset, and only a positive one."""
    flagged = [r for r in get_pulls(run) if int(r.fields.get("sysFlag", 0)) & PULL_COMMIT_OFFSET_FLAG]
    if not flagged:
        return None
    if run.workload.model != "clustering":
        return "deviates", f"{len(flagged)} BROADCASTING pulls carry a commit offset"
    wrong = sorted({r.fields.get("commitOffset") for r in flagged if int(r.fields.get("commitOffset", 0)) <= 0})
    if wrong:
        return "deviates", f"pulls flagged to commit offsets {wrong}"
    return "conforms", f"{len(flagged)} pulls piggyback a positive commit offset"


def get_queue_of(delivery) -> tuple[bool, int]:
    """The queue a delivery came from: a copy served from %RETRY% (it carries RETRY_TOPIC) is another queue."""
    return "RETRY_TOPIC" in delivery.message["properties"], delivery.message["queueId"]


def get_overtaking(run: Run) -> list[str]:
    """Deliveries of a queue's offset o while an earlier offset of that queue, not yet finished, was delivered
    again afterwards (so it was still pending: not given up)."""
    found = []
    deliveries = list(run.deliveries)
    for index, delivery in enumerate(deliveries):
        queue, offset = get_queue_of(delivery), delivery.message["queueOffset"]
        finished = {d.message["queueOffset"] for d in deliveries[:index]
                    if get_queue_of(d) == queue and d.status in SUCCESS_STATUSES}
        later = {d.message["queueOffset"] for d in deliveries[index + 1:] if get_queue_of(d) == queue}
        pending = sorted(o for o in later if o < offset and o not in finished)
        if pending:
            found.append(f"{delivery.uniq_key} (queue {queue[1]}, offset {offset}) before offsets {pending}")
    return found


def get_order_verdict(run: Run) -> tuple[str, str] | None:
    """[OR-13] Orderly: within a queue no message reaches the listener before an unfinished earlier one."""
    if run.workload.mode != "orderly" or not run.deliveries:
        return None
    overtaking = get_overtaking(run)
    if overtaking:
        return "deviates", "; ".join(overtaking[:5])
    queues = defaultdict(int)
    for delivery in run.deliveries:
        queues[get_queue_of(delivery)] += 1
    return "conforms", f"{len(run.deliveries)} deliveries over {len(queues)} queues in offset order"


WIRE_CHECKS = {"CFG-01": get_pull_defaults_verdict, "PL-09": get_retry_pull_verdict,
               "PL-07": get_pull_commit_verdict, "OR-13": get_order_verdict}
