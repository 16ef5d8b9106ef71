"""The adapter side of the adapter protocol (ADAPTER.md) for adapters written in Python: one writer of stdout lines,
and the deliveries waiting for the harness's outcome. The C++ adapter (cpp_adapter.py) and the 5.x Python client's
(python5_adapter.py) share it; neither imports its client library here.
"""

from __future__ import annotations

import json
import threading

OUTCOME_TIMEOUT_S = 30.0


class Channel:
    """stdout lines, one writer at a time (a client library calls back on several threads)."""

    def __init__(self, out):
        self.out, self.lock = out, threading.Lock()

    def send(self, message: dict) -> None:
        line = json.dumps(message, separators=(",", ":"))
        with self.lock:
            self.out.write(line + "\n")
            self.out.flush()


class Deliveries:
    """Deliveries waiting for their outcome, by number; `fallback` is the status a delivery gets when no outcome
    came in OUTCOME_TIMEOUT_S, or when it is released at stop."""

    def __init__(self, channel: Channel, fallback: str = "RECONSUME_LATER"):
        self.channel, self.fallback, self.lock, self.next = channel, fallback, threading.Lock(), 1
        self.waiting: dict[int, tuple[threading.Event, list]] = {}
        # Deliveries whose line was written: only those are released at stop, so that a `released` line never
        # reaches the harness before its delivery line (it would be ignored, and the history keep the script's
        # status for a listener that got the fallback).
        self.announced: set[int] = set()
        self.stopping = False

    def deliver(self, message: dict) -> dict:
        with self.lock:
            number, self.next = self.next, self.next + 1
            slot = self.waiting[number] = (threading.Event(), [])
        self.channel.send({"type": "delivery", "delivery": number, "thread": threading.current_thread().name,
                           "messages": [message], "context": {}})
        with self.lock:
            self.announced.add(number)
            stopping = self.stopping
        if stopping:
            self.release({number})
        answered = slot[0].wait(OUTCOME_TIMEOUT_S)
        with self.lock:
            self.waiting.pop(number, None)
            self.announced.discard(number)
        if not answered:
            late = f"no outcome for delivery {number} in {OUTCOME_TIMEOUT_S} s"
            self.channel.send({"type": "error", "message": late})
            return {"status": self.fallback}
        return slot[1][0]

    def answer(self, outcome: dict) -> None:
        with self.lock:
            slot = self.waiting.get(outcome.get("delivery"))
            if slot is not None and not slot[0].is_set():  # once released at stop, the release stands
                slot[1].append(outcome)
                slot[0].set()
        if slot is None:
            self.channel.send({"type": "error", "message": f"outcome for unknown delivery {outcome.get('delivery')}"})

    def release_all(self) -> None:
        """At stop: every blocked listener gets the fallback status, so the client's shutdown can join its threads;
        a `released` line tells the harness which answer the client really got. A listener whose outcome already
        came keeps it, and no `released` line is sent for it (the history would say it failed where it succeeded)."""
        with self.lock:
            self.stopping = True
            announced = set(self.announced)
        self.release(announced)

    def release(self, numbers: set[int]) -> None:
        released = []
        with self.lock:
            for number, (event, answer) in self.waiting.items():
                if number in numbers and not event.is_set():
                    answer.append({"status": self.fallback})
                    event.set()
                    released.append(number)
        for number in released:
            self.channel.send({"type": "released", "delivery": number, "status": self.fallback})


def read_requests(stdin, channel: Channel, deliveries: Deliveries, on_start) -> None:
    """The harness's lines until `stop` (or the end of stdin): the first `start` goes to on_start(request), each
    `outcome` to its delivery; anything else is answered `error`."""
    started = False
    for line in stdin:
        request = json.loads(line)
        kind = request.get("type")
        if kind == "start" and not started:
            started = True
            on_start(request)
        elif kind == "outcome":
            deliveries.answer(request)
        elif kind == "stop":
            return
        else:
            channel.send({"type": "error", "message": f"unexpected request {kind!r}"})
