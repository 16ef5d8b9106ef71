"""The 5.x rules a consumer's run is judged on (chapters 17-19: PG, FF, PC; RP-03's client side), each a check over a
`PopRun` (conformance/history/pop_records.py) that answers (status, detail, keys) or None where the run did not
exercise the rule. What a 5.x client did is read from its listener or its SimpleConsumer calls (deliveries, the
answers of its acks and changes) and the final read of the retry topic and %DLQ%<group>; times are the harness's.

Timing bounds come from the broker's and proxy's own intervals: a message comes back no earlier than its invisible
time (PG-03, less ARRIVAL_SLACK_MS for the adapter's line to reach the harness) and, once due, within the revive lag
(REVIVE_LAG_MAX_MS, differential/pop_probe.py's derivation) plus the proxy's longest receive hold.
"""

from __future__ import annotations

from conformance.history.pop_records import PopRun
from conformance.history.pop_workload import LASTING_KINDS, RESTART_KINDS
from conformance.history.records import Delivery
from model.values.delay_levels import (
    DEFAULT_MESSAGE_DELAY_LEVEL,
    DEFAULT_RETRY_LEVEL_BASE,
    compute_delay_millis,
    parse_delay_level,
)

# The adapter writes a delivery line after the client got it: its time is late by the line's trip (ms), never early.
ARRIVAL_SLACK_MS = 300
# PopReviveService: no copy later than reviveTime + 9 s (differential/pop_probe.py REVIVE_LAG_MAX_MS), then the
# next receive: the proxy holds one up to grpcClientConsumerMaxLongPollingTimeoutMillis (20 s by default; the
# client suites lower it to 5 s, conformance/suite/pop_fixtures.py), and the pickup allowance of 2 s.
REVIVE_LAG_MAX_MS = 9000
PICKUP_MS = 2000
# ProxyConfig.defaultInvisibleTimeMills: the invisible time of a receive with auto-renew (a gRPC push consumer's).
PROXY_INVISIBLE_MS = 60_000
# After the proxy with its broker was restarted or killed, a client's first call failed while it was down: the remoting
# POP consumer pops again pullTimeDelayMillsWhenException (3 s) later (DefaultMQPushConsumerImpl.popMessage).
RECONNECT_MS = 3000
# The remoting POP consumer pops with pollTime BROKER_SUSPEND_MAX_TIME_MILLIS (DefaultMQPushConsumerImpl.popMessage):
# the broker holds it up to 15 s, and a revived copy in the retry topic does not end that hold.
REMOTING_POP_POLL_MS = 15_000
FAILURES = ("FAILURE", "EXCEPTION", "NOTHING", "RECONSUME_LATER")
# ConsumeMessagePopConcurrentlyService's table (DefaultMQPushConsumerImpl.popDelayLevel, PC-01), seconds.
POP_DELAY_S = (10, 30, 60, 120, 180, 240, 300, 360, 420, 480, 540, 600, 1200, 1800, 3600, 7200)
# The broker's delay levels: a pulling consumer's send-back waits level 3 + reconsumeTimes (SB-05, ST-03).
DELAY_LEVELS_MS = parse_delay_level(DEFAULT_MESSAGE_DELAY_LEVEL)


def get_keys(run: PopRun) -> list[str]:
    return [m.key for m in run.workload.messages]


def is_consumed_by(run: PopRun, delivery: Delivery) -> bool:
    """The delivery consumed the message: a SimpleConsumer's ack (late or not) that the proxy answered OK; a
    listener's final success (a remoting POP consumer's slow one is not: PC-03)."""
    answer = run.get_answer(delivery)
    if run.workload.api != "simple":
        return run.workload.is_final(answer)
    settled = run.get_settled(delivery)
    return answer in ("ACK", "LATE_ACK") and settled is not None and settled.action == "ack" and settled.code == "OK"


