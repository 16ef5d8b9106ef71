"""An independent bookkeeping of what a user of the cluster observed, and the claims of spec/11-guarantees.md
checked against it. Expected values come from the reference (§1, §4, §5.7, §6), not from the model."""

from __future__ import annotations

from collections import defaultdict

from hypothesis import currently_in_test_context, event

from model.client.observations import (
    ConsumeProcessed,
    DlqArrival,
    ListenerInvoked,
    OffsetCommitted,
    OffsetUpdated,
    SendBackOutcome,
)
from model.system.observations import Livelock, Produced
from model.values.config import get_max_reconsume_times
from model.values.message import (
    PROPERTY_ORIGIN_MESSAGE_ID,
    PROPERTY_REAL_TOPIC,
    PROPERTY_RETRY_TOPIC,
    SCHEDULE_TOPIC,
    is_dlq_topic,
    is_retry_topic,
)
from model.values.names import TOPIC

# The reference's default messageDelayLevel "1s 5s 10s 30s 1m 2m 3m 4m 5m 6m 7m 8m 9m 10m 20m 30m 1h 2h", in ms,
# written out here rather than parsed by the model, so that the Ledger's retry timing stays independent of it.
DEFAULT_DELAYS_MS = [seconds * 1000 for seconds in (1, 5, 10, 30, 60, 120, 180, 240, 300, 360, 420, 480, 540, 600,
                                                    1200, 1800, 3600, 7200)]


# The handler of each observation type (None: not recorded), looked up once per type.
HANDLERS: dict[type, object] = {}



def mark(value: str) -> None:
    """Hypothesis' event(), where there is a test case to mark: the Ledger also checks a real client's run from a
    plain test (tests/conformance/), which has none."""
    if currently_in_test_context():
        event(value)

