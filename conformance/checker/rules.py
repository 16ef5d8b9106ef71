"""Which spec rules a client is judged on, and how: every rule of the client half has a status for every client —
conforms or deviates (from a check of conformance/checker/verdicts.py or conformance/checker/wire_checks.py), not
applicable (the client lacks the feature: conformance/checker/deviations.py), or not judged, with the reason below.

The broker half (SB but SB-09, ST, DT, the direct-send rules RS-01..RS-07, RS-12, RS-13, OS-05, PL-04, LK-01, LK-02)
is not a client's to conform to: the model's broker half answers it, and differential/ checks it against RocketMQ's
broker. So are 5.x's broker and proxy (PO, IV, FF, PD, RP: chapters 14-17), which differential/ checks against
RocketMQ 5.3.3; the 5.x consumers' rules (PC, PG, and RP-03's and FF-02's client side) are judged for the 5.x clients
(conformance/checker/pop_verdicts.py), not for the 4.x clients, which pull.
Rules about the model itself (CFG-03, CFG-05, CFG-06, SY-01, SY-07, SY-12) describe no client either.
"""

from __future__ import annotations

# PC-05: the broker's QUERY_ASSIGNMENT, which a remoting POP consumer's every run rests on.
BROKER_HALF = frozenset({"OS-05", "PL-04", "LK-01", "LK-02", "RS-01", "RS-02", "RS-03", "RS-04", "RS-05", "RS-06",
                         "RS-07", "RS-12", "RS-13", "PC-05"})
BROKER_PREFIXES = ("SB-", "ST-", "DT-", "PO-", "IV-", "FF-", "PD-", "RP-")
# The client's side of a broker chapter: SB-09 is decided by the maxReconsumeTimes the client sends.
CLIENT_SIDE = frozenset({"SB-09"})
MODEL_ONLY = frozenset({"CFG-03", "CFG-05", "CFG-06", "SY-01", "SY-07", "SY-12"})

# Rule -> what judges it in every run that exercises it.
JUDGED: dict[str, str] = {
    "SB-09": "the send-back header's fields: maxReconsumeTimes above all",
    "CFG-01": "wire: a pull's maxMsgNums and suspendTimeoutMillis with the client's defaults",
    "CFG-02": "the send-back header's maxReconsumeTimes (SB-09's check) with the client's default",
    "PL-07": "wire: which pulls carry a commit offset",
    "PL-09": "wire: whether %RETRY%<group> is pulled",
    "CC-02": "send-backs of accepted or unseen copies; fates against the model",
    "CC-04": "a raising listener's copy is sent back",
    "CC-05": "the listener's topic and CONSUME_START_TIME",
    "CC-06": "fates against the model under send-back faults",
    "CC-07": "fates against the model with the broker not writeable",
    "RS-14": "fates against the model when the fallback's first attempt is refused and its producer retry stored "
             "(conforms when they match; a difference is filed under CC-06)",
    "CC-09": "BROADCASTING: no send-back, no second delivery",
    "SY-08": "BROADCASTING: no send-back, no second delivery (CC-09's check)",
    "RB-05": "wire: UPDATE_CONSUMER_OFFSET's one-way flag",
    "RB-07": "wire: at the run's end the last UPDATE_CONSUMER_OFFSET of each consumed queue, with the consumed "
             "offset, precedes the first UNREGISTER_CLIENT",
    "CFG-04": "an orderly failure answer to the next delivery of its queue: the suspend interval, 1000 ms "
              "(lifecycle.SUSPEND_EARLY_MS early, SUSPEND_LATE_MS late)",
    "OR-15": "an orderly poison message under the default maxReconsumeTimes: retried until the run ends, never "
             "given up nor dead-lettered (the final read included)",
    "SY-04": "properties' Ledger over the offsets sent",
    "SY-05": "properties' Ledger; fates against the model",
    "SY-06": "properties' Ledger; retries no later than due + LATE_BOUND_MS, or the client's recovery bound "
             "after a fault (history/timers.py)",
    "SY-09": "properties' Ledger: retries keep the message's identity",
    "SY-10": "properties' Ledger at quiescence",
    "OR-04": "fates against the model: a raising orderly listener suspends",
    "OR-07": "orderly local retries count reconsumeTimes; fates against the model",
    "OR-05": "fates against the model when an orderly listener answers COMMIT or ROLLBACK with autoCommit on",
    "OR-06": "fates against the model when an orderly listener turns autoCommit off",
    "OR-13": "deliveries of each queue in offset order",
}

