"""Declared deviations of apache/rocketmq-client-go v2.1.2 (the tag conformance/runner/clients/go/PINNED.json pins)
from the client half of the rules, in deviations.py's form (which adds them to DECLARED): what it does instead, its
source at the built tag, the causes (conformance/checker/causes_go.py) that explain each message it covers, and
`when` it must show. spec/13-clients.md reads them.

The adapter's mapping of the harness's statuses (conformance/runner/clients/go/src/rmqspec-go-adapter/main.go): a
Go listener has no exception and no null, so EXCEPTION panics inside the listener and NULL returns an error beside
the zero ConsumeResult (ConsumeSuccess).
"""

from __future__ import annotations

from conformance.checker.causes import Cause, has_twoway_offset_update
from conformance.checker.causes_go import (
    AUTOCOMMIT_VERDICT_UNCOMMITTED,
    BROADCAST_FAILURE_HELD,
    ERROR_ANSWER_READ_AS_DONE,
    ERROR_RESULT_SWALLOWED,
    LATE_ORDERLY_GIVE_UP,
    LOCAL_RETRY_AFTER_TIMEOUT,
    LONG_PULL_SUSPEND,
    NO_UNREGISTER,
    ORDERLY_GIVE_UP_SEND_BACK,
    ORDERLY_NULL_SUCCESS,
    PANIC_STUCK,
    QUICK_ORDERLY_RETRY,
    get_client_max,
)
from conformance.checker.declaration import Deviation
from conformance.checker.lifecycle import get_suspend_gaps
from conformance.checker.mechanisms import get_hit_faults
from conformance.codec.codes import CONSUMER_SEND_MSG_BACK, PULL_MESSAGE, UPDATE_CONSUMER_OFFSET

GO = ("rocketmq-client-go", "2.1.2")
GO_SOURCE = "https://github.com/apache/rocketmq-client-go/blob/v2.1.2/"
PUSH = GO_SOURCE + "consumer/push_consumer.go"


def is_plain_concurrently(run) -> bool:
    """CLUSTERING concurrently, no restart and no scheduled fault: every delivery the listener got is judged as is."""
    workload = run.workload
    return workload.mode == "concurrently" and workload.model == "clustering" and not workload.restart_after \
        and not workload.schedule


def has_plain_answer(run, status: str) -> bool:
    """A plain CLUSTERING concurrently run (no fault either) whose listener answered `status` once."""
    return is_plain_concurrently(run) and not run.workload.faults and any(d.status == status for d in run.deliveries)


def has_panic(run) -> bool:
    """A listener panicked: its message holds its queue's offset, so what follows it in the queue may stay
    indefinite (the broker still holds it) instead of lost."""
    return any(d.status == "EXCEPTION" for d in run.deliveries)


def has_hit_error_answer(run) -> bool:
    """A plain concurrently run where a send-back of a failed delivery was answered with an error code (an injected
    SYSTEM_ERROR, or NO_PERMISSION of the broker made not writeable)."""
    return is_plain_concurrently(run) and any(
        f.kind in ("send_back_error", "broker_not_writeable") for f in get_hit_faults(run))


def has_orderly_suspend(run) -> bool:
    """Orderly, no restart, and a failure answer followed by a local retry of its queue (CFG-04 is judged)."""
    return run.workload.restart_after is None and bool(get_suspend_gaps(run, get_client_max(run)))


def has_orderly_give_up(run) -> bool:
    return run.workload.mode == "orderly" and bool(run.get_requests(CONSUMER_SEND_MSG_BACK))


