"""The asyncio name server + broker on loopback: frames in, one task per request, responses matched by opaque.

Everything runs on one event loop, so the broker adapter's model state needs no lock. Model time is monotonic
milliseconds since start; the delay timer is one task that sleeps until the model's next due time.
"""

from __future__ import annotations

import asyncio
import contextlib
import time

import attrs

from conformance.codec.codes import ResponseCode
from conformance.codec.headers import get_missing_field
from conformance.codec.remoting import (
    FrameError,
    RemotingCommand,
    decode_frame,
    encode_frame,
    make_response,
    read_frame,
)
from conformance.runner.server.broker_adapter import BrokerAdapter, create_broker_adapter
from conformance.runner.server.handlers import HANDLERS, describe_body
from conformance.runner.settings import BrokerSettings, Faults


@attrs.frozen
class TraceEntry:
    """One frame on the wire: when (model ms), which endpoint, which way ("in" = to the server), the command."""

    at: int
    endpoint: str
    direction: str
    peer: str
    command: RemotingCommand
    raw: bytes = b""  # the frame's bytes as received (inbound only)


@attrs.define(eq=False)
class Server:
    settings: BrokerSettings
    faults: Faults = attrs.field(factory=Faults)
    adapter: BrokerAdapter = None
    trace: list[TraceEntry] = attrs.field(factory=list)
    findings: list[dict] = attrs.field(factory=list)
    consumers: dict[str, dict[str, dict]] = attrs.field(factory=dict)
    namesrv_addr: str = ""
    broker_addr: str = ""
    _started: float = 0.0
    _servers: list = attrs.field(factory=list)
    _writers: set = attrs.field(factory=set)
    _tasks: set = attrs.field(factory=set)
    _changed: asyncio.Future | None = None

    def __attrs_post_init__(self):
        if self.adapter is None:
            self.adapter = create_broker_adapter(self.settings)

    async def start(self) -> Server:
        self._started = time.monotonic()
        self.adapter.epoch_ms = int(time.time() * 1000)
        for endpoint in ("namesrv", "broker"):
            server = await asyncio.start_server(
                lambda r, w, e=endpoint: self._serve(r, w, e), host="127.0.0.1", port=0)
            self._servers.append(server)
            port = server.sockets[0].getsockname()[1]
            setattr(self, f"{endpoint}_addr", f"127.0.0.1:{port}")
            if endpoint == "broker":
                self.adapter.store_host = ("127.0.0.1", port)
        self._spawn(self._run_timer())
        return self

    async def stop(self) -> None:
        for server in self._servers:
            server.close()
        for writer in list(self._writers):
            writer.close()
        for task in list(self._tasks):
            task.cancel()
        await asyncio.gather(*self._tasks, return_exceptions=True)
        for server in self._servers:
            await server.wait_closed()

    async def __aenter__(self) -> Server:
        return await self.start()

    async def __aexit__(self, *exc) -> None:
        await self.stop()

    def now(self) -> int:
        return int((time.monotonic() - self._started) * 1000)

    def settings_allow_auto_create(self, topic: str) -> bool:
        return bool(topic) and not topic.startswith(("%RETRY%", "%DLQ%"))

    def advance(self) -> int:
        """Let the model's delay timer fire at every due time up to now, in order; return now."""
        now = self.now()
        while (due := self.adapter.next_timer_due()) is not None and due <= now:
            if self.adapter.fire_timer(due):
                self.notify_store_changed()
            if self.adapter.next_timer_due() == due:
                self.findings.append({"kind": "timer-stuck", "due": due})
                break
        return now

    def store_changed_waiter(self) -> asyncio.Future:
        if self._changed is None or self._changed.done():
            self._changed = asyncio.get_running_loop().create_future()
        return asyncio.shield(self._changed)

    def notify_store_changed(self) -> None:
        if self._changed is not None and not self._changed.done():
            self._changed.set_result(None)

    async def _run_timer(self) -> None:
        while True:
            waiter = self.store_changed_waiter()
            due = self.adapter.next_timer_due()
            timeout = None if due is None else max(0, due - self.now()) / 1000
            try:
                await asyncio.wait_for(waiter, timeout)
            except TimeoutError:
                pass
            self.advance()

    def _spawn(self, coroutine) -> asyncio.Task:
        task = asyncio.get_running_loop().create_task(coroutine)
        self._tasks.add(task)
        task.add_done_callback(self._tasks.discard)
        return task

    def _record(self, endpoint: str, direction: str, peer: str, command: RemotingCommand, raw: bytes = b"") -> None:
        self.trace.append(TraceEntry(self.now(), endpoint, direction, peer, command, raw))

    async def _serve(self, reader, writer, endpoint: str) -> None:
        self._writers.add(writer)
        host, port = writer.get_extra_info("peername")[:2]
        peer, lock = f"{host}:{port}", asyncio.Lock()
        try:
            while True:
                raw = await read_frame(reader)
                command = decode_frame(raw)
                self._record(endpoint, "in", peer, command, raw)
                if not command.is_response:
                    self._spawn(self._answer(command, writer, lock, endpoint, peer))
        except (asyncio.IncompleteReadError, ConnectionError, FrameError) as error:
            if isinstance(error, FrameError):
                self.findings.append({"kind": "bad-frame", "endpoint": endpoint, "error": str(error)})
        finally:
            self._writers.discard(writer)
            writer.close()

    async def _answer(self, request: RemotingCommand, writer, lock, endpoint: str, peer: str) -> None:
        response = await self.dispatch(request, endpoint)
        if response is None or request.is_oneway:
            return
        async with lock:
            self._record(endpoint, "out", peer, response)
            writer.write(encode_frame(response))
            with contextlib.suppress(ConnectionError):  # the client closed its connection first (its own timeout)
                await writer.drain()

    async def dispatch(self, request: RemotingCommand, endpoint: str) -> RemotingCommand | None:
        handler = HANDLERS.get(request.code)
        if handler is None:
            self.findings.append({"kind": "unsupported-request", "code": request.code, "endpoint": endpoint,
                                  "ext_fields": dict(request.ext_fields), "body": describe_body(request.body)})
            return make_response(request, ResponseCode.REQUEST_CODE_NOT_SUPPORTED,
                                 f" request type {request.code} not supported")
        missing = get_missing_field(request.code, request.ext_fields)
        if missing is not None:
            return make_response(request, ResponseCode.SYSTEM_ERROR, f"the custom field <{missing}> is null")
        try:
            return await handler(self, request)
        except (KeyError, ValueError, TypeError) as error:
            self.findings.append({"kind": "handler-error", "code": request.code, "error": repr(error)})
            return make_response(request, ResponseCode.SYSTEM_ERROR, f"harness could not read the request: {error}")

    def set_broker_perm(self, perm: int) -> None:
        """Fault hook: make the broker read-only (perm 4) or writeable again (6); the route shows it too."""
        self.adapter.set_perm(perm)


def start_server(settings: BrokerSettings | None = None, faults: Faults | None = None) -> Server:
    """A server not yet started: `async with start_server(...) as server:` starts and always stops it."""
    return Server(settings or BrokerSettings(), faults or Faults())
