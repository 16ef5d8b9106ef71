"""One POP differential example on one 5.x backend (differential/pop_steps.py): fresh names, the groups set up, each
step sent and what it observed, normalised so that two backends compare equal when they decided the same —
message keys instead of handles and ids (each backend has its own clock and commit log), sorted where the broker's
order is not decided (copies stored by different revive queues' threads, PO-04).

A backend also keeps, per message key, the revive time (popTime + invisibleTime) of every handle it was given, so
that the lag of each retry copy's store time behind it is checked against the revive service's intervals
(differential/pop_probe.py: REVIVE_LAG_MIN_MS .. REVIVE_LAG_MAX_MS).
"""

from __future__ import annotations

import attrs

from conformance.codec import pop
from conformance.runner.backends.pop_backend import PopBackend, Popped
from differential import pop_steps as s
from differential.example import Names
from differential.pop_probe import REVIVE_LAG_MIN_MS


@attrs.frozen
class PopNames(Names):
    """The 4.x example's fresh names (topic T-*, groups G-<role>-*) and a FIFO topic beside them."""

    @property
    def fifo_topic(self) -> str:
        return f"F-{self.suffix}"

    def topic_of(self, role: str) -> str:
        return self.fifo_topic if role == s.FIFO_GROUP else self.topic


@attrs.define
class Delivered:
    """A message as delivered to a group: its key and every handle it got (the first, then each change's)."""

    message: Popped
    handles: list[str]


