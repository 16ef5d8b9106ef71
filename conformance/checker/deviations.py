"""Expected deviations of real clients from the model's client half, declared once, like properties/expected.py.

Each entry names the rule, the client (name, version), what the client does instead, the client source that
explains it, and `when`: the runs in which the deviation must show (a predicate of the run), or None where it may
show but need not (it depends on the client's threads, e.g. how a pull batches). conformance/checker/verdicts.py fails a
run when a rule deviates without a declaration here, and when a declared deviation whose `when` holds did not
happen: so the suite is green for today's client and turns red when its behaviour changes either way.
"""

from __future__ import annotations

from conformance.checker.causes import (
    EXCEPTION_SWALLOWED,
    FAILURE_IN_FLIGHT_AT_STOP,
    NULL_SWALLOWED,
    ORDERLY_EXCEPTION_MOVED_ON,
    RAISING_BATCH,
    RETRY_COPY_SWALLOWED,
    SEND_BACK_DROPPED,
    Cause,
    has_dropped_local_retry,
    has_fallback_after_failed_send_back,
    has_flat_orderly_retry,
    has_quick_orderly_retry,
    has_refused_send_back_without_local_retry,
    has_twoway_offset_update,
    is_batch_casualty,
    is_dead_lettered_at_group_max,
    lacks_consume_start_time,
    lacks_max_in_header,
)
from conformance.checker.causes import has_delivered_fallback_copy as is_fallback_copy_delivered
from conformance.checker.declaration import Deviation
from conformance.checker.deviations_go import GO_COUNTEREXAMPLES, GO_DECLARED, GO_NOT_APPLICABLE
from conformance.checker.lifecycle import get_suspend_gaps
from conformance.checker.mechanisms import get_hit_faults
from conformance.codec.codes import CONSUMER_SEND_MSG_BACK, UPDATE_CONSUMER_OFFSET
from conformance.history.workload import SEND_BACK_FAULT_KINDS
from model.values.config import get_max_reconsume_times

CPP = ("rocketmq-client-cpp", "1.2.3")
SOURCE = "https://github.com/apache/rocketmq-client-cpp/blob/1.2.3/"
ALI_ONS = ("ali-ons", "3.12.0")
ONS_SOURCE = "https://github.com/ali-sdk/ali-ons/blob/v3.12.0/"
ONS_CONSUMER = ONS_SOURCE + "lib/consumer/mq_push_consumer.js"


def has_hit_send_back_fault(run, kinds: tuple[str, ...]) -> bool:
    """A send-back fault of one of `kinds` hit a delivery that happened and failed, and no restart followed (a
    restarted client may deliver again what it had dropped)."""
    return run.workload.restart_after is None and any(fault.kind in kinds for fault in get_hit_faults(run))


def is_single_plain_poison(run) -> bool:
    """One message, CLUSTERING concurrently (BROADCASTING drops a failure, CC-09: nothing is dead-lettered), no fault
    (injected or scheduled), no restart, no exception, failing more than the group allows, under a group
    retryMaxTimes other than 16: the run where SY-05's deviation is certain (no batch, no binding effect)."""
    workload = run.workload
    if not is_concurrently(run) or workload.model != "clustering" or len(workload.messages) != 1 \
            or workload.faults or workload.schedule or workload.restart_after:
        return False
    spec = workload.messages[0]
    failures = len(spec.script) if all(s == "RECONSUME_LATER" for s in spec.script) else 0
    if spec.forever and failures == len(spec.script):
        failures = run.settings.retry_max_times + 1  # a poison message fails every delivery
    return run.settings.retry_max_times != 16 and failures > run.settings.retry_max_times


def has_local_retry(run) -> bool:
    """Orderly, no restart, and some message delivered again (a local retry happened: OR-07 must show in it)."""
    if run.workload.mode != "orderly" or run.workload.restart_after is not None:
        return False
    return any(d.seen_before > 0 for d in run.deliveries)


def has_orderly_suspend(run) -> bool:
    """Orderly, no restart, and a failure answer followed by a local retry of its queue (the suspend interval
    shows: CFG-04 is judged)."""
    config = run.settings.get_config(run.workload.mode, run.workload.model)
    return bool(get_suspend_gaps(run, get_max_reconsume_times(config)))


def is_concurrently(run) -> bool:
    return run.workload.mode == "concurrently"


