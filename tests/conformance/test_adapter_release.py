"""The adapters' release at stop never contradicts an outcome that came first: a blocked listener is answered
RECONSUME_LATER at stop (so the client's shutdown is not held), but one whose outcome the harness already sent
returns that outcome, and no `released` line says otherwise — conformance-java-faults drew exactly this race: the
history said RECONSUME_LATER for a delivery the Java client had consumed, and the checker found a loss that the
client never made."""

from __future__ import annotations

import re
import threading
import time
from pathlib import Path

from conformance.runner.clients.adapter_io import Deliveries

JAVA_ADAPTER = Path(__file__).resolve().parents[2] / "conformance" / "runner" / "clients" / "java" / "Adapter.java"


class Lines:
    def __init__(self):
        self.sent: list[dict] = []

    def send(self, message: dict) -> None:
        self.sent.append(message)


def test_an_outcome_that_came_before_the_stop_stands_and_is_not_reported_released():
    """The race as it happens: the outcome arrived, the callback has not yet woken to take it, the stop comes."""
    lines = Lines()
    deliveries = Deliveries(lines)
    deliveries.waiting[7] = slot = (threading.Event(), [])
    deliveries.answer({"delivery": 7, "status": "CONSUME_SUCCESS"})
    deliveries.release_all()
    assert slot[0].is_set() and slot[1] == [{"delivery": 7, "status": "CONSUME_SUCCESS"}]
    assert lines.sent == []


def test_a_listener_still_waiting_at_stop_is_released_and_a_late_outcome_does_not_change_it():
    lines = Lines()
    deliveries = Deliveries(lines)
    deliveries.waiting[3] = slot = (threading.Event(), [])
    deliveries.release_all()
    deliveries.answer({"delivery": 3, "status": "CONSUME_SUCCESS"})  # after the release: the release stands
    assert slot[0].is_set() and slot[1] == [{"status": "RECONSUME_LATER"}]
    assert lines.sent == [{"type": "released", "delivery": 3, "status": "RECONSUME_LATER"}]


def test_a_blocked_callback_returns_the_release():
    lines = Lines()
    deliveries = Deliveries(lines)
    returned: list = []
    thread = threading.Thread(target=lambda: returned.append(deliveries.deliver({"msgId": "m0"})), daemon=True)
    thread.start()
    deadline = time.monotonic() + 5
    while not deliveries.waiting and time.monotonic() < deadline:
        time.sleep(0.001)
    deliveries.release_all()
    thread.join(5)
    assert returned == [{"status": "RECONSUME_LATER"}]
    assert [line["type"] for line in lines.sent] == ["delivery", "released"]


def test_the_java_adapter_reports_a_release_only_when_it_answered_the_listener():
    """Adapter.java: the `released` line is written only after CompletableFuture.complete returned true."""
    source = JAVA_ADAPTER.read_text(encoding="utf-8")
    release = source[source.index("void release(int number)"):]
    release = release[:release.index("\n    }\n")]
    assert re.search(r"if \(!slot\.complete\(answer\)\) \{\s*return;", release)
    assert release.index("slot.complete(answer)") < release.index('"released"')
