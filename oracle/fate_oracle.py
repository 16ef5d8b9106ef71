"""Exact fates (spec/11-guarantees.md, SY-13): what must become of each message of a concurrently CLUSTERING group,
predicted from the workload — the messages produced, each listener's answer — and the faults drawn, never from the
model's state. The Ledger (oracle/system_oracle.py) checks what the invariants allow; this oracle says what must be:

- each failed message of a live batch is stored once more, by the path the faults leave (the CONSUMER_SEND_MSG_BACK
  RPC, else the client's fallback send, else neither), at a predicted delay level and reconsumeTimes, or in the DLQ,
  or nowhere by design (retryQueueNums 0) — and with neither, it comes back to the same ProcessQueue exactly
  5000 ms later with reconsumeTimes + 1, unless that ProcessQueue was dropped meanwhile (then never);
- a batch whose ProcessQueue a rebalance or a crash dropped while its listener ran is discarded whole: nothing
  stored, nothing committed, and every message of it not finished before comes again;
- every delivery is one of those predicted: an original (reconsumeTimes 0), a predicted retry copy, or a due local
  resubmission;
- at quiescence every produced message was finished by a live batch, is in the DLQ, was dropped by design, or was
  in a queue head the broker deleted.

Where timing decides — a crash's survivors re-balance within 20 s, a deleted head drops a ProcessQueue only at its
next pull — the batches concerned are *unsure*: either outcome is allowed, and what the model chose is recorded.
"""

from __future__ import annotations

from collections import Counter, deque

from hypothesis import currently_in_test_context, event

from model.client.listener import ConsumeStatus
from model.client.observations import ConsumeProcessed, ListenerInvoked, SendBackOutcome
from model.system.observations import Produced
from model.values.message import PROPERTY_REAL_TOPIC, SCHEDULE_TOPIC, is_dlq_topic, is_retry_topic
from model.values.names import TOPIC
from oracle.ownership import Ownership
from oracle.system_oracle import DEFAULT_DELAYS_MS

# SendMessageProcessor.asyncConsumerSendMsgBack 4.9.8 L207-L209: level 0 means 3 + reconsumeTimes.
DEFAULT_RETRY_LEVEL_BASE = 3
# ProcessQueue.cleanExpiredMsg 4.9.8 L110: pushConsumer.sendMessageBack(msg, 3).
CLEAN_EXPIRED_LEVEL = 3
# ConsumeMessageConcurrentlyService.submitConsumeRequestLater 4.9.8 L242-L255.
LOCAL_RETRY_MS = 5_000
LIVE, DROPPED, UNSURE = "live", "dropped", "unsure"


def mark(value: str) -> None:
    if currently_in_test_context():
        event(value)


def get_stored_kind(stored) -> str | None:
    """What a send-back stored: "dlq", "retry" or None (nothing)."""
    if stored is None:
        return None
    # A parked copy's destination is REAL_TOPIC; a copy stored where it goes may carry a stale one from its source.
    topic = stored.get_property(PROPERTY_REAL_TOPIC) if stored.topic == SCHEDULE_TOPIC else stored.topic
    return "dlq" if is_dlq_topic(topic) else "retry"