def is_plain_clustering(run) -> bool:
    """CLUSTERING, concurrently, no restart, no fault (injected or scheduled): every delivery the listener got is
    judged as is. Under a fault a deviation whose `when` needs a plain run may show (its causes still bound what it
    covers) but need not: a restart or a kill may deliver the copy again before its loss could show."""
    workload = run.workload
    return is_concurrently(run) and workload.model == "clustering" and not workload.restart_after \
        and not workload.faults and not workload.schedule


def has_failed_retry_copy(run) -> bool:
    """A copy pulled from %RETRY% (RETRY_TOPIC set) was answered RECONSUME_LATER in a plain CLUSTERING run:
    ali-ons reads that as a success (a null answer is CC-04's, on any copy)."""
    return is_plain_clustering(run) and any(
        d.status == "RECONSUME_LATER" and "RETRY_TOPIC" in d.message["properties"] for d in run.deliveries)


def has_null_answer(run) -> bool:
    return is_plain_clustering(run) and any(d.status == "NULL" for d in run.deliveries)


def has_delivered_fallback_copy(run) -> bool:
    """CLUSTERING, concurrently, no restart, no send-back left unanswered, and a copy the client's own fallback send
    stored (it carries MAX_RECONSUME_TIMES, which a broker's send-back copy does not) reached the listener.

    After an unanswered send-back ali-ons drops its connection, so the copy waits for the reconnect and the next pull
    (3 s), which can fall after the copy's due time: then the early delivery SY-06 names cannot show."""
    workload = run.workload
    timed_out = any(fault.kind == "send_back_timeout" for fault in get_hit_faults(run))
    return is_concurrently(run) and workload.model == "clustering" and not workload.restart_after \
        and not timed_out and any("MAX_RECONSUME_TIMES" in d.message["properties"] for d in run.deliveries)


def is_lost_to_ali_ons(run) -> bool:
    return has_failed_retry_copy(run) or has_null_answer(run)


FALLBACK_AFTER_FAILED_SEND_BACK = Cause("a fallback send after a failed send-back", has_fallback_after_failed_send_back)
LOCAL_RETRY_DROPPED = Cause("a failed send-back retried locally, dropped past maxReconsumeTimes",
                            has_dropped_local_retry)