GO_DECLARED: tuple[Deviation, ...] = (
    Deviation("CFG-01", GO,
              "a pull lets the broker hold it 20 s (_BrokerSuspendMaxTime), not 4.9.8's 15 s",
              GO_SOURCE + "consumer/consumer.go#L53-L53",
              when=lambda run: bool(run.get_requests(PULL_MESSAGE)), causes=(LONG_PULL_SUSPEND,)),
    Deviation("RB-05", GO,
              "UPDATE_CONSUMER_OFFSET goes through InvokeOneWay, which writes the command as built: the one-way flag "
              "never reaches the wire (the client waits for no answer, but the broker answers it)",
              GO_SOURCE + "internal/remote/remote_client.go#L143-L149",
              when=lambda run: bool(run.get_requests(UPDATE_CONSUMER_OFFSET)),
              causes=(Cause("UPDATE_CONSUMER_OFFSET without the one-way flag", has_twoway_offset_update),)),
    Deviation("RB-07", GO,
              "Shutdown persists every queue's offset but never sends UNREGISTER_CLIENT: UnregisterConsumer only "
              "deletes the group from the client's own map, so the broker keeps the consumer until its channel "
              "closes",
              PUSH + "#L273-L287", when=lambda run: run.ended_ms > 0, causes=(NO_UNREGISTER,)),
    Deviation("CC-04", GO,
              "a listener that panics is recovered by the consume goroutine, which drops the call: the message "
              "stays in the process queue, is neither sent back nor consumed again, and holds the queue's offset "
              "until the client restarts; a listener that returns an error beside the zero ConsumeResult "
              "(ConsumeSuccess) is read as a success: the error is only logged",
              PUSH + "#L1106-L1166",
              when=lambda run: has_plain_answer(run, "EXCEPTION") or has_plain_answer(run, "NULL"),
              causes=(PANIC_STUCK, ERROR_RESULT_SWALLOWED)),
    Deviation("CC-06", GO,
              "sendMessageBack fails only on a transport error: a send-back answered with an error code "
              "(SYSTEM_ERROR, NO_PERMISSION) is read as done and the offset moves past the message; one that goes "
              "unanswered (3 s) is retried locally 5 s later with reconsumeTimes + 1 and no fallback send to "
              "%RETRY%, and its next send-back names the original copy again, so the broker counts from that copy's "
              "stored reconsumeTimes",
              PUSH + "#L915-L927", when=has_hit_error_answer,
              causes=(ERROR_ANSWER_READ_AS_DONE, LOCAL_RETRY_AFTER_TIMEOUT)),
    Deviation("CC-07", GO,
              "with the broker not writeable the send-back's NO_PERMISSION answer is read as done: the message is "
              "not kept for a local retry",
              PUSH + "#L1182-L1205",
              when=lambda run: is_plain_concurrently(run) and any(
                  f.kind == "broker_not_writeable" for f in get_hit_faults(run)),
              causes=(ERROR_ANSWER_READ_AS_DONE,)),
    Deviation("SY-10", GO,
              "a message is lost (neither consumed nor dead-lettered) when the listener returns an error with the "
              "zero ConsumeResult (CC-04, OR-07) or its send-back is answered with an error code (CC-06)",
              PUSH + "#L1182-L1199",
              when=lambda run: not has_panic(run) and (has_plain_answer(run, "NULL") or has_hit_error_answer(run)),
              causes=(ERROR_RESULT_SWALLOWED, ERROR_ANSWER_READ_AS_DONE, ORDERLY_NULL_SUCCESS)),
    Deviation("CFG-04", GO,
              "an orderly SUSPEND_CURRENT_QUEUE_A_MOMENT consumes the queue again at once: the client sleeps the "
              "context's SuspendCurrentQueueTimeMillis, -1 unless the listener sets it, never the consumer's "
              "suspendCurrentQueueTimeMillis (1000 ms)",
              PUSH + "#L1327-L1331", when=has_orderly_suspend, causes=(QUICK_ORDERLY_RETRY,)),
    Deviation("OR-07", GO,
              "an orderly message is given up only when its reconsumeTimes exceeds maxReconsumeTimes (> where 4.9.8 "
              "has >=): one local retry more; and an orderly listener's error with the zero ConsumeResult is "
              "ConsumeSuccess: the queue moves on",
              PUSH + "#L1368-L1387", when=None,
              causes=(LATE_ORDERLY_GIVE_UP, ORDERLY_NULL_SUCCESS),
              frequency="20 of 20 runs of the declared counterexample (benchmarks/bench_declarations.py, NOTES.md); "
                        "in drawn runs wherever an orderly message fails past a bounded maxReconsumeTimes or is "
                        "answered NULL last"),
    Deviation("CC-09", GO,
              "BROADCASTING: a failed message is logged as dropped but never removed from the process queue, so the "
              "offset the client persists (to its local file) never passes it: once its offset table holds the "
              "queue (a success of the queue removed, L1196-L1199, or an empty pull's correctTagsOffset, L887-L889 "
              "and L909-L912), the next instance after a restart consumes it, and every later message of its queue, "
              "again; a queue the table never held starts at its end, and the failure is dropped as 4.9.8 drops it",
              PUSH + "#L1169-L1199", when=None, causes=(BROADCAST_FAILURE_HELD,),
              frequency="20 of 20 runs of the declared counterexample (benchmarks/bench_declarations.py, NOTES.md); "
                        "drawn on both backends"),
    Deviation("SY-08", GO,
              "BROADCASTING: a failed message comes again after a restart (follows from CC-09)",
              PUSH + "#L1169-L1199", when=None, causes=(BROADCAST_FAILURE_HELD,),
              frequency="with CC-09's: 20 of 20 runs of the declared counterexample (benchmarks/"
                        "bench_declarations.py, NOTES.md)"),
    Deviation("OR-13", GO,
              "under autoCommit an orderly COMMIT or ROLLBACK is logged as illegal and commits nothing (Go's switch "
              "does not fall through into the success case as 4.9.8's does) while the queue goes on to the next "
              "messages: its offset stays at that message until a later ConsumeSuccess commits, so a restart before "
              "one consumes it again after messages that followed it",
              PUSH + "#L1318-L1325", when=None, causes=(AUTOCOMMIT_VERDICT_UNCOMMITTED,),
              frequency="20 of 20 runs of the declared counterexample (benchmarks/bench_declarations.py, NOTES.md); "
                        "drawn once in the first conformance-go run (the same workload on both backends)"),
    Deviation("SB-09", GO,
              "the orderly give-up is a CONSUMER_SEND_MSG_BACK with delayLevel -1 to the message's store host (the "
              "broker dead-letters it at once), where 4.9.8 sends the message to %RETRY% with RECONSUME_TIME and "
              "MAX_RECONSUME_TIMES",
              PUSH + "#L1368-L1380", when=has_orderly_give_up, causes=(ORDERLY_GIVE_UP_SEND_BACK,)),
)