class FateOracle:
    """Predictions for one concurrently CLUSTERING group, fed the observations in order (`record`) and told each
    listener answer (`answer`) and each fault (`on_*`) as the driver applies them."""

    def __init__(self, config, queues: list, members=("c1",), subscription: frozenset | None = None):
        self.config = config
        self.ownership = Ownership(queues, config.is_clustering, members)
        self.subscription = subscription
        self.max_times = 16 if config.max_reconsume_times == -1 else config.max_reconsume_times
        self.max_level = len(DEFAULT_DELAYS_MS)
        self.writeable, self.refusals = True, {}
        self.now = 0
        self.answers: dict = {}  # request id -> (result, rpc fails, fallback fails, send retried)
        self.runs: dict = {}  # request id -> [client, queue, messages, state]
        self.expected: deque = deque()  # the send-back outcomes the current completion must show, in order
        self.broker_r: dict = {}  # msg id -> reconsumeTimes of the broker's copy it was delivered from
        self.copies: dict = {}  # uniq key -> Counter of the reconsumeTimes of its stored retry copies
        self.local: dict = {}  # (client, queue, msg id) -> (reconsumeTimes, due, required)
        self.produced: dict = {}  # uniq key -> (topic, queue id, offset) where it was first stored
        self.finished, self.dlq, self.by_design, self.maybe_lost = set(), set(), set(), set()
        self.expired_sent: set = set()  # msg ids cleanExpiredMsg sent back

    # ------------------------------------------------------------------ workload and faults

    def answer(self, request_id: int, result, rpc_fails=False, fallback_fails=False, send_retried=False) -> None:
        self.answers[request_id] = (result, rpc_fails, fallback_fails, send_retried)

    def on_members(self, members, now: int) -> None:
        self.now = now
        self.drop(self.ownership.set_members(members), DROPPED)

    def on_crash(self, client: str, now: int) -> None:
        self.now = now
        self.drop(self.ownership.crash(client, now), DROPPED)
        self.drop(set(self.ownership.unsure_until), UNSURE)

    def on_expire(self, queue, min_offset: int, now: int) -> None:
        """A deleted head: batches of the queue may lose their ProcessQueue (OFFSET_ILLEGAL, PL-08) at any later pull,
        and its messages not yet finished may be skipped for good — the repaired offset is persisted one-way, and a
        queue re-added before it arrives, with nothing committed, starts at its end (RB-04). So from now on the
        queue's messages may or may not come (a retry copy's place in %RETRY% is not known: any copy)."""
        self.now = now
        self.ownership.expired.add(queue)
        self.drop({(run[0], queue) for run in self.runs.values()} | {k[:2] for k in self.local}, UNSURE)
        for key, (topic, queue_id, _offset) in self.produced.items():
            if is_retry_topic(queue.topic) and key in self.copies or (topic, queue_id) == (queue.topic, queue.queue_id):
                self.maybe_lost.add(key)
            elif not is_retry_topic(queue.topic) and topic != queue.topic:
                self.maybe_lost.add(key)  # a delayed produce reaches some queue of the topic later

    def is_lossy(self, topic: str, queue_id: int | None = None) -> bool:
        return any(q.topic == topic and queue_id in (None, q.queue_id) for q in self.ownership.expired)

    def on_permission(self, writeable: bool) -> None:
        self.writeable = writeable

    def on_refusal(self, kind: str, code) -> None:
        if code is None:
            self.refusals.pop(kind, None)
        else:
            self.refusals[kind] = code

    def drop(self, pairs: set, state: str) -> None:
        """The ProcessQueues of `pairs` are (or may be) dropped now: their running batches with them, and the local
        resubmissions made for them (never to run, or not necessarily)."""
        for run in self.runs.values():
            if (run[0], run[1]) in pairs and run[3] != DROPPED:
                run[3] = state
        for (client, queue, msg_id), (r, due, _required) in list(self.local.items()):
            if (client, queue) in pairs:
                if state == DROPPED:
                    del self.local[client, queue, msg_id]
                else:
                    self.local[client, queue, msg_id] = (r, due, False)

    # ------------------------------------------------------------------ observations

    def record(self, observations) -> None:
        for o in observations:
            kind = type(o)
            if kind is ListenerInvoked:
                self.on_invoked(o)
            elif kind is ConsumeProcessed:
                self.on_processed(o)
            elif kind is SendBackOutcome:
                self.on_send_back(o)
            elif kind is Produced:
                self.on_produced(o)
        self.check_expected_done()

    def on_produced(self, o: Produced) -> None:
        m = o.message
        if self.subscription is None or m.tags in self.subscription:
            self.produced[m.uniq_key] = (m.topic, m.queue_id, m.queue_offset)
            if self.is_lossy(m.topic, m.queue_id) or (self.ownership.expired and m.topic != TOPIC):
                self.maybe_lost.add(m.uniq_key)

    def on_invoked(self, o: ListenerInvoked) -> None:
        """[SY-13] Every delivery was predicted: an original, a stored retry copy, or a due local resubmission."""
        self.check_expected_done()
        self.now = o.time
        for m in o.messages:
            self.check_delivery(o.client_id, o.queue, m)
        state = UNSURE if self.ownership.is_unsure(o.client_id, o.queue, o.time) else LIVE
        self.runs[o.request_id] = [o.client_id, o.queue, o.messages, state]

    def check_delivery(self, client: str, queue, m) -> None:
        local = self.local.get((client, queue, m.msg_id))
        if local is not None and local[0] == m.reconsume_times:
            del self.local[client, queue, m.msg_id]
            assert self.now == local[1], f"[CC-07] {m.uniq_key} resubmitted at {self.now}, due at {local[1]}"
            mark("SY-13 a local resubmission 5 s after both send-backs failed")
            return
        if is_retry_topic(queue.topic):
            allowed = self.copies.get(m.uniq_key, Counter())
            assert allowed[m.reconsume_times] > 0, (
                f"[SY-13] {m.uniq_key} delivered from {queue.topic} with reconsumeTimes {m.reconsume_times}; "
                f"stored copies: {sorted(allowed.elements())}")
        else:
            assert m.reconsume_times == 0, (
                f"[SY-13] {m.uniq_key} from {queue.topic} with reconsumeTimes {m.reconsume_times}: no local "
                f"resubmission of it was due for {client} (its ProcessQueue was dropped, or none failed)")
        self.broker_r[m.msg_id] = m.reconsume_times
        # Cached afresh by this ProcessQueue: a send-back cleanExpiredMsg made from another one does not count (CT-04).
        self.expired_sent.discard(m.msg_id)

    def on_processed(self, o: ConsumeProcessed) -> None:
        """[SY-13] [RB-03] A result: discarded exactly when its ProcessQueue was dropped; otherwise the acked
        messages are finished and the others' send-backs predicted."""
        self.check_expected_done()
        self.now = o.time
        client, queue, messages, state = self.runs.pop(o.request_id)
        result, rpc_fails, fallback_fails, send_retried = self.answers.pop(o.request_id)
        if state == DROPPED:
            assert o.discarded, f"[RB-03] request {o.request_id}'s ProcessQueue was dropped, yet it was processed"
            mark("SY-13 a batch whose ProcessQueue was dropped is discarded")
            return
        if state == UNSURE and o.discarded:
            return
        assert not o.discarded, f"[RB-03] request {o.request_id} discarded, but its ProcessQueue was not dropped"
        ok, failed = self.compute_acked(result, messages)
        self.finished.update(m.uniq_key for m in ok)
        for m in failed:
            if self.config.profile.skip_send_back_of_removed_messages and m.msg_id in self.expired_sent:
                continue  # CT-04: 5.1.0+ skips what cleanExpiredMsg already sent back
            level = result.delay_level_when_next_consume
            fate = None if state == UNSURE else self.predict(m, level, rpc_fails, fallback_fails, send_retried)
            self.expected.append((m, fate, (client, queue)))

    def compute_acked(self, result, messages) -> tuple:
        """[CC-03] SUCCESS acks messages 0..ackIndex (clamped; negative: none); anything else acks none."""
        if result.status is not ConsumeStatus.CONSUME_SUCCESS:
            return (), messages
        index = min(result.ack_index, len(messages) - 1)
        return messages[:index + 1], messages[index + 1:]

    def predict(self, m, level: int, rpc_fails: bool, fallback_fails: bool, send_retried: bool):
        """[SB-04] [SB-12] [CC-06] [CC-07] (path, stored kind, delay level, reconsumeTimes) of one send-back, from
        the broker's copy's reconsumeTimes (the RPC looks the message up by offset) or the delivered one (the
        fallback); None where RS-14's producer retry restarts the count."""
        if not rpc_fails and self.writeable and "send_back" not in self.refusals:
            if self.config.retry_queue_nums <= 0:
                return ("rpc", None, None, None)
            r = self.broker_r[m.msg_id]
            if r >= self.max_times or level < 0:
                return ("rpc", "dlq", None, r + 1)
            return ("rpc", "retry", min(level if level > 0 else DEFAULT_RETRY_LEVEL_BASE + r, self.max_level), r + 1)
        if fallback_fails or not self.writeable or "send" in self.refusals or self.config.retry_queue_nums <= 0:
            return ("failed", None, None, None)
        if send_retried:
            return None
        r = m.reconsume_times + 1
        strictly = self.config.profile.retry_send_dlq_strictly_greater
        if r > self.max_times or (r == self.max_times and not strictly):
            return ("fallback", "dlq", None, r)
        return ("fallback", "retry", min(DEFAULT_RETRY_LEVEL_BASE + m.reconsume_times, self.max_level), r)

    def on_send_back(self, o: SendBackOutcome) -> None:
        if "CT-02" in o.rules:
            self.on_clean_expired(o)
            return
        assert self.expected, f"[SY-13] a send-back of {o.message.uniq_key} nobody failed: {o.path}"
        m, fate, pair = self.expected.popleft()
        assert o.message.msg_id == m.msg_id, f"[SY-13] sent back {o.message.uniq_key}, expected {m.uniq_key}"
        self.compare(o, fate)
        if o.path == "failed":
            self.local[(*pair, m.msg_id)] = (m.reconsume_times + 1, o.time + LOCAL_RETRY_MS, fate is not None)

    def on_clean_expired(self, o: SendBackOutcome) -> None:
        """[CT-02] cleanExpiredMsg sends an expired message back at level 3, whatever its reconsumeTimes."""
        m = o.message
        assert o.delay_level == CLEAN_EXPIRED_LEVEL, f"[CT-02] sent back at level {o.delay_level}"
        self.compare(o, self.predict(m, CLEAN_EXPIRED_LEVEL, False, False, False))
        if o.path != "failed":
            self.expired_sent.add(m.msg_id)
        mark(f"SY-13 cleanExpiredMsg at reconsumeTimes {min(m.reconsume_times, 2)}{'+' * (m.reconsume_times >= 2)}")

    def compare(self, o: SendBackOutcome, fate) -> None:
        """[SY-13] The outcome is the predicted one: path, what was stored, its level and reconsumeTimes."""
        kind = get_stored_kind(o.stored)
        key = o.message.uniq_key
        if kind == "dlq":
            self.dlq.add(key)
        elif kind == "retry":
            self.copies.setdefault(key, Counter())[o.stored.reconsume_times] += 1
            if self.is_lossy(o.stored.get_property(PROPERTY_REAL_TOPIC) or o.stored.topic):
                self.maybe_lost.add(key)
        elif o.path == "rpc":
            self.by_design.add(key)
        if fate is None:
            return
        seen = (o.path, kind, o.stored.delay_time_level if kind == "retry" else None,
                o.stored.reconsume_times if o.stored is not None else None)
        assert seen == fate, f"[SY-13] {key} (reconsumeTimes {o.message.reconsume_times}): {seen}, predicted {fate}"
        mark(f"SY-13 predicted send-back: {fate[0]} -> {fate[1]}")

    def check_expected_done(self) -> None:
        assert not self.expected, f"[SY-13] predicted send-backs that did not happen: {list(self.expected)}"

    # ------------------------------------------------------------------ deadlines and quiescence

    def check_due(self, now: int) -> None:
        """[CC-07] A required local resubmission happens at its due time: none is overdue."""
        overdue = sorted((due, k) for k, (_r, due, required) in self.local.items() if required and due < now)
        assert not overdue, f"[CC-07] local resubmissions overdue at {now}: {overdue}"

    def get_unaccounted(self) -> list:
        """[SY-10] [SY-13] Produced messages neither finished by a live batch, nor dead-lettered, nor dropped by
        design, nor possibly deleted with a queue head."""
        done = self.finished | self.dlq | self.by_design | self.maybe_lost
        return sorted(set(self.produced) - done)

    def explain(self, key: str) -> str:
        """What the oracle knows of one message, for a failure report."""
        runs = [(rid, run[0], run[1].topic, run[1].queue_id, run[3]) for rid, run in self.runs.items()
                if any(m.uniq_key == key for m in run[2])]
        return (f"{key}: stored at {self.produced.get(key)}, copies {dict(self.copies.get(key, {}))}, "
                f"running {runs}, local {[k for k in self.local if key in str(k)]}")
