"""The harness side of one real client's consumer in an adapter process (conformance/runner/clients/ADAPTER.md,
protocol v2; a request v1 can express is sent as v1, so the 4.x adapters keep working unchanged).

A client runs in its own process (`python -m conformance.runner.clients.cpp_adapter`, `java ... Adapter`), so a crash
or a hanging shutdown cannot take the harness with it: `stop` asks, waits `stop_timeout_s`, then kills the process
group. Each delivery is answered at once by the outcome script — a function of the message and how many times this
run has already delivered it — and recorded with its time, reconsume times and properties. A delivery of several
messages (consumeMessageBatchMaxSize > 1) is answered with the first failing status of its messages' scripts and
recorded once per message, under one delivery number.
"""

from __future__ import annotations

import json
import os
import queue
import signal
import subprocess
import tempfile
import threading
import time
from collections import defaultdict
from collections.abc import Callable

from attrs import evolve, field, frozen

from conformance.history.pop_records import Settled
from conformance.history.records import Delivery

# Longer than the broker's 15 s hold of a long-polling pull: a client's shutdown may wait for its held pull to
# return (rocketmq-client-cpp's orderly consumer did, on a loaded machine, and was killed at 15 s).
STOP_TIMEOUT_S = 25.0
SUCCESS_STATUSES = frozenset({"CONSUME_SUCCESS", "SUCCESS", "COMMIT", "ACK"})
STDERR_TAIL = 2000
# How long a kill waits for the killed process to be reaped.
KILL_WAIT_S = 5.0
# How long stop() waits, once the adapter exited, for its last lines to be read.
DRAIN_LIMIT_S = 2.0


def find_adapter_processes(marker: bytes, parent: int | None = None) -> list[int]:
    """Pids of live processes whose command line holds `marker` and whose parent is `parent` (default: this
    process), read from /proc."""
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
        if marker in command and int(fields[1]) == parent and fields[0] != "Z":
            found.append(int(entry))
    return found


# (message record, deliveries of it before this one) -> the listener's status, or the outcome's fields (status and
# context settings such as autoCommit; conformance/runner/clients/ADAPTER.md).
OutcomeScript = Callable[[dict, int], str | dict]


# The config keys protocol v1 has (ADAPTER.md); any other one needs v2.
V1_CONFIG = frozenset({"maxReconsumeTimes", "consumeMessageBatchMaxSize", "pullBatchSize", "consumeTimeout",
                       "suspendCurrentQueueTimeMillis", "pullInterval"})


@frozen
class StartRequest:
    """`start`: `namesrv` for a remoting client, `endpoints` (the proxy's gRPC address) for a 5.x gRPC one; `api`
    "push" (a push consumer) or "simple" (a 5.x SimpleConsumer, v2); `fifo`: the group consumes orderly (v2)."""

    namesrv: str
    group: str
    topic: str
    instance: str
    mode: str = "concurrently"
    model: str = "clustering"
    config: dict = field(factory=dict)
    api: str = "push"
    endpoints: str = ""
    fifo: bool = False
    # The subscription's tag expression (v2 when not "*": a 4.x adapter subscribes "*").
    expression: str = "*"

    @property
    def protocol(self) -> int:
        """1 when v1 says all of it (a 4.x adapter reads it), else 2."""
        v1 = (self.api == "push" and not self.endpoints and not self.fifo and set(self.config) <= V1_CONFIG
              and self.expression == "*")
        return 1 if v1 else 2

    def to_line(self) -> dict:
        line = {"type": "start", "protocol": self.protocol, "namesrv": self.namesrv, "group": self.group,
                "topic": self.topic, "instance": self.instance, "mode": self.mode, "model": self.model,
                "config": self.config}
        if self.protocol == 2:
            line.update(api=self.api, fifo=self.fifo, **({"endpoints": self.endpoints} if self.endpoints else {}),
                        **({"expression": self.expression} if self.expression != "*" else {}))
        return line