DECLARED: tuple[Deviation, ...] = (
    Deviation("SB-09", CPP,
              "CONSUMER_SEND_MSG_BACK carries only group, offset and delayLevel: no maxReconsumeTimes (nor "
              "originMsgId, originTopic), so the broker's retryMaxTimes decides instead of the client's 16",
              SOURCE + "src/protocol/CommandHeader.cpp#L445-L459",
              when=lambda run: bool(run.get_requests(CONSUMER_SEND_MSG_BACK)),
              causes=(Cause("the header names no maxReconsumeTimes", lacks_max_in_header),)),
    Deviation("CC-04", CPP,
              "binding 0.4.4: a listener exception escapes the ctypes callback (subscribe's wrapper re-raises in "
              "`finally`), ctypes leaves the C return value unset, and the library reads any value but 0 as "
              "RECONSUME_LATER: usually a failure, sometimes CONSUME_SUCCESS, so the message is silently consumed "
              "(probed: [m0 success, m1 EXCEPTION] in one batch, m1 never sent back)",
              SOURCE + "src/extern/CPushConsumer.cpp#L44-L49", when=None,
              causes=(EXCEPTION_SWALLOWED, RAISING_BATCH),
              frequency="20 of 20 runs with an EXCEPTION after an accepted message in one pulled batch; 0 of 20 "
                        "with a lone EXCEPTION (benchmarks/bench_declarations.py, NOTES.md)"),
    Deviation("OR-04", CPP,
              "binding 0.4.4, orderly: the same unset ctypes return value as CC-04 reads a listener exception as "
              "CONSUME_SUCCESS, so the queue moves on instead of suspending",
              SOURCE + "src/extern/CPushConsumer.cpp#L69-L75", when=None,
              causes=(ORDERLY_EXCEPTION_MOVED_ON,),
              frequency="20 of 20 runs of the counterexample (one message raising twice); not every orderly run "
                        "that raises: a poison message raising between suspends came again (conformance-cpp, "
                        "2026-11-27) (benchmarks/bench_declarations.py, NOTES.md)"),
    Deviation("SY-05", CPP,
              "a message goes to the DLQ after 1 + the group's retryMaxTimes deliveries, not 1 + 16 (follows "
              "from SB-09): the model with maxReconsumeTimes = retryMaxTimes predicts it exactly",
              SOURCE + "src/MQClientAPIImpl.cpp#L826-L854",
              when=lambda run: is_single_plain_poison(run),
              causes=(Cause("dead-lettered at the group's retryMaxTimes", is_dead_lettered_at_group_max),)),
    Deviation("CC-06", CPP,
              "a send-back that fails (error response, timeout) is logged and ignored: no fallback send to "
              "%RETRY%, no local retry; the offset moves past the message. And a failure still in flight when the "
              "client stops is never sent back while the offset persisted on the way out moves past it",
              SOURCE + "src/consumer/DefaultMQPushConsumer.cpp#L247-L254",
              when=lambda run: is_concurrently(run) and has_hit_send_back_fault(
                  run, SEND_BACK_FAULT_KINDS),
              causes=(SEND_BACK_DROPPED, FAILURE_IN_FLIGHT_AT_STOP, RAISING_BATCH)),
    Deviation("SY-10", CPP,
              "a message whose send-back failed is lost: neither consumed nor dead-lettered (follows from CC-06)",
              SOURCE + "src/consumer/ConsumeMessageConcurrentlyService.cpp#L109-L132",
              when=lambda run: is_concurrently(run) and has_hit_send_back_fault(
                  run, SEND_BACK_FAULT_KINDS),
              causes=(SEND_BACK_DROPPED, EXCEPTION_SWALLOWED, ORDERLY_EXCEPTION_MOVED_ON,
                      FAILURE_IN_FLIGHT_AT_STOP, RAISING_BATCH)),
    Deviation("CC-07", CPP,
              "with the broker not writeable the message is not kept for a local retry 5 s later",
              SOURCE + "src/consumer/ConsumeMessageConcurrentlyService.cpp#L124-L132",
              when=lambda run: is_concurrently(run) and has_hit_send_back_fault(run, ("broker_not_writeable")),
              causes=(Cause("a refused send-back not retried locally", has_refused_send_back_without_local_retry),)),
    Deviation("CC-02", CPP,
              "a pulled batch is one listener call and the C API stops at the first failing message: the whole "
              "batch is sent back (BROADCASTING: dropped), including messages the callback accepted and ones it "
              "never saw (probed: m0 always failing, m1 and m2 in its batch were dead-lettered without one delivery; "
              "BROADCASTING [m0 failing, m1] lost m1 unseen)",
              SOURCE + "src/extern/CPushConsumer.cpp#L39-L51", when=None,
              causes=(Cause("a pulled batch shares its first failure", is_batch_casualty), RAISING_BATCH),
              frequency="20 of 20 runs of [m0 failing once, m1, m2] (one pulled batch); 0 of 20 of the declared "
                        "counterexample and of the mixed workload (benchmarks/bench_declarations.py, NOTES.md)"),
    Deviation("CC-05", CPP,
              "the listener's message has no CONSUME_START_TIME property",
              SOURCE + "src/consumer/ConsumeMessageConcurrentlyService.cpp#L81-L86",
              when=lambda run: is_concurrently(run) and bool(run.deliveries),
              causes=(Cause("no CONSUME_START_TIME", lacks_consume_start_time),)),
    Deviation("RB-05", CPP,
              "UPDATE_CONSUMER_OFFSET is meant one-way but markOnewayRPC runs after Encode(): the one-way flag "
              "never reaches the wire",
              SOURCE + "src/MQClientAPIImpl.cpp#L815-L823",
              when=lambda run: bool(run.get_requests(UPDATE_CONSUMER_OFFSET)),
              causes=(Cause("UPDATE_CONSUMER_OFFSET without the one-way flag", has_twoway_offset_update),)),
    Deviation("OR-07", CPP,
              "orderly RECONSUME_LATER retries locally after 100 ms with reconsumeTimes unchanged (no + 1, no "
              "maxReconsumeTimes, no give-up send to the DLQ)",
              SOURCE + "src/consumer/ConsumeMessageOrderlyService.cpp#L164-L178",
              when=lambda run: has_local_retry(run),
              causes=(Cause("orderly retry with reconsumeTimes unchanged", has_flat_orderly_retry),
                      FAILURE_IN_FLIGHT_AT_STOP)),
    Deviation("CFG-04", CPP,
              "an orderly RECONSUME_LATER resubmits the queue after a fixed 100 ms (tryLockLaterAndReconsume), not "
              "after suspendCurrentQueueTimeMillis (1000 ms): 1.2.3 has no suspend setting",
              SOURCE + "src/consumer/ConsumeMessageOrderlyService.cpp#L156-L198",
              when=has_orderly_suspend,
              causes=(Cause("orderly retry after 100 ms", has_quick_orderly_retry),)),
    Deviation("CC-04", ALI_ONS,
              "a listener result other than Consumer.ACTION_RETRY is a success: a listener returning null is "
              "consumed, not sent back (a throw is retried, as CC-04 asks)",
              ONS_CONSUMER + "#L288-L292", when=has_null_answer,
              causes=(NULL_SWALLOWED,)),
    Deviation("CC-06", ALI_ONS,
              "a copy pulled from %RETRY% reaches the listener through the retry subscription's wrapper, which "
              "drops the listener's result: RECONSUME_LATER (ACTION_RETRY) on a retry is a success, the copy is "
              "neither sent back nor retried; and the fallback send after a failed send-back carries delay level 0 "
              "and MAX_RECONSUME_TIMES = maxReconsumeTimes + 1 (RECONSUME_TIME = r + 1 as in 4.9.8), so a copy "
              "4.9.8 would dead-letter is delivered once more",
              ONS_CONSUMER + "#L131-L147", when=has_failed_retry_copy,
              causes=(RETRY_COPY_SWALLOWED, FALLBACK_AFTER_FAILED_SEND_BACK)),
    Deviation("SY-06", ALI_ONS,
              "the fallback send after a failed send-back sets delay level 0: the copy is delivered at once, not "
              "after level 3 + reconsumeTimes",
              ONS_CONSUMER + "#L785-L800",
              when=has_delivered_fallback_copy,
              causes=(Cause("a fallback copy delivered at once (delay level 0)", is_fallback_copy_delivered),)),
    Deviation("CC-07", ALI_ONS,
              "after both the send-back and the fallback send failed the message is retried locally 5 s later with "
              "reconsumeTimes + 1 (as 4.9.8), but a copy whose reconsumeTimes exceeds maxReconsumeTimes is dropped "
              "client-side instead of going to the DLQ",
              ONS_CONSUMER + "#L279-L314", when=None,
              causes=(LOCAL_RETRY_DROPPED,),
              frequency="20 of 20 runs of the declared counterexample, m0's send-back and fallback refused twice "
                        "under maxReconsumeTimes 1 (benchmarks/bench_declarations.py, NOTES.md)"),
    Deviation("SY-10", ALI_ONS,
              "a message is lost (neither consumed nor dead-lettered) when a retry copy is answered "
              "RECONSUME_LATER or null, a first delivery null (CC-04, CC-06), or a local retry passes "
              "maxReconsumeTimes (CC-07)",
              ONS_CONSUMER + "#L279-L292", when=is_lost_to_ali_ons,
              causes=(NULL_SWALLOWED, RETRY_COPY_SWALLOWED, LOCAL_RETRY_DROPPED)),
    Deviation("CC-05", ALI_ONS,
              "the listener's message has no CONSUME_START_TIME property",
              ONS_CONSUMER + "#L277-L292",
              when=lambda run: is_concurrently(run) and bool(run.deliveries),
              causes=(Cause("no CONSUME_START_TIME", lacks_consume_start_time),)),
    Deviation("RB-05", ALI_ONS,
              "UPDATE_CONSUMER_OFFSET goes through invokeOneway, which never marks the command one-way: the flag "
              "never reaches the wire (the request is not answered-for, but the broker answers it)",
              ONS_SOURCE + "lib/channel.js#L121-L133",
              when=lambda run: bool(run.get_requests(UPDATE_CONSUMER_OFFSET)),
              causes=(Cause("UPDATE_CONSUMER_OFFSET without the one-way flag", has_twoway_offset_update),)),
    *GO_DECLARED,
)

