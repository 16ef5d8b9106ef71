"""The driver of rocketmq-client-cpp 1.2.3 (PyPI `rocketmq` 0.4.4): one push consumer in an adapter process.

The library runs in `conformance.clients.cpp_adapter`, a subprocess speaking adapter protocol v1 (JSON lines), so a
crash or a hanging shutdown of the C++ threads cannot take the harness with it: `stop` asks, waits STOP_TIMEOUT_S,
then kills the process group. Each delivery is answered at once by the outcome script — a function of the message
and how many times this run has already delivered it — and recorded with its time, reconsume times and properties.
"""

from __future__ import annotations

import json
import os
import queue
import signal
import subprocess
import sys
import threading
import time
from collections import defaultdict
from collections.abc import Callable
from importlib import util

from attrs import evolve, field, frozen

CLIENT_NAME = "rocketmq-client-cpp"
CLIENT_VERSION = "1.2.3"
BINDING_VERSION = "0.4.4"
READY_TIMEOUT_S = 20.0
STOP_TIMEOUT_S = 15.0


def find_adapter_processes(parent: int | None = None) -> list[int]:
    """Pids of adapter processes whose parent is `parent` (default: this process), read from /proc."""
    parent = os.getpid() if parent is None else parent
    found = []
    for entry in os.listdir("/proc"):
        if not entry.isdigit():
            continue
        try:
            with open(f"/proc/{entry}/cmdline", "rb") as cmdline, open(f"/proc/{entry}/stat") as stat:
                command, fields = cmdline.read(), stat.read().rsplit(")", 1)[1].split()
        except OSError:
            continue
        if b"conformance.clients.cpp_adapter" in command and int(fields[1]) == parent and fields[0] != "Z":
            found.append(int(entry))
    return found


def get_unavailable_reason() -> str | None:
    """Why this platform cannot run the client (no wheel of `rocketmq` 0.4.4), or None."""
    if not sys.platform.startswith("linux"):
        return f"PyPI rocketmq {BINDING_VERSION} ships a manylinux wheel only; this is {sys.platform}"
    if util.find_spec("rocketmq") is None:
        return f"PyPI rocketmq {BINDING_VERSION} is not installed (pip install -e '.[dev]')"
    return None


@frozen
class Delivery:
    """One message handed to the listener: its protocol record, when (harness ms), the answer given."""

    number: int
    time_ms: float
    message: dict
    status: str
    seen_before: int

    @property
    def uniq_key(self) -> str:
        return self.message["properties"].get("UNIQ_KEY", self.message["msgId"])

    @property
    def reconsume_times(self) -> int:
        return self.message["reconsumeTimes"]


OutcomeScript = Callable[[dict, int], str]


@frozen
class StartRequest:
    namesrv: str
    group: str
    topic: str
    instance: str
    mode: str = "concurrently"
    model: str = "clustering"
    config: dict = field(factory=dict)

    def to_line(self) -> dict:
        return {"type": "start", "protocol": 1, "namesrv": self.namesrv, "group": self.group, "topic": self.topic,
                "instance": self.instance, "mode": self.mode, "model": self.model, "config": self.config}