_PLAIN = 'Workload((MessageSpec("m0", "TagA"),)), -1'
_ERROR = 'Workload((MessageSpec("m0", "TagA", 0, ("RECONSUME_LATER",) * 2),), (Fault("send_back_error", "m0", 0),)), 1'
_ORDERLY_MAX = ('Workload((MessageSpec("m0", "TagA", 0, ("SUSPEND_CURRENT_QUEUE_A_MOMENT",) * 4),), mode="orderly"), '
                '1')
# m0 succeeds in the queue m2 fails in, a second before m2 (delay level 1) comes: the offset table holds that queue
# when the restart persists it, whatever the queue's first pull answered.
_BROADCAST_HELD = ('Workload((MessageSpec("m0", "TagA"), MessageSpec("m1", "TagB"), MessageSpec("m2", "TagA", 1, '
                   '("RECONSUME_LATER",))), model="broadcasting", restart_after=3), -1')
GO_COUNTEREXAMPLES: dict[tuple[str, tuple[str, str]], str] = {
    ("CFG-01", GO): _PLAIN,
    ("RB-05", GO): _PLAIN,
    ("RB-07", GO): _PLAIN,
    ("CC-04", GO): 'Workload((MessageSpec("m0", "TagA", 0, ("NULL",)),)), -1',
    ("CC-06", GO): _ERROR,
    ("CC-07", GO): 'Workload((MessageSpec("m0", "TagA", 0, ("RECONSUME_LATER",) * 2),), '
                   '(Fault("broker_not_writeable", "m0", 0),)), -1',
    ("SY-10", GO): _ERROR,
    ("CFG-04", GO): _ORDERLY_MAX,
    ("OR-07", GO): _ORDERLY_MAX,
    ("SB-09", GO): _ORDERLY_MAX,
    ("OR-13", GO): 'Workload((MessageSpec("m0", "TagA", 0, ("ROLLBACK",)), MessageSpec("m1", "TagA"), '
                   'MessageSpec("m2", "TagA", 0, ("ROLLBACK",))), mode="orderly", restart_after=3), -1',
    ("CC-09", GO): _BROADCAST_HELD,
    ("SY-08", GO): _BROADCAST_HELD,
}

ORDERLY_PANIC = ("a panicking orderly listener kills the client's process: the orderly consume loop runs under "
                 "primitive.WithRecover, which recovers only where the application set primitive.PanicHandler (nil "
                 "by default), so there is no suspend to judge (conformance/suite/test_go_full.py shows the crash)")
GO_NOT_APPLICABLE: dict[tuple[str, tuple[str, str]], str] = {
    ("OR-04", GO): ORDERLY_PANIC,
    ("CC-03", GO): "ConsumeConcurrentlyContext.AckIndex is never read: a listener call succeeds or fails as a whole",
}