def get_due_ms(run: PopRun, delivery: Delivery) -> float:
    """When the message may come back after this delivery: its invisible time from the receive, or a change's
    duration from the change the proxy accepted; after the remoting POP consumer's failure, the delay it changes
    the invisible time to (PC-01, PC-02)."""
    settled = run.get_settled(delivery)
    if settled is not None and settled.action == "change" and settled.code == "OK":
        return settled.time_ms + settled.invisible_ms
    if run.workload.api == "pop" and run.get_answer(delivery) in FAILURES:
        if delivery.uniq_key in run.workload.get_pulled_keys():
            return delivery.time_ms + get_send_back_delay_ms(delivery)
        return delivery.time_ms + get_pop_delay_ms(run, delivery)
    return delivery.time_ms + run.workload.invisible_ms


def get_pop_delay_ms(run: PopRun, delivery: Delivery) -> int:
    """The remoting POP consumer's new invisible time after a failure: popDelayLevel[reconsumeTimes] below
    maxReconsumeTimes (PC-01); at it, the first delay longer than the message's age (PC-02)."""
    limit = run.workload.max_reconsume_times if run.workload.max_reconsume_times >= 0 else 16
    if delivery.reconsume_times < limit:
        return POP_DELAY_S[min(delivery.reconsume_times, len(POP_DELAY_S) - 1)] * 1000
    age_s = (delivery.time_ms - run.sent_ms) / 1000
    return next((d for d in POP_DELAY_S if d > age_s), POP_DELAY_S[-1]) * 1000


def get_send_back_delay_ms(delivery: Delivery) -> int:
    """A pulling consumer's failure: its send-back's delay level 3 + reconsumeTimes (chapter 02, PC-04)."""
    return compute_delay_millis(DELAY_LEVELS_MS, DEFAULT_RETRY_LEVEL_BASE + delivery.reconsume_times)


def get_hold_ms(run: PopRun) -> int:
    """The longest a redelivery may take once due: revive lag, the longest hold of a receive (the proxy's; the
    remoting POP consumer's own pop long polling), pickup."""
    hold = REMOTING_POP_POLL_MS if run.workload.api == "pop" else run.long_polling_ms
    return REVIVE_LAG_MAX_MS + hold + PICKUP_MS


def get_back_by_ms(run: PopRun, delivery: Delivery | None) -> float:
    """When a message not consumed by `delivery` (None: never delivered) must be back: its due time, or the end of a
    restart or kill of the proxy with its broker that outlasted it (nothing is revived nor popped while the broker is
    down; the client calls again RECONNECT_MS after it is back), whichever is later, plus the hold (get_hold_ms). A
    restart slowed by load may end long after the due time."""
    since = delivery.time_ms if delivery else run.sent_ms
    ready = [get_due_ms(run, delivery) if delivery else run.sent_ms]
    ready += [(f.end_ms or f.time_ms) + RECONNECT_MS for f in run.faults
              if f.kind in RESTART_KINDS and (f.end_ms or f.time_ms) >= since]
    return max(ready) + get_hold_ms(run)


def has_waiting_copy(run: PopRun, key: str) -> bool:
    """The final read found a revived copy of `key` in the retry topic that no delivery showed (a higher
    reconsumeTimes than any delivery's): the broker still holds the message for the group."""
    copies = [times for copy_key, times in (run.final.retry if run.final else ()) if copy_key == key]
    delivered = [d.reconsume_times for d in run.get_deliveries(key)]
    return bool(copies) and max(copies) > max(delivered, default=-1)