class AdapterConsumer:
    """A running adapter process with one consumer; use as a context manager so that it always stops.

    A subclass names its client (`client_name`), its command (`get_argv`) and how long a start may take."""

    client_name = "adapter"
    ready_timeout_s = 20.0
    # True: an adapter that ends before the harness asked it to stop (its client died under it) is an error.
    reports_early_exit = False

    def __init__(self, request: StartRequest, script: OutcomeScript, clock: Callable[[], float] = time.monotonic,
                 log_dir: str | None = None):
        self.request, self.script, self.clock = request, script, clock
        self.deliveries: list[Delivery] = []
        # Every protocol line either way, in order: ("to-adapter" | "from-adapter", the parsed object).
        self.transcript: list[tuple[str, dict]] = []
        self.errors: list[str] = []
        # v2: errors the adapter marked `startup` (a receive before the client's settings reached the proxy), and
        # the answers of a SimpleConsumer's acks and changes.
        self.startup_errors: list[str] = []
        # v2: a failed call the adapter retried itself (a receive while the proxy restarted): recorded, no problem.
        self.retried_errors: list[str] = []
        self.settlements: list[Settled] = []
        self.client: dict = {}
        self.ready_line: dict = {}
        self.seen: dict[str, int] = defaultdict(int)
        # `released` lines of deliveries not yet recorded (an adapter that wrote the release first), by number.
        self.early_releases: dict[int, str] = {}
        self.lines: queue.Queue = queue.Queue()
        self.stopped = threading.Event()
        # Set when the adapter's output ended: what it wrote after `stopped` (a listener the client's shutdown still
        # ran, and its release) is in the history too.
        self.drained = threading.Event()
        self.ready = threading.Event()
        self.log_dir = log_dir
        self.stderr_path: str | None = None
        self.process: subprocess.Popen | None = None
        # Set once the harness killed the adapter (kill): what its pipes do after that is no error of the client.
        self.dead = False
        # When start() began (the driver's clock, s): the run waits for the client's first rebalance from here.
        self.started_s: float | None = None

    def __enter__(self) -> AdapterConsumer:
        self.start()
        return self

    def __exit__(self, *exc) -> None:
        self.stop()

    def get_argv(self) -> list[str]:
        raise NotImplementedError

    def get_env(self) -> dict[str, str]:
        return dict(os.environ)

    def open_stderr(self):
        """The adapter's stderr: a file in the log directory (its tail goes into a failed start's error), or none."""
        if not self.log_dir:
            return subprocess.DEVNULL
        handle = tempfile.NamedTemporaryFile("wb", dir=self.log_dir, prefix=f"{self.request.instance}-",
                                             suffix=".stderr", delete=False)
        self.stderr_path = handle.name
        return handle

    def get_stderr_tail(self) -> str:
        if self.stderr_path is None:
            return ""
        with open(self.stderr_path, "rb") as stderr:
            return stderr.read()[-STDERR_TAIL:].decode("utf-8", "replace")

    def start(self) -> None:
        self.started_s = self.clock()
        stderr = self.open_stderr()
        try:
            self.process = subprocess.Popen(self.get_argv(), stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                                            stderr=stderr, text=True, env=self.get_env(), start_new_session=True)
        finally:
            if stderr is not subprocess.DEVNULL:
                stderr.close()
        threading.Thread(target=self.read_lines, name=f"{self.client_name}-reader", daemon=True).start()
        start = self.request.to_line()
        if self.log_dir:
            start["logDir"] = self.log_dir
        self.send(start)
        threading.Thread(target=self.answer_loop, name=f"{self.client_name}-answers", daemon=True).start()
        if not self.ready.wait(self.ready_timeout_s) or not self.client:
            self.kill()
            raise TimeoutError(f"the {self.client_name} adapter did not become ready (limit {self.ready_timeout_s} s): "
                               f"{self.errors}; stderr tail: {self.get_stderr_tail()}")

    def send(self, message: dict) -> None:
        self.transcript.append(("to-adapter", message))
        try:
            self.process.stdin.write(json.dumps(message) + "\n")
            self.process.stdin.flush()
        except (BrokenPipeError, ValueError, OSError) as error:
            if not self.dead and not self.is_stop_sent():  # an outcome for a delivery made as it exited: no matter
                self.errors.append(f"send {message.get('type')}: {error}")

    def read_lines(self) -> None:
        for raw in self.process.stdout:
            try:
                line = json.loads(raw)
                self.transcript.append(("from-adapter", line))
                self.lines.put(line)
            except json.JSONDecodeError:
                if not self.dead:  # a line cut short by the kill
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
            elif kind == "ready" and line.get("protocol") != self.request.protocol:
                self.errors.append(f"ready in protocol {line.get('protocol')}, start was {self.request.protocol}")
                self.ready.set()  # the start fails: no client
            elif kind == "ready":
                self.client, self.ready_line = line["client"], line
                self.ready.set()
            elif kind == "settled":
                self.settlements.append(Settled(line["delivery"], self.clock() * 1000.0, line["action"],
                                                   str(line["code"]), line.get("invisibleMs", 0)))
            elif kind == "error" and line.get("startup"):
                self.startup_errors.append(line["message"])
            elif kind == "error" and line.get("retried"):
                self.retried_errors.append(line["message"])
            elif kind == "error":
                self.errors.append(line["message"])
                if not self.client:
                    self.ready.set()  # an error instead of `ready` fails the start at once
            elif kind == "stopped":
                self.stopped.set()
            elif kind == "eof":
                if self.reports_early_exit and not self.dead and not self.is_stop_sent():
                    self.errors.append(f"the {self.client_name} adapter exited before it was stopped; stderr tail: "
                                       f"{self.get_stderr_tail()}")
                self.stopped.set()
                self.ready.set()  # an adapter that ends before `ready` fails the start at once
                self.drained.set()
                return

    def is_stop_sent(self) -> bool:
        return any(direction == "to-adapter" and line.get("type") == "stop" for direction, line in self.transcript)

    def answer(self, line: dict) -> None:
        """Answer delivery K with the first failing status of its messages' scripts (else the first's)."""
        answered = []
        for message in line["messages"]:
            key = message["properties"].get("UNIQ_KEY", message["msgId"])
            seen = self.seen[key]
            self.seen[key] = seen + 1
            outcome = self.script(message, seen)
            answered.append((message, seen, outcome if isinstance(outcome, dict) else {"status": outcome}))
        failing = [outcome for _message, _seen, outcome in answered if outcome["status"] not in SUCCESS_STATUSES]
        outcome = failing[0] if failing else answered[0][2]
        at = self.clock() * 1000.0
        status = self.early_releases.pop(line["delivery"], outcome["status"])
        self.deliveries.extend(Delivery(line["delivery"], at, message, status, seen) for message, seen, _ in answered)
        self.send({"type": "outcome", "delivery": line["delivery"], **outcome})

    def release(self, line: dict) -> None:
        """The adapter answered delivery K itself at stop (the harness's outcome came too late): record that; a
        release before its delivery line is kept for it (the client returned the release, not the script's status)."""
        found = False
        for index, delivery in enumerate(self.deliveries):
            if delivery.number == line["delivery"]:
                self.deliveries[index], found = evolve(delivery, status=line["status"]), True
        if not found:
            self.early_releases[line["delivery"]] = line["status"]

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
        self.drained.wait(DRAIN_LIMIT_S)

    def kill(self) -> None:
        """SIGKILL the adapter's whole process group at once (the client persists nothing) and mark it dead; waits
        at most KILL_WAIT_S for the process to be reaped, never hangs."""
        self.dead = True
        if self.process is None or self.process.poll() is not None:
            return
        try:
            os.killpg(self.process.pid, signal.SIGKILL)
        except ProcessLookupError:
            pass
        try:
            self.process.wait(timeout=KILL_WAIT_S)
        except subprocess.TimeoutExpired:
            self.errors.append(f"the adapter was not reaped within {KILL_WAIT_S} s of SIGKILL")
        self.stopped.set()

    def wait_for(self, predicate: Callable[[list[Delivery]], bool], timeout_s: float) -> bool:
        """Poll the recorded deliveries until `predicate` holds (True) or `timeout_s` passes (False)."""
        deadline = self.clock() + timeout_s
        while self.clock() < deadline:
            if predicate(list(self.deliveries)):
                return True
            time.sleep(0.02)
        return predicate(list(self.deliveries))
