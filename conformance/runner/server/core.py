"""The asyncio name server + broker on loopback: frames in, one task per request, responses matched by opaque.

Everything runs on one event loop, so the broker adapter's model state needs no lock. Model time is monotonic
milliseconds since start; the delay timer is one task that sleeps until the model's next due time. A server whose
profile has server-side retry (5.x) also answers POP requests (pop_handlers.py), runs the revive service on the same
timer, and serves the proxy's gRPC MessagingService (grpc_service.py) at ``proxy_addr``.
"""

from __future__ import annotations

import asyncio
import contextlib
import time

import attrs

from conformance.codec.codes import HEART_BEAT, ResponseCode
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
from conformance.runner.server.handlers import HANDLERS, describe_body, get_registrations, unregister_channel
from conformance.runner.server.listener import close_listener, listen
from conformance.runner.server.pop_adapter import PopAdapter, create_pop_adapter
from conformance.runner.server.pop_handlers import POP_HANDLERS, get_notified_topic
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
    connection: int = -1  # the connection's number, unique over the server's life (restarts included)


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
    # Per endpoint ("namesrv", "broker"): its listening server (None while stopped), port, open connections and
    # the answers being computed on them.
    _servers: dict = attrs.field(factory=dict)
    _ports: dict = attrs.field(factory=dict)
    _writers: dict = attrs.field(factory=lambda: {"namesrv": set(), "broker": set()})
    _answering: dict = attrs.field(factory=lambda: {"namesrv": set(), "broker": set()})
    _tasks: set = attrs.field(factory=set)
    _connections: int = 0
    # Per consumer (group, clientID): the broker connection it last heartbeated on (its channel, as the broker
    # keeps it): closing that connection unregisters it.
    _channels: dict = attrs.field(factory=dict)
    # The endpoints stopped by a fault (kill_broker, stop_namesrv) and not yet started again.
    down: set = attrs.field(factory=set)
    # The endpoints paused by a fault (pause_endpoint), each with the event set when it answers again.
    _resumed: dict = attrs.field(factory=dict)
    _changed: asyncio.Future | None = None
    # 5.x: the POP state and the proxy (None for a 4.x profile), the gRPC server and its address, and per topic the
    # future a held POP or receive waits on for a new message.
    pop: PopAdapter | None = None
    proxy_addr: str = ""
    _grpc: object = None
    _grpc_service: object = None  # the module grpc_service.py, imported by a 5.x server's start
    _arrivals: dict = attrs.field(factory=dict)

    def __attrs_post_init__(self):
        if self.adapter is None:
            self.adapter = create_broker_adapter(self.settings)
        if self.pop is None:
            self.pop = create_pop_adapter(self.adapter, self.settings)

    async def start(self) -> Server:
        self._started = time.monotonic()
        self.adapter.epoch_ms = int(time.time() * 1000)
        for endpoint in ("namesrv", "broker"):
            await self.open_endpoint(endpoint, 0)
            port = self._ports[endpoint]
            setattr(self, f"{endpoint}_addr", f"127.0.0.1:{port}")
            if endpoint == "broker":
                self.adapter.store_host = ("127.0.0.1", port)
        if self.pop is not None:
            from conformance.runner.server import grpc_service  # grpcio: only a 5.x server needs it

            self._grpc_service = grpc_service
            self._grpc, port = await grpc_service.start_grpc(self)
            self.proxy_addr = f"127.0.0.1:{port}"
        self._spawn(self._run_timer())
        return self

    async def stop(self) -> None:
        if self._grpc is not None:
            await self._grpc_service.stop_grpc(self._grpc)
            self._grpc = None
        for endpoint in ("namesrv", "broker"):
            await self.close_endpoint(endpoint)
        for task in list(self._tasks):
            task.cancel()
        await asyncio.gather(*self._tasks, return_exceptions=True)

    async def __aenter__(self) -> Server:
        return await self.start()

    async def __aexit__(self, *exc) -> None:
        await self.stop()

    def now(self) -> int:
        return int((time.monotonic() - self._started) * 1000)

    def settings_allow_auto_create(self, topic: str) -> bool:
        return bool(topic) and not topic.startswith(("%RETRY%", "%DLQ%"))

    def advance(self) -> int:
        """Let the model's delay timer fire at every due time up to now, in order (not while the broker is killed);
        return now."""
        now = self.now()
        if "broker" in self.down:
            return now
        while (due := self.adapter.next_timer_due()) is not None and due <= now:
            if self.adapter.fire_timer(due):
                self.notify_store_changed()
            if self.adapter.next_timer_due() == due:
                self.findings.append({"kind": "timer-stuck", "due": due})
                break
        if self.pop is not None and (due := self.pop.next_due()) is not None and due <= now:
            for topic in self.pop.run_due(now):
                self.notify_arrival(get_notified_topic(topic))
            self.notify_store_changed()
        return now

    def next_due(self) -> int | None:
        """The earliest time the delay timer or (5.x) the revive service has something to do."""
        dues = [self.adapter.next_timer_due(), self.pop.next_due() if self.pop is not None else None]
        return min((due for due in dues if due is not None), default=None)

    def send(self, topic: str, queue_id: int, body: bytes, properties: dict[str, str]) -> tuple[int, object]:
        """A message stored as a send of the proxy's (gRPC SendMessage) stores it: (the broker's code, what it
        stored or None); a held pop or receive of the topic wakes."""
        now = self.advance()
        code, _remark, stored, _rules = self.adapter.send(topic, queue_id, body, properties, 0,
                                                          self.adapter.epoch_ms + now, (None, None), now)
        if stored is not None:
            self.notify_store_changed()
            self.notify_arrival(topic)
        return code, stored

    def arrival_waiter(self, topic: str) -> asyncio.Future:
        """A future set when a message next arrives in `topic` (what a held POP or receive waits on)."""
        future = self._arrivals.get(topic)
        if future is None or future.done():
            future = self._arrivals[topic] = asyncio.get_running_loop().create_future()
        return asyncio.shield(future)

    def notify_arrival(self, topic: str | None) -> None:
        future = self._arrivals.pop(topic, None) if topic else None
        if future is not None and not future.done():
            future.set_result(None)

    async def wait(self, waiter: asyncio.Future, remaining_ms: int) -> None:
        """Until `waiter` is set or `remaining_ms` passed."""
        try:
            await asyncio.wait_for(waiter, remaining_ms / 1000)
        except TimeoutError:
            pass

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
            due = self.next_due()
            timeout = None if due is None else max(0, due - self.now()) / 1000
            try:
                await asyncio.wait_for(waiter, timeout)
            except TimeoutError:
                pass
            self.advance()

    def _spawn(self, coroutine, endpoint: str | None = None) -> asyncio.Task:
        task = asyncio.get_running_loop().create_task(coroutine)
        for tasks in (self._tasks, *([self._answering[endpoint]] if endpoint else [])):
            tasks.add(task)
            task.add_done_callback(tasks.discard)
        return task

    def _record(self, endpoint: str, direction: str, peer: tuple[str, int], command: RemotingCommand,
                raw: bytes = b"") -> None:
        self.trace.append(TraceEntry(self.now(), endpoint, direction, peer[0], command, raw, peer[1]))

    async def _serve(self, reader, writer, endpoint: str) -> None:
        if endpoint in self.down:  # accepted just before the endpoint closed
            writer.transport.abort()
            return
        self._writers[endpoint].add(writer)
        host, port = writer.get_extra_info("peername")[:2]
        self._connections += 1
        peer, lock = (f"{host}:{port}", self._connections), asyncio.Lock()
        try:
            while True:
                raw = await read_frame(reader)
                command = decode_frame(raw)
                self._record(endpoint, "in", peer, command, raw)
                if endpoint == "broker" and command.code == HEART_BEAT and not command.is_response:
                    self._channels.update(dict.fromkeys(get_registrations(command), peer))
                if not command.is_response:
                    self._spawn(self._answer(command, writer, lock, endpoint, peer), endpoint)
        except (asyncio.IncompleteReadError, ConnectionError, FrameError) as error:
            if isinstance(error, FrameError):
                self.findings.append({"kind": "bad-frame", "endpoint": endpoint, "error": str(error)})
        finally:
            self._writers[endpoint].discard(writer)
            writer.close()
            if endpoint == "broker":
                self._close_channel(peer)

    def _close_channel(self, peer: tuple[str, int]) -> None:
        closed = {key for key, channel in self._channels.items() if channel == peer}
        unregister_channel(self, closed)
        for key in closed:
            del self._channels[key]

    async def _answer(self, request: RemotingCommand, writer, lock, endpoint: str, peer: tuple[str, int]) -> None:
        resumed = self._resumed.get(endpoint)
        if resumed is not None:
            await resumed.wait()
        response = await self.dispatch(request, endpoint)
        if response is None or request.is_oneway or writer.is_closing():
            return
        async with lock:
            self._record(endpoint, "out", peer, response)
            writer.write(encode_frame(response))
            with contextlib.suppress(ConnectionError):  # the client closed its connection first (its own timeout)
                await writer.drain()

    async def dispatch(self, request: RemotingCommand, endpoint: str) -> RemotingCommand | None:
        handler = HANDLERS.get(request.code) or (POP_HANDLERS.get(request.code) if self.pop is not None else None)
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

    async def open_endpoint(self, endpoint: str, port: int | None = None) -> None:
        """Listen for `endpoint` ("namesrv" or "broker") on `port` (0: a fresh one; None: the port it had)."""
        port = self._ports.get(endpoint, 0) if port is None else port
        server = await listen(lambda r, w, e=endpoint: self._serve(r, w, e), port)
        self._servers[endpoint], self._ports[endpoint] = server, server.sockets[0].getsockname()[1]
        self.down.discard(endpoint)

    async def close_endpoint(self, endpoint: str) -> None:
        """Stop listening for `endpoint` and drop its connections abruptly, as when its process dies: each client
        sees its connection closed, a new connect is refused; the answers being computed on them are dropped."""
        self.down.add(endpoint)
        server = self._servers.pop(endpoint, None)
        if server is not None:
            await close_listener(server)
        for writer in list(self._writers[endpoint]):
            writer.transport.abort()
        tasks = list(self._answering[endpoint])
        for task in tasks:
            task.cancel()
        await asyncio.gather(*tasks, return_exceptions=True)

    async def kill_broker(self) -> None:
        """Fault: the broker killed (kill -9). Its port closes, its connections drop, and the model's broker loses
        what a 4.9.8 broker keeps only in memory (BrokerAdapter.crash): consumer offsets and delay offsets not yet
        flushed, queue locks, registered consumers. The store is kept. The delay timer stops until the restart."""
        self.advance()
        await self.close_endpoint("broker")
        self.adapter.crash(self.now())
        self.consumers.clear()

    async def restart_broker(self) -> None:
        """The killed broker started again on its port and store (BrokerAdapter.restart: the delay timer resumes
        from its flushed offsets)."""
        self.adapter.restart(self.now())
        await self.open_endpoint("broker")
        self.notify_store_changed()

    async def restart_proxy(self) -> None:
        """Fault (5.x): the broker and its local-mode proxy stopped (SIGTERM: a graceful stop) and started again on
        their ports: every connection and gRPC stream drops, the POP state as a graceful restart leaves it and the
        proxy without any client's settings (PopAdapter.restart); the name server stays up."""
        now = self.advance()
        await self.close_endpoint("broker")
        await self._grpc_service.stop_grpc(self._grpc)
        self.pop.restart(now)
        self.consumers.clear()
        await self.open_endpoint("broker")
        self._grpc, _port = await self._grpc_service.start_grpc(self, int(self.proxy_addr.rsplit(":", 1)[1]))
        self.notify_store_changed()

    async def crash_proxy(self) -> None:
        """Fault (5.x proxy_kill): the broker with its local-mode proxy killed (`kill -9`) and started again on their
        ports and store: every connection and gRPC stream drops; the broker loses what it keeps only in memory
        (BrokerAdapter.crash: queue locks; the delay timer resumes from its flushed offsets) and what it committed
        since its last persist (PopAdapter.crash, PO-10: what was popped since is popped again, checkpoints revived
        since are revived again); the proxy forgets every client's settings; the name server stays up."""
        now = self.advance()
        await self.close_endpoint("broker")
        await self._grpc_service.stop_grpc(self._grpc)
        self.adapter.crash(now)
        self.pop.crash()
        self.adapter.restart(now)
        self.consumers.clear()
        await self.open_endpoint("broker")
        self._grpc, _port = await self._grpc_service.start_grpc(self, int(self.proxy_addr.rsplit(":", 1)[1]))
        self.notify_store_changed()

    def pause_endpoint(self, endpoint: str, paused: bool) -> None:
        """Fault (5.x namesrv_stop, as SIGSTOP and SIGCONT of RocketMQ 5.3.3's name server): paused, the endpoint keeps
        its connections and takes requests but answers none; resumed, it answers each request it held (a client that
        timed out meanwhile drops the late answer)."""
        if paused:
            self._resumed.setdefault(endpoint, asyncio.Event())
        elif (resumed := self._resumed.pop(endpoint, None)) is not None:
            resumed.set()

    async def stop_namesrv(self) -> None:
        """Fault: the name server stopped; its port closes and its connections drop."""
        await self.close_endpoint("namesrv")

    async def start_namesrv(self) -> None:
        """The name server started again on its port; it answers routes at once (the model's route is the broker's
        own state: no registration to wait for)."""
        await self.open_endpoint("namesrv")


def start_server(settings: BrokerSettings | None = None, faults: Faults | None = None) -> Server:
    """A server not yet started: `async with start_server(...) as server:` starts and always stops it."""
    return Server(settings or BrokerSettings(), faults or Faults())