class CppConsumer:
    """A running adapter process with one consumer; use as a context manager so that it always stops."""

    def __init__(self, request: StartRequest, script: OutcomeScript, clock: Callable[[], float] = time.monotonic,
                 log_dir: str | None = None):
        self.request, self.script, self.clock = request, script, clock
        self.deliveries: list[Delivery] = []
        self.errors: list[str] = []
        self.client: dict = {}
        self.seen: dict[str, int] = defaultdict(int)
        self.lines: queue.Queue = queue.Queue()
        self.stopped = threading.Event()
        self.ready = threading.Event()
        self.log_dir = log_dir
        self.process: subprocess.Popen | None = None

    def __enter__(self) -> CppConsumer:
        self.start()
        return self

    def __exit__(self, *exc) -> None:
        self.stop()

    def start(self) -> None:
        env = dict(os.environ, PYTHONUNBUFFERED="1")
        self.process = subprocess.Popen([sys.executable, "-m", "conformance.clients.cpp_adapter"],
                                        stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL,
                                        text=True, env=env, start_new_session=True)
        threading.Thread(target=self.read_lines, name="cpp-adapter-reader", daemon=True).start()
        start = self.request.to_line()
        if self.log_dir:
            start["logDir"] = self.log_dir
        self.send(start)
        threading.Thread(target=self.answer_loop, name="cpp-adapter-answers", daemon=True).start()
        if not self.ready.wait(READY_TIMEOUT_S) or not self.client:
            self.kill()
            raise TimeoutError(f"the {CLIENT_NAME} adapter did not become ready in {READY_TIMEOUT_S} s: {self.errors}")

    def send(self, message: dict) -> None:
        try:
            self.process.stdin.write(json.dumps(message) + "\n")
            self.process.stdin.flush()
        except (BrokenPipeError, ValueError, OSError) as error:
            self.errors.append(f"send {message.get('type')}: {error}")

    def read_lines(self) -> None:
        for raw in self.process.stdout:
            try:
                self.lines.put(json.loads(raw))
            except json.JSONDecodeError:
                self.errors.append(f"not a protocol line: {raw.strip()[:200]}")
        self.lines.put({"type": "eof"})

    def answer_loop(self) -> None:
        while True:
            line = self.lines.get()
            kind = line.get("type")
            if kind == "delivery":
                self.answer(line)
            elif kind == "released":
                self.release(line)
            elif kind == "ready":
                self.client = line["client"]
                self.ready.set()
            elif kind == "error":
                self.errors.append(line["message"])
            elif kind in ("stopped", "eof"):
                self.stopped.set()
                self.ready.set()  # an adapter that ends before `ready` fails the start at once
                return

    def answer(self, line: dict) -> None:
        message = line["messages"][0]
        key = message["properties"].get("UNIQ_KEY", message["msgId"])
        seen = self.seen[key]
        self.seen[key] = seen + 1
        status = self.script(message, seen)
        self.deliveries.append(Delivery(line["delivery"], self.clock() * 1000.0, message, status, seen))
        self.send({"type": "outcome", "delivery": line["delivery"], "status": status})

    def release(self, line: dict) -> None:
        """The adapter answered delivery K itself at stop (the harness's outcome came too late): record that."""
        for index, delivery in enumerate(self.deliveries):
            if delivery.number == line["delivery"]:
                self.deliveries[index] = evolve(delivery, status=line["status"])

    def stop(self) -> None:
        """Ask the adapter to stop; kill its whole process group if it has not within STOP_TIMEOUT_S."""
        if self.process is None or self.process.poll() is not None:
            return
        self.send({"type": "stop"})
        self.stopped.wait(STOP_TIMEOUT_S)
        try:
            self.process.wait(timeout=2.0)
        except subprocess.TimeoutExpired:
            self.errors.append(f"the adapter did not exit within {STOP_TIMEOUT_S} s of stop: killed")
            self.kill()

    def kill(self) -> None:
        if self.process is not None and self.process.poll() is None:
            os.killpg(self.process.pid, signal.SIGKILL)
            self.process.wait(timeout=5.0)

    def wait_for(self, predicate: Callable[[list[Delivery]], bool], timeout_s: float) -> bool:
        """Poll the recorded deliveries until `predicate` holds (True) or `timeout_s` passes (False)."""
        deadline = self.clock() + timeout_s
        while self.clock() < deadline:
            if predicate(list(self.deliveries)):
                return True
            time.sleep(0.02)
        return predicate(list(self.deliveries))


def open_cpp_consumer(request: StartRequest, script: OutcomeScript, log_dir: str | None) -> CppConsumer:
    """The glue's way to make this client's consumer (conformance/run.py's OpenClient)."""
    return CppConsumer(request, script, log_dir=log_dir)