def check_at_least_once(run: PopRun):
    """[PG-01] Every message consumed or dead-lettered, or dropped by the broker's revive (its own log: RocketMQ
    5.3.3's local-mode restart, a counted loss); one neither, whose redelivery was due long enough before the run
    ended (get_back_by_ms: also after a restart of the broker) and of which the broker holds no undelivered copy, is
    lost; otherwise it is indefinite."""
    dead = set(run.final.get_dead_keys()) if run.final else set()
    dropped = set(run.final.dropped) & set(get_keys(run)) if run.final else set()
    lost, open_keys, cut = [], [], []
    for key in get_keys(run):
        seen = run.get_deliveries(key)
        if key in dead or key in dropped or (seen and is_consumed_by(run, seen[-1])):
            continue
        gone = run.ended_ms > get_back_by_ms(run, seen[-1] if seen else None) and not has_waiting_copy(run, key)
        if gone and seen and is_ack_cut_by_kill(run, seen[-1]):
            cut.append(key)  # the ack reached the proxy before the kill: no revive, no copy, as for an ack
            continue
        (lost if gone else open_keys).append(key)
    if lost:
        return "deviates", f"neither consumed nor dead-lettered, nor delivered again: {lost}", lost
    if open_keys:
        return "indefinite", f"still due, or a revived copy waiting, when the run ended: {open_keys}", open_keys
    if cut:
        return "conforms", f"every message consumed or dead-lettered ({cut}: acked as the consumer was killed)"
    if dropped:
        return "conforms", f"every message consumed or dead-lettered, but {sorted(dropped)}: the broker's revive " \
                           "dropped it as its store shut down under it at the restart (a counted loss)"
    return "conforms", "every message consumed or dead-lettered"


def is_ack_cut_by_kill(run: PopRun, delivery: Delivery) -> bool:
    """A SimpleConsumer's ack of this delivery may have left before a kill or restart of its consumer that came
    right after it (PopFault: "its answer may be on its way"), its answer never recorded: the history cannot tell
    an ack that reached the proxy from one that did not, only the broker's revive (or its absence) can."""
    if run.workload.api != "simple" or run.get_answer(delivery) != "ACK" or run.get_settled(delivery) is not None:
        return False
    return any(f.kind in ("client_kill", "client_restart") and f.target == delivery.uniq_key
               and f.time_ms >= delivery.time_ms for f in run.faults)


def check_dead_letter(run: PopRun):
    """[PG-02] A message that always fails is delivered with attempts 1..maxAttempts once each, then dead-lettered
    once (FIFO: at least maxAttempts deliveries); no message is dead-lettered before it failed maxAttempts times."""
    dead = run.final.get_dead_keys() if run.final else []
    poison = run.workload.get_poison_keys()
    wrong = []
    for key in sorted(poison | set(dead)):
        attempts = [get_attempt(d) for d in run.get_deliveries(key)]
        expected = list(range(1, run.settings.max_attempts + 1))
        if dead.count(key) > 1 or (key in dead and len(attempts) < run.settings.max_attempts):
            wrong.append(f"{key}: attempts {attempts}, {dead.count(key)} dead letters")
        elif key in poison and key in dead and not run.workload.fifo and sorted(attempts) != expected:
            wrong.append(f"{key}: attempts {attempts}, expected {expected}")
    if wrong:
        return "deviates", "; ".join(wrong), [w.split(":")[0] for w in wrong]
    missing = sorted(poison - set(dead))
    if missing:
        return "indefinite", f"not dead-lettered when the run ended: {missing}", missing
    if not poison and not dead:
        return None
    return "conforms", f"dead-lettered once after {run.settings.max_attempts} attempts"


def check_invisible_time(run: PopRun):
    """[PG-03] No message is delivered again before its invisible time (or a change's) ended."""
    early = []
    for key in get_keys(run):
        seen = run.get_deliveries(key)
        for index, after in enumerate(seen[1:], 1):
            sources = get_sources(seen, index)
            if not any(after.time_ms >= get_due_ms(run, source) - ARRIVAL_SLACK_MS
                       or has_fault_between(run, source, after) for source in sources):
                before = sources[-1]
                early.append(f"{key}: {after.time_ms - before.time_ms:.0f} ms after delivery {before.number}")
    if early:
        return "deviates", "; ".join(early), [e.split(":")[0] for e in early]
    redelivered = any(len(run.get_deliveries(k)) > 1 for k in get_keys(run))
    return ("conforms", "no redelivery before its invisible time ended") if redelivered else None


def get_attempt(delivery: Delivery) -> int:
    return delivery.message.get("deliveryAttempt", delivery.reconsume_times + 1)