# The smallest workload seen showing each deviation (from a full-suite run's verdict records, or pinned): Python
# source of (workload, the client's maxReconsumeTimes), what spec/13-clients.md shows; "" where no run has shown it.
_POISON = 'Workload((MessageSpec("m0", "TagA", 0, ("RECONSUME_LATER",) * 4),)), -1'
_FALLBACK = 'Workload((MessageSpec("m0", "TagA", 0, ("EXCEPTION",) * 2),), (Fault("send_back_error", "m0", 0),)), 1'
_NOT_WRITEABLE = ('Workload((MessageSpec("m0", "TagA", 0, ("EXCEPTION",) * 2),), '
                  '(Fault("broker_not_writeable", "m0", 0),)), -1')
_PLAIN = 'Workload((MessageSpec("m0", "TagA"),)), -1'
_NULL = 'Workload((MessageSpec("m0", "TagA", 0, ("NULL",)),)), -1'
COUNTEREXAMPLES: dict[tuple[str, tuple[str, str]], str] = {
    ("SB-09", CPP): _POISON,
    ("SY-05", CPP): _POISON,
    ("CC-04", CPP): "",
    ("OR-04", CPP): 'Workload((MessageSpec("m0", "TagA", 0, ("EXCEPTION",) * 2),), mode="orderly"), -1',
    ("CC-06", CPP): _FALLBACK,
    ("SY-10", CPP): _FALLBACK,
    ("CC-07", CPP): _NOT_WRITEABLE,
    ("CC-02", CPP): 'Workload((MessageSpec("m0", "TagA", 0, ("RECONSUME_LATER",)), MessageSpec("m1", "TagA"), '
                    'MessageSpec("m2", "TagA"))), -1',
    ("CC-05", CPP): _PLAIN,
    ("RB-05", CPP): _PLAIN,
    ("OR-07", CPP): 'Workload((MessageSpec("m0", "TagA", 0, ("SUSPEND_CURRENT_QUEUE_A_MOMENT",) * 2),), '
                    'mode="orderly"), -1',
    ("CFG-04", CPP): 'Workload((MessageSpec("m0", "TagA", 0, ("SUSPEND_CURRENT_QUEUE_A_MOMENT",) * 2),), '
                     'mode="orderly"), -1',
    ("CC-04", ALI_ONS): _NULL,
    ("CC-06", ALI_ONS): 'Workload((MessageSpec("m0", "TagA", 0, ("RECONSUME_LATER",) * 2),)), -1',
    ("SY-06", ALI_ONS): _FALLBACK,
    ("CC-07", ALI_ONS): 'Workload((MessageSpec("m0", "TagA", 0, ("EXCEPTION",) * 4),), '
                        '(Fault("broker_not_writeable", "m0", 0), Fault("broker_not_writeable", "m0", 1))), 1',
    ("SY-10", ALI_ONS): _NULL,
    ("CC-05", ALI_ONS): _PLAIN,
    ("RB-05", ALI_ONS): _PLAIN,
    **GO_COUNTEREXAMPLES,
}

