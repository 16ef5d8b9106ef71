"""An independent bookkeeping of what a user of the cluster observed, and the claims of spec/11-guarantees.md
checked against it. Expected values come from the reference (§1, §4, §5.7, §6), not from the model."""

from __future__ import annotations

from collections import defaultdict

from model.cluster import (
    TOPIC,
    ConsumeProcessed,
    DlqArrival,
    ListenerInvoked,
    OffsetUpdated,
    Produced,
    SendBackOutcome,
)
from model.config import get_max_reconsume_times
from model.message import PROPERTY_ORIGIN_MESSAGE_ID, PROPERTY_RETRY_TOPIC, SCHEDULE_TOPIC, is_retry_topic

DELAYS_MS = [1, 5, 10, 30, 60, 120, 180, 240, 300, 360, 420, 480, 540, 600, 1200, 1800, 3600, 7200]


class Ledger:
    """What happened to each produced message (by UNIQ_KEY), built from observations only."""

    def __init__(self, config):
        self.config = config
        self.max_times = get_max_reconsume_times(config)
        self.produced = {}
        self.origin_ids = {}
        self.succeeded = set()
        self.invocations = defaultdict(int)
        self.dlq = set()
        self.dropped_by_design = set()
        self.lost_origin = set()
        self.earliest_retry = {}
        self.client_offsets = {}
        self.send_backs = 0
        self.broadcast_dropped = set()
        self.delivered_msg_ids = set()

    def record(self, observations):
        for o in observations:
            handler = getattr(self, "on_" + type(o).__name__, None)
            if handler is not None:
                handler(o)

    def on_Produced(self, o: Produced):
        self.produced[o.message.uniq_key] = o.message

    def on_ListenerInvoked(self, o: ListenerInvoked):
        for m in o.messages:
            self.invocations[m.uniq_key] += 1
            if not is_retry_topic(o.queue.topic) and m.reconsume_times == 0:
                # The id the broker links retries to is the consumed copy's (a delayed produce is re-stored).
                self.origin_ids.setdefault(m.uniq_key, m.msg_id)
            # A stored message seen again is a local re-consumption (5 s resubmit with a local reconsumeTimes + 1,
            # or a re-pull after a rebalance or crash), not a broker redelivery: SY-06's exceptions.
            if is_retry_topic(o.queue.topic) and m.msg_id not in self.delivered_msg_ids:
                self.check_retry_delivery(m, o.time)
            self.delivered_msg_ids.add(m.msg_id)

    def check_retry_delivery(self, m, now):
        """[SY-06] [SY-05] [SY-09] A broker redelivery: not early, within the retry budget, linked to its origin."""
        assert m.reconsume_times <= self.max_times, f"redelivered with reconsumeTimes {m.reconsume_times}"
        due = self.earliest_retry.get((m.uniq_key, m.reconsume_times))
        assert due is not None and now >= due, f"retry of {m.uniq_key} at {now}, due {due}"
        assert m.get_property(PROPERTY_RETRY_TOPIC) == m.topic == TOPIC
        origin = m.get_property(PROPERTY_ORIGIN_MESSAGE_ID)
        if m.uniq_key not in self.lost_origin:
            assert origin in (self.origin_ids[m.uniq_key], m.uniq_key), (origin, self.origin_ids[m.uniq_key])

    def on_ConsumeProcessed(self, o: ConsumeProcessed):
        if not o.discarded:
            self.succeeded.update(m.uniq_key for m in o.succeeded)
            if not self.config.is_clustering:
                self.broadcast_dropped.update(m.uniq_key for m in o.failed)

    def on_SendBackOutcome(self, o: SendBackOutcome):
        self.send_backs += 1
        assert self.config.is_clustering, "[SY-08] a BROADCASTING consumer sent a message back"
        key = o.message.uniq_key
        if o.path == "fallback" and o.message.get_property(PROPERTY_ORIGIN_MESSAGE_ID) is None:
            if not self.config.profile.fallback_keeps_origin_message_id:
                self.lost_origin.add(key)
        stored = o.stored
        if o.path == "rpc" and stored is None:
            self.dropped_by_design.add(key)
        if stored is not None and stored.topic == SCHEDULE_TOPIC:
            level = stored.delay_time_level
            due = o.time + DELAYS_MS[level - 1] * 1000
            slot = (key, stored.reconsume_times)
            self.earliest_retry[slot] = min(self.earliest_retry.get(slot, due), due)

    def on_DlqArrival(self, o: DlqArrival):
        """[SY-05] Only a message out of retries, or one the listener sent with level < 0, reaches the DLQ."""
        self.dlq.add(o.message.uniq_key)

    def on_OffsetUpdated(self, o: OffsetUpdated):
        """[SY-04] Per ProcessQueue lifetime the client's offset only grows (removeOffset starts a new one)."""
        key = (o.client_id, o.queue, o.lifetime)
        previous = self.client_offsets.get(key, -1)
        assert o.offset >= previous, f"client offset of {o.queue} went {previous} -> {o.offset}"
        self.client_offsets[key] = o.offset

    def get_unaccounted(self):
        """[SY-10] Produced messages neither succeeded, nor dead-lettered, nor dropped by design."""
        done = self.succeeded | self.dlq | self.dropped_by_design | self.broadcast_dropped
        return sorted(set(self.produced) - done)
