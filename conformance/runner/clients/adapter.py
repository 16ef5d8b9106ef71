"""The harness side of the adapter protocol (conformance/runner/clients/ADAPTER.md): run an adapter subprocess, talk
JSON lines.

Every read has a time limit, stderr is drained by a thread into a bounded buffer, and the process is always
killed when the context ends.
"""

from __future__ import annotations

import collections
import json
import queue
import subprocess
import threading

PROTOCOL = 1  # what start() sends unless told; versions: ADAPTER.md
VERSIONS = (1, 2)
STDERR_LIMIT = 64 * 1024
START_TIMEOUT = 60.0
READ_TIMEOUT = 30.0
STOP_TIMEOUT = 20.0


class AdapterError(RuntimeError):
    """The adapter broke the protocol, reported an error, exited or did not answer in time."""


class AdapterProcess:
    """`with AdapterProcess(argv) as adapter:` a running adapter; `send` and `receive` JSON objects."""

    def __init__(self, argv: list[str], env: dict[str, str] | None = None, cwd: str | None = None):
        self.argv, self.env, self.cwd = argv, env, cwd
        self.process: subprocess.Popen | None = None
        self._lines: queue.Queue = queue.Queue()
        self._stderr: collections.deque = collections.deque()
        self._stderr_size = 0
        self._threads: list[threading.Thread] = []

    def __enter__(self) -> AdapterProcess:
        self.process = subprocess.Popen(self.argv, stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                                        stderr=subprocess.PIPE, env=self.env, cwd=self.cwd)
        for target in (self._pump_stdout, self._pump_stderr):
            thread = threading.Thread(target=target, daemon=True)
            thread.start()
            self._threads.append(thread)
        return self

    def __exit__(self, *exc) -> None:
        self.kill()

    def _pump_stdout(self) -> None:
        for line in self.process.stdout:
            self._lines.put(line)
        self._lines.put(None)

    def _pump_stderr(self) -> None:
        for line in self.process.stderr:
            self._stderr.append(line)
            self._stderr_size += len(line)
            while self._stderr_size > STDERR_LIMIT and len(self._stderr) > 1:
                self._stderr_size -= len(self._stderr.popleft())

    @property
    def stderr(self) -> str:
        return b"".join(self._stderr).decode("utf-8", "replace")

    def send(self, message: dict) -> None:
        try:
            self.process.stdin.write(json.dumps(message, separators=(",", ":")).encode("utf-8") + b"\n")
            self.process.stdin.flush()
        except (BrokenPipeError, ValueError) as error:
            raise AdapterError(f"adapter stdin closed ({error}); stderr tail: {self.stderr[-2000:]}") from error

    def receive(self, timeout: float = READ_TIMEOUT) -> dict:
        try:
            line = self._lines.get(timeout=timeout)
        except queue.Empty:
            raise AdapterError(f"no message from the adapter within {timeout} s") from None
        if line is None:
            self._lines.put(None)
            self.process.wait(timeout=10)
            self._threads[1].join(timeout=5)  # the stderr tail is complete once the pump ends
            raise AdapterError(f"adapter exited ({self.process.poll()}); stderr tail: {self.stderr[-2000:]}")
        try:
            message = json.loads(line)
        except json.JSONDecodeError as error:
            raise AdapterError(f"adapter wrote a line that is not JSON: {line[:200]!r}") from error
        if not isinstance(message, dict) or "type" not in message:
            raise AdapterError(f"adapter message without a type: {line[:200]!r}")
        return message

    def start(self, protocol: int = PROTOCOL, **fields) -> dict:
        """Send `start` and wait for `ready` in the same protocol version; returns the ready message (with the
        client's name and version)."""
        if protocol not in VERSIONS:
            raise AdapterError(f"protocol {protocol}: the harness speaks {VERSIONS}")
        self.send({"type": "start", "protocol": protocol, **fields})
        ready = self.receive(START_TIMEOUT)
        if ready["type"] != "ready" or ready.get("protocol") != protocol:
            raise AdapterError(f"expected ready with protocol {protocol}, got {ready}")
        return ready

    def stop(self) -> None:
        """Send `stop`, skip deliveries still arriving, wait for `stopped` (then the process is killed anyway)."""
        self.send({"type": "stop"})
        while self.receive(STOP_TIMEOUT)["type"] != "stopped":
            pass

    def kill(self) -> None:
        if self.process is None:
            return
        if self.process.poll() is None:
            self.process.kill()
        self.process.wait(timeout=10)
        for stream in (self.process.stdin, self.process.stdout, self.process.stderr):
            stream.close()
        for thread in self._threads:
            thread.join(timeout=5)