ORDERLY_ABSENT = "ali-ons has no orderly consumer (one consume service: an async listener per message)"
NO_TIMEOUT = "ali-ons has no consumeTimeout and no cleanExpiredMsg"

# Rules of the client half that this client cannot exercise: (rule, client) -> why.
NOT_APPLICABLE: dict[tuple[str, tuple[str, str]], str] = {
    ("CT-01", CPP): "no consumeTimeout and no cleanExpiredMsg in 1.2.3",
    ("CT-02", CPP): "no consumeTimeout and no cleanExpiredMsg in 1.2.3",
    ("CT-03", CPP): "no consumeTimeout and no cleanExpiredMsg in 1.2.3",
    ("CT-04", CPP): "no consumeTimeout and no cleanExpiredMsg in 1.2.3",
    ("CC-03", CPP): "the C API has no ackIndex: a listener call succeeds or fails as a whole",
    ("OR-05", CPP): "the C API has no autoCommit, COMMIT or ROLLBACK",
    ("OR-06", CPP): "the C API has no autoCommit, COMMIT or ROLLBACK",
    ("CFG-02", CPP): "1.2.3 has no maxReconsumeTimes setting at all",
    ("RS-14", CPP): "1.2.3 sends no fallback to %RETRY% at all (CC-06's deviation), so no producer retry of one",
    **{(rule, ALI_ONS): ORDERLY_ABSENT for rule in ("OR-04", "OR-05", "OR-06", "OR-07", "OR-13")},
    **{(f"CT-0{n}", ALI_ONS): NO_TIMEOUT for n in range(1, 5)},
    ("CC-03", ALI_ONS): "a listener call is one message: there is no ackIndex",
    **GO_NOT_APPLICABLE,
}


def get_causes(rule: str, client: tuple[str, str], run, key: str, declared=DECLARED) -> list[str]:
    """The names of the causes of `rule`'s deviation by `client` in `declared` (the 4.x clients' by default) that
    explain `key` ("" the run) in `run`; empty when none does."""
    return [cause.name for deviation in declared if deviation.rule == rule and deviation.client == client
            for cause in deviation.causes if cause.holds(run, key)]


def get_declared(rule: str, client: tuple[str, str]) -> Deviation | None:
    for deviation in DECLARED:
        if deviation.rule == rule and deviation.client == client:
            return deviation
    return None