class PopRun:
    """One example's steps on one backend."""

    def __init__(self, backend: PopBackend, names: PopNames) -> None:
        self.backend, self.names = backend, names
        self.sent = 0
        self.delivered: dict[tuple[str, str], list[Delivered]] = {}  # (role, "remoting" | "grpc") -> in order
        self.revive_times: dict[str, list[int]] = {}  # key -> the revive time of each handle it was given
        self.short_until = 0  # the latest revive time of a short invisible time (wall-clock ms)

    def set_up(self) -> None:
        self.backend.create_topic(self.names.topic, 1)
        self.backend.create_topic(self.names.fifo_topic, 1, fifo=True)
        for role, (retry_max_times, policy, orderly) in s.GROUP_SETTINGS.items():
            self.backend.set_group(self.names.group(role), retry_max_times, policy, orderly)

    def apply(self, step: s.Step) -> dict:
        return {"step": type(step).__name__, **getattr(self, f"on_{type(step).__name__.lower()}")(step)}

    # --- bookkeeping --------------------------------------------------------------------------------------------

    def note_handle(self, key: str, handle: str, invisible_ms: int) -> None:
        revive_time = pop.decode_handle(" ".join(handle.split(" ")[:8])).revive_time
        self.revive_times.setdefault(key, []).append(revive_time)
        if invisible_ms <= s.SHORT_MS:
            self.short_until = max(self.short_until, revive_time)

    def deliver(self, role: str, via: str, messages, invisible_ms: int) -> None:
        for message in messages:
            self.delivered.setdefault((role, via), []).append(Delivered(message, [message.handle]))
            self.note_handle(message.key, message.handle, invisible_ms)

    def pick(self, role: str, via: str, ref: int) -> Delivered | None:
        found = self.delivered.get((role, via), [])
        return found[ref % len(found)] if found else None

    # --- the steps ----------------------------------------------------------------------------------------------

    def on_send(self, step: s.Send) -> dict:
        key = f"k{self.sent}"
        self.sent += 1
        topic = self.names.fifo_topic if step.fifo else self.names.topic
        return {"code": self.backend.send(topic, 0, key.encode(), key, step.tag)}

    def on_pop(self, step: s.Pop) -> dict:
        answer = self.backend.pop(self.names.group(step.group), self.names.topic, step.invisible_ms,
                                  max_nums=step.max_nums, exp=step.exp)
        self.deliver(step.group, "remoting", answer.messages, step.invisible_ms)
        return {"code": answer.code, "messages": sorted((m.key, m.reconsume_times,
                                                         pop.decode_handle(m.handle).topic_mark)
                                                        for m in answer.messages)}

    def on_poporder(self, step: s.PopOrder) -> dict:
        answer = self.backend.pop(self.names.group(s.FIFO_GROUP), self.names.fifo_topic, step.invisible_ms,
                                  queue_id=0, max_nums=step.max_nums, order=True, attempt_id=step.attempt)
        self.deliver(s.FIFO_GROUP, "remoting", answer.messages, step.invisible_ms)
        return {"code": answer.code, "messages": [(m.key, m.reconsume_times) for m in answer.messages]}

    def on_ack(self, step: s.Ack) -> dict:
        entry = self.pick(step.group, "remoting", step.ref)
        if entry is None:
            return {"none": True}
        topic = self.names.topic_of(step.group)
        return {"code": self.backend.ack(self.names.group(step.group), topic, entry.handles[step.version])}

    def on_change(self, step: s.Change) -> dict:
        entry = self.pick(step.group, "remoting", step.ref)
        if entry is None:
            return {"none": True}
        code, handle = self.backend.change_invisible(self.names.group(step.group), self.names.topic_of(step.group),
                                                     entry.handles[step.version], step.invisible_ms)
        if handle:
            entry.handles.append(handle)
            self.note_handle(entry.message.key, handle, step.invisible_ms)
        return {"code": code, "handle": bool(handle)}

    def on_receive(self, step: s.Receive) -> dict:
        group, topic = self.names.group(step.group), self.names.topic_of(step.group)
        answer = self.backend.receive(group, topic, step.invisible_ms, batch=step.batch, exp=step.exp)
        self.deliver(step.group, "grpc", answer.messages, step.invisible_ms)
        return {"code": answer.code, "messages": sorted((m.key, m.reconsume_times + 1) for m in answer.messages)}

    def on_grpcack(self, step: s.GrpcAck) -> dict:
        entry = self.pick(step.group, "grpc", step.ref)
        if entry is None:
            return {"none": True}
        message = attrs.evolve(entry.message, handle=entry.handles[step.version])
        return {"code": self.backend.grpc_ack(self.names.group(step.group), self.names.topic_of(step.group),
                                              message)}

    def on_grpcchange(self, step: s.GrpcChange) -> dict:
        entry = self.pick(step.group, "grpc", step.ref)
        if entry is None:
            return {"none": True}
        message = attrs.evolve(entry.message, handle=entry.handles[step.version])
        code, handle = self.backend.grpc_change_invisible(self.names.group(step.group),
                                                          self.names.topic_of(step.group), message, step.invisible_ms)
        if handle:
            entry.handles.append(handle)
            self.note_handle(entry.message.key, handle, step.invisible_ms)
        return {"code": code, "handle": bool(handle)}

    def on_forward(self, step: s.Forward) -> dict:
        entry = self.pick(step.group, "grpc", step.ref)
        if entry is None:
            return {"none": True}
        group = self.names.group(step.group)
        return {"code": self.backend.forward_to_dlq(group, self.names.topic, entry.message,
                                                    s.GROUP_SETTINGS[step.group][0] + 1)}

    def on_queryoffset(self, step: s.QueryOffset) -> dict:
        topic = self.names.fifo_topic if step.fifo else self.names.topic
        return {"offset": self.backend.committed_offset(self.names.group(step.group), topic, 0)}

    def on_settings(self, step: s.Settings) -> dict:
        backoff = self.backend.open_consumer(self.names.group(step.group), self.names.topic_of(step.group))
        return {"settings": attrs.astuple(backoff)}

    def on_wait(self, _step: s.Wait) -> dict:
        return self.read_retry_and_dlq()

    # --- reads --------------------------------------------------------------------------------------------------

    def read_retry_and_dlq(self) -> dict:
        """Per group: the retry topic's copies (key, reconsumeTimes) and the DLQ's (key, reconsumeTimes, the
        RETRY_TOPIC it names), sorted."""
        read = {}
        for role in s.GROUPS:
            group = self.names.group(role)
            retry = self.backend.read_topic(pop.get_retry_topic(group, self.names.topic))
            dead = self.backend.read_topic(pop.get_dlq_topic(group))
            read[role] = {"retry": sorted((get_key(m), m.reconsume_times) for m in retry),
                          "dlq": sorted((get_key(m), m.reconsume_times,
                                         self.names.anonymise(m.properties.get("RETRY_TOPIC", "")))
                                        for m in dead)}
        dead = self.backend.read_topic(pop.get_dlq_topic(self.names.group(s.FIFO_GROUP)))
        read[s.FIFO_GROUP] = {"dlq": sorted((get_key(m), m.reconsume_times) for m in dead)}
        return read

    def get_revive_lags(self) -> list[tuple[str, int, int]]:
        """(key, reconsumeTimes, lag) of every retry copy stored so far: its store time minus the revive time
        (popTime + invisibleTime) of the handle it came back from — the latest of its key's handles that lies at
        least REVIVE_LAG_MIN_MS before it, or if none does, the latest before it at all (a copy too early)."""
        lags = []
        for role in s.GROUPS:
            for copy in self.backend.read_topic(pop.get_retry_topic(self.names.group(role), self.names.topic)):
                key = get_key(copy)
                gaps = [copy.store_timestamp - t for t in self.revive_times.get(key, ()) if t <= copy.store_timestamp]
                fits = [gap for gap in gaps if gap >= REVIVE_LAG_MIN_MS]
                lags.append((key, copy.reconsume_times, min(fits or gaps or [-1])))
        return lags


def get_key(message) -> str:
    return message.properties.get("UNIQ_KEY", message.msg_id)