def get_sources(seen: list[Delivery], index: int) -> list[Delivery]:
    """The earlier deliveries `seen[index]` may be the comeback of. A revive or a send-back counts one attempt more,
    so a new attempt comes from a delivery of the attempt before it; an attempt seen before is that delivery again (a
    re-pop after a crash, PO-10; a changed handle's copy, PD-06). Across a crash a message has two lineages: the
    re-popped original and the revive of the delivery before the crash can arrive together, and the revived copy is
    timed from the delivery it revives, not from the re-pop. Where attempts tell nothing, the delivery before it."""
    attempt = get_attempt(seen[index])
    earlier = seen[:index]
    return ([d for d in earlier if get_attempt(d) == attempt] or [d for d in earlier if get_attempt(d) == attempt - 1]
            or [earlier[-1]])


def has_fault_between(run: PopRun, before: Delivery, after: Delivery) -> bool:
    """A consumer or broker restarted, or killed, between the two deliveries (the restart's span meets the span
    between them: a message popped before a kill can reach the listener while the restart goes on): the timing rules
    do not bind that redelivery. A read-only broker or a mute name server leaves them binding (that is what they
    check there)."""
    return any(f.time_ms <= after.time_ms and before.time_ms <= (f.end_ms or f.time_ms)
               for f in run.faults if f.kind not in LASTING_KINDS)


def check_attempt_once(run: PopRun):
    """[PG-04] Non-FIFO, batch 1, no tag filter, no broker restart: each attempt of a message delivered at most
    once, and none after an ack the proxy answered OK."""
    if run.workload.fifo or any(f.kind in RESTART_KINDS for f in run.faults):
        return None
    twice = []
    for key in get_keys(run):
        seen = run.get_deliveries(key)
        attempts = [get_attempt(d) for d in seen]
        acked = [d for d in seen if run.workload.api == "simple" and is_consumed_by(run, d)]
        if len(set(attempts)) < len(attempts) or (acked and seen[-1] is not acked[0]):
            twice.append(f"{key}: attempts {attempts}")
    if twice:
        return "deviates", "; ".join(twice), [t.split(":")[0] for t in twice]
    return "conforms", "each attempt delivered once"


def check_fifo_order(run: PopRun):
    """[FF-02] FIFO group: within a message group no message is delivered before an earlier one is done (its last
    delivery came first)."""
    if not run.workload.fifo:
        return None
    overtaken = []
    messages = run.workload.messages
    for index, later in enumerate(messages):
        first = [d.time_ms for d in run.get_deliveries(later.key)]
        for earlier in messages[:index]:
            last = [d.time_ms for d in run.get_deliveries(earlier.key)]
            if earlier.message_group == later.message_group and first and last and max(last) > min(first):
                overtaken.append(f"{later.key} delivered before {earlier.key} was done")
    if overtaken:
        return "deviates", "; ".join(overtaken), [o.split(" ")[0] for o in overtaken]
    return "conforms", "each message group delivered in send order"


def get_reference_delay_ms(run: PopRun, attempt: int) -> int:
    """The nack delay apache/rocketmq-clients' Java client takes from the settings' backoff for a failed `attempt`
    (1-based): customized next[attempt - 1] (the last past the end); exponential min(max, initial x multiplier^
    (attempt - 1))."""
    settings = run.settings
    if settings.exponential is not None:
        initial, most, multiplier = settings.exponential
        return int(min(most, initial * multiplier ** (attempt - 1)))
    durations = settings.customized_ms or (1000,)
    return durations[min(attempt, len(durations)) - 1]


