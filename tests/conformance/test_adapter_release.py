"""The adapters' release at stop never contradicts an outcome that came first: a blocked listener is answered
RECONSUME_LATER at stop (so the client's shutdown is not held), but one whose outcome the harness already sent
returns that outcome, and no `released` line says otherwise — conformance-java-faults drew exactly this race: the
history said RECONSUME_LATER for a delivery the Java client had consumed, and the checker found a loss that the
client never made."""

from __future__ import annotations

import re
import sys
import threading
import time
from pathlib import Path

import pytest

from conformance.runner.clients.adapter_io import Deliveries
from conformance.runner.clients.driver import AdapterConsumer, StartRequest

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
    deliveries.announced.add(7)
    deliveries.answer({"delivery": 7, "status": "CONSUME_SUCCESS"})
    deliveries.release_all()
    assert slot[0].is_set() and slot[1] == [{"delivery": 7, "status": "CONSUME_SUCCESS"}]
    assert lines.sent == []


def test_a_listener_still_waiting_at_stop_is_released_and_a_late_outcome_does_not_change_it():
    lines = Lines()
    deliveries = Deliveries(lines)
    deliveries.waiting[3] = slot = (threading.Event(), [])
    deliveries.announced.add(3)
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


class HeldLines(Lines):
    """A channel whose delivery line is written only once `go` is set: the callback registered its slot and is
    about to write its line when the stop comes."""

    def __init__(self):
        super().__init__()
        self.go, self.writing = threading.Event(), threading.Event()

    def send(self, message: dict) -> None:
        if message["type"] == "delivery":
            self.writing.set()
            self.go.wait(5)
        super().send(message)


def test_a_release_never_reaches_the_harness_before_its_delivery_line():
    """The CI rehearsal's conformance-java-faults: the stop released a listener whose delivery line was not yet
    written; the `released` line came first, the driver ignored it (an unknown delivery), then recorded the delivery
    with the script's CONSUME_SUCCESS — and the client sent the copy back: CC-02 "accepted CONSUME_SUCCESS"."""
    lines = HeldLines()
    deliveries = Deliveries(lines)
    returned: list = []
    thread = threading.Thread(target=lambda: returned.append(deliveries.deliver({"msgId": "m0"})), daemon=True)
    thread.start()
    assert lines.writing.wait(5)
    deliveries.release_all()  # the slot exists, its line is not written
    lines.go.set()
    thread.join(5)
    assert returned == [{"status": "RECONSUME_LATER"}]
    assert [(line["type"], line["delivery"]) for line in lines.sent] == [("delivery", 1), ("released", 1)]


def test_the_java_adapter_releases_at_stop_only_deliveries_whose_line_it_wrote():
    """Adapter.java: a delivery is `announced` after its line is written, the stop releases the announced ones,
    and a delivery announced after the stop began releases itself."""
    source = JAVA_ADAPTER.read_text(encoding="utf-8")
    deliver = source[source.index("JSONObject deliver("):source.index("void release(int number)")]
    assert deliver.index("send(line);") < deliver.index("announced.add(number);") < deliver.index("if (stopping)")
    serve = source[source.index("int serve("):]
    assert re.search(r"stopping = true;\s*for \(Integer number : new ArrayList<>\(announced\)\)", serve)


class RecordingDriver(AdapterConsumer):
    """The driver's line handling without a process: what it sends to the adapter is kept."""

    def send(self, message: dict) -> None:
        self.transcript.append(("to-adapter", message))


def test_the_driver_keeps_a_release_that_came_before_its_delivery_line():
    """Whatever an adapter writes first, the history keeps the answer the client got: a `released` line for a
    delivery not yet recorded applies to it when its line comes."""
    driver = RecordingDriver(StartRequest("127.0.0.1:1", "G", "T", "i"), lambda message, seen: "CONSUME_SUCCESS")
    message = {"msgId": "a", "properties": {"UNIQ_KEY": "m0"}, "commitLogOffset": 154, "reconsumeTimes": 0}
    driver.release({"type": "released", "delivery": 2, "status": "RECONSUME_LATER"})
    driver.answer({"type": "delivery", "delivery": 2, "messages": [message]})
    driver.answer({"type": "delivery", "delivery": 3, "messages": [message | {"msgId": "b"}]})
    assert [(d.number, d.status) for d in driver.deliveries] == [(2, "RECONSUME_LATER"), (3, "CONSUME_SUCCESS")]


# Answers `start`, and at `stop` writes `stopped`, then a delivery its client's shutdown still made and that
# delivery's release, and exits (a Java consume task queued before the shutdown runs while it persists offsets).
LATE = r"""
import json, sys
def send(line):
    print(json.dumps(line), flush=True)
sys.stdin.readline()
send({"type": "ready", "protocol": 1, "client": {"name": "late", "version": "1"}})
for text in sys.stdin:
    if json.loads(text)["type"] == "stop":
        break
message = {"msgId": "m0", "topic": "T", "queueId": 0, "queueOffset": 0, "commitLogOffset": 154, "reconsumeTimes": 0,
           "properties": {"UNIQ_KEY": "m0"}}
send({"type": "stopped"})
send({"type": "delivery", "delivery": 1, "thread": "t", "messages": [message]})
send({"type": "released", "delivery": 1, "status": "RECONSUME_LATER"})
"""


class LateAdapter(AdapterConsumer):
    client_name = "late"

    def get_argv(self) -> list[str]:
        return [sys.executable, "-c", LATE]


@pytest.mark.timeout(30)
def test_what_an_adapter_writes_after_stopped_is_in_the_history():
    consumer = LateAdapter(StartRequest("127.0.0.1:1", "G", "T", "i"), lambda message, seen: "CONSUME_SUCCESS")
    consumer.start()
    consumer.stop()
    assert [(d.number, d.status) for d in consumer.deliveries] == [(1, "RECONSUME_LATER")]
    assert consumer.errors == []  # the outcome for that delivery met a closed pipe: no error of the client


def test_the_java_adapter_answers_an_interrupted_listener_as_released():
    """4.9.8's shutdown interrupts the consume threads (ThreadUtils.shutdownGracefully with awaitTerminate 0 calls
    shutdownNow): a listener interrupted while it waits for its outcome is released — the client gets the release
    status and the harness a `released` line — instead of throwing, which the client reads as a failure the history
    never shows."""
    source = JAVA_ADAPTER.read_text(encoding="utf-8")
    deliver = source[source.index("JSONObject deliver("):source.index("void release(int number)")]
    interrupted = deliver[deliver.index("catch (InterruptedException e)"):]
    interrupted = interrupted[:interrupted.index("} catch")]
    assert interrupted.index("release(number);") < interrupted.index("return slot.join();")
    assert "throw new" not in interrupted