class Ledger:
    """What happened to each produced message (by UNIQ_KEY), built from observations only."""

    def __init__(self, config, subscription: frozenset | None = None, delays_ms: list[int] | None = None):
        """`delays_ms`: the broker's delay table in ms, level 1 first, when it is not the reference's default (the
        conformance harness runs a real client against a broker with a compressed table)."""
        self.config = config
        self.delays_ms = list(DEFAULT_DELAYS_MS if delays_ms is None else delays_ms)
        self.subscription = subscription
        self.max_times = get_max_reconsume_times(config)
        self.produced = {}
        self.unsubscribed = set()
        self.origin_ids = {}
        self.succeeded = set()
        self.invocations = defaultdict(int)
        self.copies = defaultdict(set)
        self.sent_back = defaultdict(int)
        self.forked = set()
        self.restarts = defaultdict(int)
        self.dlq = set()
        self.dropped_by_design = set()
        self.lost_origin = set()
        self.earliest_retry = {}
        self.client_offsets = {}
        self.broker_writer = {}
        self.broker_decreases = []
        self.send_backs = 0
        self.broadcast_timeouts = 0
        self.broadcast_dropped = set()
        self.delivered_msg_ids = set()

    def record(self, observations):
        for o in observations:
            kind = type(o)
            try:
                handler = HANDLERS[kind]
            except KeyError:
                handler = HANDLERS[kind] = getattr(Ledger, "on_" + kind.__name__, None)
            if handler is not None:
                handler(self, o)

    def on_Livelock(self, o: Livelock):
        """[SY-12] [PL-10] The only cycle of zero-delay transitions a workload can reach is the 5.2.0+ OFFSET_ILLEGAL
        repair (OffsetIllegalFix and PullDue at one instant); any other Livelock is a bug of the model."""
        kinds = dict(o.kinds)
        assert self.config.profile.offset_illegal_freezes_immediately, f"[SY-12] {o} in {self.config.profile.name}"
        assert kinds.get("OffsetIllegalFix", 0) > 0 and kinds.get("PullDue", 0) > 0, f"[SY-12] unknown cycle {o}"
        mark("SY-12")

    def on_Produced(self, o: Produced):
        key = o.message.uniq_key
        if self.subscription is not None and o.message.tags not in self.subscription:
            self.unsubscribed.add(key)
        else:
            self.produced[key] = o.message

    def on_ListenerInvoked(self, o: ListenerInvoked):
        for m in o.messages:
            assert m.uniq_key not in self.unsubscribed, f"[PL-05] listener saw tag {m.tags!r} it did not subscribe"
            if self.unsubscribed:
                mark("PL-05")
            self.invocations[m.uniq_key] += 1
            if not is_retry_topic(o.queue.topic) and m.reconsume_times == 0:
                # The id the broker links retries to is the consumed copy's (a delayed produce is re-stored).
                self.origin_ids.setdefault(m.uniq_key, m.msg_id)
            # A stored message seen again is a local re-consumption (5 s resubmit with a local reconsumeTimes + 1,
            # or a re-pull after a rebalance or crash), not a broker redelivery: SY-06's exceptions.
            if is_retry_topic(o.queue.topic) and m.msg_id not in self.delivered_msg_ids:
                self.check_retry_delivery(m, o.time)
            self.delivered_msg_ids.add(m.msg_id)
            self.check_copies(m)

    def check_copies(self, m):
        """[SY-05] At most 1 + max stored copies of one original reach a listener, and 1 + max more for each copy
        stored with its count restarted at 0 (RS-14), unless one copy was sent back twice (4.9's late result after
        cleanExpiredMsg, or a copy re-consumed after a rebalance or crash)."""
        copies = self.copies[m.uniq_key]
        copies.add(m.msg_id)
        if m.uniq_key in self.forked:
            mark("SY-05 a copy sent back twice forks the retry chain")
            return
        restarts = self.restarts[m.uniq_key]
        bound = (1 + restarts) * (1 + self.max_times)
        assert len(copies) <= bound, f"[SY-05] {m.uniq_key}: {len(copies)} copies, max {self.max_times}, " \
                                     f"{restarts} restarts of the count"
        if len(copies) > 1 + self.max_times:
            mark("SY-05 a count restarted at 0 allows more copies (RS-14)")

    def check_retry_delivery(self, m, now):
        """[SY-06] [SY-05] [SY-09] A broker redelivery: not early, within the retry budget, linked to its origin."""
        assert m.reconsume_times <= self.max_times, f"[SY-05] redelivered with reconsumeTimes {m.reconsume_times}"
        due = self.earliest_retry.get((m.uniq_key, m.reconsume_times))
        assert due is not None and now >= due, f"[SY-06] retry of {m.uniq_key} at {now}, due {due}"
        mark("SY-06")
        assert m.get_property(PROPERTY_RETRY_TOPIC) == m.topic == TOPIC, f"[SY-09] {m.uniq_key} topic {m.topic}"
        origin = m.get_property(PROPERTY_ORIGIN_MESSAGE_ID)
        if origin is None:
            # Only a first failure sent through the client fallback of a profile with the #9481 bug loses it.
            assert m.uniq_key in self.lost_origin, f"[SY-09] {m.uniq_key} redelivered without ORIGIN_MESSAGE_ID"
            mark("SY-09")
            mark("SY-09 ORIGIN_MESSAGE_ID lost by the fallback (profile)")
        elif m.uniq_key in self.lost_origin and origin in self.copies[m.uniq_key]:
            # Once lost, the broker's next send-back links the chain to the retry copy it was given (SMP).
            mark("SY-09 after a lost ORIGIN_MESSAGE_ID the chain links to a retry copy")
        else:
            first = self.origin_ids[m.uniq_key]
            forked = m.uniq_key in self.forked and origin in self.copies[m.uniq_key]  # a second lineage's own origin
            assert origin in (first, m.uniq_key) or forked, f"[SY-09] origin {origin}, first id {first}"
            mark("SY-09")

    def on_ConsumeProcessed(self, o: ConsumeProcessed):
        if not o.discarded:
            self.succeeded.update(m.uniq_key for m in o.succeeded)
            if not self.config.is_clustering:
                self.broadcast_dropped.update(m.uniq_key for m in o.failed)

    def on_SendBackOutcome(self, o: SendBackOutcome):
        self.send_backs += 1
        if not self.config.is_clustering:
            # cleanExpiredMsg does not look at the message model (PQ 4.9.8 L79-L131), nor does an orderly
            # consumer's give-up send at maxReconsumeTimes (OR-09, CMOS 4.9.8 L358-L398): both send a message back
            # even when BROADCASTING; a failed concurrently consumed one never is.
            sent_by_design = "CT-02" in o.rules or o.path == "orderly"
            assert sent_by_design, "[SY-08] a BROADCASTING consumer sent a failed message back"
            mark("SY-08")
            if o.path == "orderly":
                mark("SY-08 broadcasting: an orderly consumer's give-up send at maxReconsumeTimes")
            else:
                self.broadcast_timeouts += 1
                mark("SY-08 broadcasting: cleanExpiredMsg sent a timed-out message back")
        key, stored = o.message.uniq_key, o.stored
        if o.path == "fallback" and o.message.get_property(PROPERTY_ORIGIN_MESSAGE_ID) is None:
            if not self.config.profile.fallback_keeps_origin_message_id:
                self.lost_origin.add(key)
        if o.path != "failed":
            self.sent_back[o.message.msg_id] += 1
            if self.sent_back[o.message.msg_id] > 1:
                self.forked.add(key)
        if o.path == "rpc" and stored is None:
            self.dropped_by_design.add(key)
        if stored is not None and is_dlq_topic(stored.get_property(PROPERTY_REAL_TOPIC) or stored.topic):
            self.check_dead_letter(o)
        elif stored is not None and stored.topic == SCHEDULE_TOPIC:
            if stored.reconsume_times == 0:
                # A send-back stores reconsumeTimes + 1; 0 is a producer retry of the client's own send, which
                # lost RECONSUME_TIME (RS-14): the message counts from 0 again.
                self.restarts[key] += 1
            due = o.time + self.delays_ms[stored.delay_time_level - 1]
            slot = (key, stored.reconsume_times)
            self.earliest_retry[slot] = min(self.earliest_retry.get(slot, due), due)

    def check_dead_letter(self, o: SendBackOutcome):
        """[SY-05] Only a message out of retries (reconsumeTimes >= max), or one the listener sent back through
        the broker RPC with a level < 0, goes to the DLQ (the fallback ignores the level). The fallback sends
        RECONSUME_TIME = r + 1, and the 4.9 broker DLQs it at r + 1 >= max: one retry earlier (§4.4)."""
        r = o.message.reconsume_times
        early = o.path == "fallback" and not self.config.profile.retry_send_dlq_strictly_greater
        out_of_retries = r + 1 >= self.max_times if early else r >= self.max_times
        asked = o.path == "rpc" and o.delay_level < 0
        assert out_of_retries or asked, f"[SY-05] DLQ at {(o.path, o.delay_level, r, self.max_times)}"
        mark("SY-05 DLQ: " + ("out of retries" if out_of_retries else "level < 0"))

    def on_DlqArrival(self, o: DlqArrival):
        self.dlq.add(o.message.uniq_key)

    def on_OffsetUpdated(self, o: OffsetUpdated):
        """[SY-04] Per ProcessQueue lifetime the client's offset only grows (removeOffset starts a new one)."""
        key = (o.client_id, o.queue, o.lifetime)
        previous = self.client_offsets.get(key, -1)
        assert o.offset >= previous, f"[SY-04] client offset of {o.queue} went {previous} -> {o.offset}"
        mark("SY-04")
        self.client_offsets[key] = o.offset

    def on_OffsetCommitted(self, o: OffsetCommitted):
        """[SY-02] The broker's offset goes down only by a commit of another ProcessQueue lifetime than the one
        that wrote the current value, or by a one-way persist of the same lifetime overtaken by a later one;
        a pull never lowers what its own lifetime committed."""
        writer = self.broker_writer.get(o.queue)
        self.broker_writer[o.queue] = o.lifetime
        if o.offset >= o.previous:
            return
        same = writer == o.lifetime
        assert not same or o.source == "persist", f"[SY-02] a {o.source} of {o.lifetime} lowered its own offset"
        kind = ("reordered one-way of one lifetime" if same else f"{o.source} of another lifetime")
        if "PL-08" in o.rules:  # e.g. a 4.9 repair run after its queue changed hands (PL-08)
            kind = "PL-08 OFFSET_ILLEGAL repair"
        self.broker_decreases.append(kind)
        mark("SY-02 broker offset decreased: " + kind)

    def get_unaccounted(self):
        """[SY-10] Produced messages neither succeeded, nor dead-lettered, nor dropped by design."""
        done = self.succeeded | self.dlq | self.dropped_by_design | self.broadcast_dropped
        return sorted(set(self.produced) - done)