def check_backoff(run: PopRun):
    """[RP-03, the client's side] A push consumer's failed delivery comes back no earlier than the backoff its
    settings give for that attempt (the proxy sends the group policy; the client computes the nack delay)."""
    early, judged = [], 0
    for key in get_keys(run):
        seen = run.get_deliveries(key)
        for count, (before, after) in enumerate(zip(seen, seen[1:], strict=False), 1):
            if run.get_answer(before) not in FAILURES or has_fault_between(run, before, after):
                continue
            attempt = count if run.workload.fifo else before.message.get("deliveryAttempt", count)
            delay = get_reference_delay_ms(run, attempt)
            judged += 1
            if after.time_ms - before.time_ms < delay - ARRIVAL_SLACK_MS:
                early.append(f"{key}: back {after.time_ms - before.time_ms:.0f} ms after attempt {attempt}, "
                             f"backoff {delay} ms")
    if early:
        return "deviates", "; ".join(early), [e.split(":")[0] for e in early]
    return ("conforms", "each retry after its backoff") if judged else None


def check_pop_delay(run: PopRun):
    """[PC-01] The remoting POP consumer: a failure below maxReconsumeTimes comes back no earlier than
    popDelayLevel[reconsumeTimes] and within it plus the revive lag."""
    wrong, judged = [], []
    limit = run.workload.max_reconsume_times if run.workload.max_reconsume_times >= 0 else 16
    for key in sorted(set(get_keys(run)) - run.workload.get_pulled_keys()):
        seen = run.get_deliveries(key)
        for before, after in zip(seen, seen[1:], strict=False):
            times = before.reconsume_times
            if run.get_answer(before) not in FAILURES or times >= limit or has_fault_between(run, before, after):
                continue
            delay, gap = get_pop_delay_ms(run, before), after.time_ms - before.time_ms
            line = f"{key}: back {gap:.0f} ms after reconsumeTimes {times}, popDelayLevel {delay} ms"
            (judged if delay - ARRIVAL_SLACK_MS <= gap <= delay + get_hold_ms(run) else wrong).append(line)
    if wrong:
        return "deviates", "; ".join(wrong), [w.split(":")[0] for w in wrong]
    return ("conforms", "; ".join(judged)) if judged else None


def check_never_dead_letters(run: PopRun):
    """[PC-02] The remoting POP consumer never dead-letters, also past maxReconsumeTimes."""
    poison = run.workload.get_poison_keys()
    if not poison:
        return None
    dead = sorted(set(run.final.get_dead_keys()) if run.final else set())
    if dead:
        return "deviates", f"dead-lettered: {dead}", dead
    seen = {key: [d.reconsume_times for d in run.get_deliveries(key)] for key in sorted(poison)}
    return "conforms", f"no dead letter; delivered with reconsumeTimes {seen}"


def check_pop_timeout(run: PopRun):
    """[PC-03] A success that outlived popInvisibleTime sends nothing: the message is delivered again."""
    slow = [d for d in run.deliveries if run.get_answer(d) == "SLOW"]
    if not slow:
        return None
    missing = [d.uniq_key for d in slow if not any(d2.time_ms > d.time_ms for d2 in run.get_deliveries(d.uniq_key))]
    if missing:
        due = max(get_due_ms(run, d) for d in slow) + get_hold_ms(run)
        if run.ended_ms > due:
            return "deviates", f"a slow success was not delivered again: {missing}", missing
        return "indefinite", f"the run ended before a redelivery was due: {missing}", missing
    again = [next(d2 for d2 in run.get_deliveries(d.uniq_key) if d2.time_ms > d.time_ms) for d in slow]
    return "conforms", "; ".join(f"{d.uniq_key}: a success {run.workload.get_late_ms()} ms after its delivery, "
                                 f"delivered again {d2.time_ms - d.time_ms:.0f} ms after it with reconsumeTimes "
                                 f"{d2.reconsume_times}" for d, d2 in zip(slow, again, strict=True))