INTERNAL = "client-internal state; the wire shows only its effects, judged under CC-02, CC-08's SY-04 and SY-10"
LONG = "needs a run longer than the harness's seconds"
ONE_CONSUMER = "one consumer per run, restarted cleanly: no second member, no crash"
NOT_DRAWN = "the workloads draw no such situation yet"

# Rule -> why no run judges it (a limit of the harness, said once).
POP_CLIENTS = ("a 5.x POP consumer's rule: judged for the 5.x clients (conformance/checker/pop_verdicts.py), not "
               "for a 4.x push consumer, which pulls")

NOT_JUDGED: dict[str, str] = {
    **{f"PC-{n:02}": POP_CLIENTS for n in range(1, 5)},
    **{f"PG-{n:02}": POP_CLIENTS for n in range(1, 5)},
    **{f"PQ-{n:02}": INTERNAL for n in range(1, 14)},
    **{rule: INTERNAL for rule in ("OS-01", "OS-02", "OS-03", "OS-04", "OS-06", "OS-07", "OS-08")},
    "PL-01": "the server records when a pull arrives, not when its held answer leaves",
    "PL-02": "flow-control thresholds (1000 messages, 100 MiB) exceed a workload's few messages",
    "PL-03": "flow-control thresholds (a span of 2000) exceed a workload's few messages",
    "PL-05": "workloads subscribe with *, so no tag is re-checked",
    "PL-06": "workloads subscribe with *, so no pull ends on filtered messages",
    "PL-08": "the model-backed broker never answers OFFSET_ILLEGAL to a workload",
    "PL-10": "a 5.2.0+ client's OFFSET_ILLEGAL repair; the broker never answers OFFSET_ILLEGAL to a workload",
    "PL-11": "the model-backed broker never refuses a pull",
    "CC-01": "the service follows the consume mode the adapter registers; nothing on the wire distinguishes it",
    "CC-03": NOT_DRAWN + " (ackIndex)",
    "CC-08": INTERNAL,
    "CT-01": "consumeTimeout is at least a minute; " + LONG,
    "CT-02": "consumeTimeout is at least a minute; " + LONG,
    "CT-03": "consumeTimeout is at least a minute; " + LONG,
    "CT-04": "consumeTimeout is at least a minute; " + LONG,
    "RB-01": ONE_CONSUMER,
    "RB-02": ONE_CONSUMER,
    "RB-03": ONE_CONSUMER,
    "RB-04": "a restart resumes from the broker's offset, but a restart may redeliver what was not persisted; "
             "only the fate is compared (SY-10)",
    "RB-06": ONE_CONSUMER,
    "SY-02": ONE_CONSUMER,
    "SY-03": "judged in part by SY-04 and SY-10",
    "SY-11": ONE_CONSUMER,
    "SY-13": "exact fates need the listener's every answer and the broker's faults as properties' machines draw "
             "them; a run is judged by SY-05, SY-06, SY-09 and SY-10",
    "LK-03": "lockAll runs every 20 s; " + LONG,
    "LK-04": "the lock mark goes stale after 30 s; " + LONG,
    "LK-05": NOT_DRAWN + " (orderly BROADCASTING)",
    "LK-06": "the server does not record the lock answer's body",
    "LK-07": NOT_DRAWN + " (a failed lock request)",
    "LK-08": "a queue idles out after 120 s; " + LONG,
    "OR-01": "the server does not record the lock answer's body",
    "OR-02": "a request consumes up to 60 s before resubmitting; " + LONG,
    "OR-03": INTERNAL,
    "OR-08": "judged through the fates (OR-07) only",
    "OR-09": "the give-up send's broker half; judged through the fates (OR-07) only",
    "OR-10": INTERNAL,
    "OR-11": INTERNAL,
    "OR-12": ONE_CONSUMER,
    "OR-14": ONE_CONSUMER,
    "OR-16": INTERNAL,
    "OR-17": NOT_DRAWN + " (orderly BROADCASTING)",
    "RS-08": "the fallback send happens only when a send-back fails; judged through the fates (CC-06, CC-07)",
    "RS-09": "the fallback send happens only when a send-back fails; judged through the fates (CC-06, CC-07)",
    "RS-10": "judged through the fates (OR-07) only",
    "RS-11": "a producer's header; the harness's clients only consume",
}


def is_client_rule(rule: str) -> bool:
    if rule in CLIENT_SIDE:
        return True
    return not (rule.startswith(BROKER_PREFIXES) or rule in BROKER_HALF or rule in MODEL_ONLY)