def check_send_back_beside_pop(run: PopRun):
    """[PC-04] One group, two roads: a pulling consumer's failed message comes back through 4.x send-back — a copy
    in %RETRY%<group> with reconsumeTimes + 1, delivered no earlier than its delay level 3 + reconsumeTimes — and
    none in the POP retry topic; a popping consumer's through revive — a copy in %RETRY%<group>_<topic>, none in
    %RETRY%<group>."""
    pulled = run.workload.get_pulled_keys()
    if not pulled or run.final is None:
        return None
    wrong, judged = [], []
    roads = {True: (run.final.sent_back, run.final.retry), False: (run.final.retry, run.final.sent_back)}
    for key in get_keys(run):
        road, other = roads[key in pulled]
        seen = run.get_deliveries(key)
        failed = [d for d in seen if run.get_answer(d) in FAILURES]
        copies = sorted(times for copy_key, times in road if copy_key == key)
        strays = [times for copy_key, times in other if copy_key == key]
        name = "%RETRY%<group>" if key in pulled else "%RETRY%<group>_<topic>"
        if strays or len(copies) < len(failed) or copies[:len(failed)] != [d.reconsume_times + 1 for d in failed]:
            wrong.append(f"{key}: {len(failed)} failures, copies {copies} in {name}, {strays} on the other road")
            continue
        early = [f"{b.time_ms:.0f}->{a.time_ms:.0f}" for b, a in zip(seen, seen[1:], strict=False)
                 if key in pulled and a.time_ms < get_due_ms(run, b) - ARRIVAL_SLACK_MS]
        if early:
            wrong.append(f"{key}: sent back and delivered again before its delay level: {early}")
        elif failed:
            gaps = [f"{a.time_ms - b.time_ms:.0f} ms" for b, a in zip(seen, seen[1:], strict=False)]
            judged.append(f"{key}: copies {copies} in {name}, back after {gaps}")
    if wrong:
        return "deviates", "; ".join(wrong), [w.split(":")[0] for w in wrong]
    return ("conforms", "; ".join(judged)) if judged else None


def check_held_renewed(run: PopRun):
    """[PD-07] A gRPC push consumer's listener that held a message past the proxy's invisible time for an
    auto-renewed receive (PROXY_INVISIBLE_MS): the client asked auto-renew, so the message came back no earlier than
    that 60 s after its delivery (a receive without it would take the client's own, shorter, time); RocketMQ 5.3.3's
    proxy never renews, so it does come back (a redelivery, or a revived copy waiting), once due."""
    held = [d for d in run.deliveries if run.workload.api == "push" and run.get_answer(d) == "SLOW"
            and run.workload.get_late_ms() > PROXY_INVISIBLE_MS]
    if not held:
        return None
    early, back = [], []
    for delivery in held:
        key = delivery.uniq_key
        later = [d.time_ms - delivery.time_ms for d in run.get_deliveries(key) if d.time_ms > delivery.time_ms]
        if later and later[0] < PROXY_INVISIBLE_MS - ARRIVAL_SLACK_MS:
            early.append(f"{key}: back {later[0]:.0f} ms after its delivery")
        elif later or has_waiting_copy(run, key):
            back.append(f"{key}: back {later[0]:.0f} ms after" if later else f"{key}: revived")
    if early:
        return "deviates", f"before the {PROXY_INVISIBLE_MS} ms of an auto-renewed receive: {early}", \
            [e.split(":")[0] for e in early]
    if len(back) == len(held):
        return "conforms", f"held {run.workload.get_late_ms()} ms, not renewed (5.3.3): {back}"
    due = max(d.time_ms for d in held) + PROXY_INVISIBLE_MS + REVIVE_LAG_MAX_MS + run.long_polling_ms + PICKUP_MS
    if run.ended_ms < due:
        return "indefinite", "the run ended before the held message was due back", [d.uniq_key for d in held]
    gone = sorted({d.uniq_key for d in held} - {b.split(":")[0] for b in back})
    return "deviates", f"held past {PROXY_INVISIBLE_MS} ms and never back (renewed, which 5.3.3 does not): {gone}", gone


POP_CHECKS = {"PG-01": check_at_least_once, "PG-02": check_dead_letter, "PG-03": check_invisible_time,
              "PG-04": check_attempt_once, "FF-02": check_fifo_order, "RP-03": check_backoff,
              "PC-01": check_pop_delay, "PC-02": check_never_dead_letters, "PC-03": check_pop_timeout,
              "PC-04": check_send_back_beside_pop, "PD-07": check_held_renewed}
