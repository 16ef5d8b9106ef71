"""A recording proxy in front of a real name server and broker: the real broker keeps no wire trace, so the
client talks to it through this proxy, which forwards every frame unchanged and records each request (code,
header, flag, connection, arrival time on `time.monotonic()` ms) with the code of its response — the trace the
verdicts read from the model-backed server (conformance/checker/observe.py WireRequest).

So that the client keeps coming through the proxy, three answers are rewritten, nothing else: the broker address
in the name server's routes and cluster info (GET_ROUTEINFO_BY_TOPIC 105, GET_BROKER_CLUSTER_INFO 106), and the
store host of each message in a PULL_MESSAGE answer (a client sends CONSUMER_SEND_MSG_BACK to a message's store
host; rocketmq-client-cpp does).

With a fault hook (a workload's `FaultScript.decide`, conformance/runner/faults.py) the proxy injects the workload's
faults as the model-backed server does: a broker request the hook names a fault for is not forwarded; the proxy
answers it itself (`make_fault_answer`: the request's opaque, the fault's response code, a remark naming it) or
never. The hook knows a send-back's message by its commit-log offset, which the proxy maps to the message key by
the messages it has seen in PULL_MESSAGE answers.

When the process behind an endpoint dies (a fault's kill or stop), the proxy closes that endpoint
(`close_endpoint`: no listening, every client connection dropped) and opens it again on the same port after the
restart (`open_endpoint`), so that a client sees what it would see with RocketMQ alone. A connection whose upstream
closes is closed towards the client too.
"""

from __future__ import annotations

import asyncio
import itertools
import struct
import threading
import time
from collections.abc import Callable

import attrs

from conformance.codec.codes import GET_BROKER_CLUSTER_INFO, GET_ROUTEINFO_BY_TOPIC, PULL_MESSAGE
from conformance.codec.message import decode_messages, encode_messages
from conformance.codec.remoting import FrameError, RemotingCommand, decode_frame, encode_frame, read_frame
from conformance.history.records import WireRequest
from conformance.runner.faults import KeyOfOffset, make_fault_answer
from conformance.runner.server.listener import close_listener, listen

CALL_TIMEOUT = 10.0
# (request, the key of a commit-log offset, now in ms) -> the fault kind that hits the request, or None.
FaultHook = Callable[[RemotingCommand, KeyOfOffset, float], str | None]


def replace_body(raw: bytes, body: bytes) -> bytes:
    """The frame `raw` with its body replaced; the header bytes kept as they are."""
    (mark,) = struct.unpack_from(">i", raw, 4)
    header = raw[8:8 + (mark & 0xFFFFFF)]
    return struct.pack(">ii", 4 + len(header) + len(body), mark) + header + body


class RecordingProxy:
    """Listens on two loopback ports (``namesrv_addr``, ``broker_addr``) and forwards to the upstream pair, but for
    the broker requests `fault_hook` names a fault for."""

    def __init__(self, namesrv_upstream: str, broker_upstream: str, fault_hook: FaultHook | None = None) -> None:
        self.upstream = {"namesrv": namesrv_upstream, "broker": broker_upstream}
        self.fault_hook = fault_hook
        # The key (UNIQ_KEY) of each message seen in a PULL_MESSAGE answer, by its commit-log offset.
        self.keys: dict[int, str] = {}
        self.namesrv_addr = self.broker_addr = ""
        self.requests: list[WireRequest] = []
        self.connections = itertools.count()
        self.loop = asyncio.new_event_loop()
        self.thread = threading.Thread(target=self.loop.run_forever, name="rmqspec-proxy", daemon=True)
        self.servers: dict = {}
        self.ports: dict[str, int] = {}
        # Per endpoint, the writers of the clients' connections (closed when the endpoint closes).
        self.writers: dict[str, set] = {"namesrv": set(), "broker": set()}
        self.tasks: set = set()

    def start(self) -> RecordingProxy:
        self.thread.start()
        asyncio.run_coroutine_threadsafe(self._start(), self.loop).result(CALL_TIMEOUT)
        return self

    async def _start(self) -> None:
        for endpoint in ("namesrv", "broker"):
            await self._listen(endpoint, 0)
            setattr(self, f"{endpoint}_addr", f"127.0.0.1:{self.ports[endpoint]}")

    async def _listen(self, endpoint: str, port: int) -> None:
        server = await listen(lambda r, w, e=endpoint: self._serve(r, w, e), port)
        self.servers[endpoint], self.ports[endpoint] = server, server.sockets[0].getsockname()[1]

    def close_endpoint(self, endpoint: str) -> None:
        """Stop listening for `endpoint` and drop every client connection to it, as when the process behind it dies:
        a client sees its connection closed and a new connect refused (until `open_endpoint`)."""
        async def close():
            server = self.servers.pop(endpoint, None)
            if server is not None:
                await close_listener(server)
            for writer in list(self.writers[endpoint]):
                writer.transport.abort()
        self.call_async(close)

    def open_endpoint(self, endpoint: str) -> None:
        """Listen for `endpoint` again on its port; each new client connection opens its own upstream one."""
        if endpoint not in self.servers:
            self.call_async(lambda: self._listen(endpoint, self.ports[endpoint]))

    def call_async(self, coroutine_function: Callable):
        """`await coroutine_function()` on the proxy's loop; its result."""
        return asyncio.run_coroutine_threadsafe(coroutine_function(), self.loop).result(CALL_TIMEOUT)

    def stop(self) -> None:
        async def close():
            for server in self.servers.values():
                server.close()
            for task in list(self.tasks):
                task.cancel()
            await asyncio.gather(*self.tasks, return_exceptions=True)
        try:
            if self.thread.is_alive():
                asyncio.run_coroutine_threadsafe(close(), self.loop).result(CALL_TIMEOUT)
        finally:
            self.loop.call_soon_threadsafe(self.loop.stop)
            self.thread.join(CALL_TIMEOUT)

    def call(self, function: Callable):
        """`function()` run on the proxy's loop, whose state it may read; its result."""
        async def run():
            return function()
        return asyncio.run_coroutine_threadsafe(run(), self.loop).result(CALL_TIMEOUT)

    def get_requests(self) -> list[WireRequest]:
        # An answer not come yet is no answer (None), as in the model-backed server's trace.
        return self.call(lambda: [attrs.evolve(r, response_code=None) if r.response_code == -1 else r
                                  for r in self.requests])

    def __enter__(self) -> RecordingProxy:
        return self.start()

    def __exit__(self, *exc) -> None:
        self.stop()

    async def _serve(self, reader, writer, endpoint: str) -> None:
        if endpoint not in self.servers:  # accepted just before the endpoint closed
            writer.transport.abort()
            return
        task = asyncio.current_task()
        self.tasks.add(task)
        self.writers[endpoint].add(writer)
        host, port = self.upstream[endpoint].rsplit(":", 1)
        connection, pending = next(self.connections), {}
        try:
            up_reader, up_writer = await asyncio.open_connection(host, int(port))
        except OSError:
            writer.close()
            self.tasks.discard(task)
            self.writers[endpoint].discard(writer)
            return
        pumps = [asyncio.ensure_future(self._requests(reader, writer, up_writer, endpoint, connection, pending)),
                 asyncio.ensure_future(self._responses(up_reader, writer, endpoint, pending))]
        try:
            await asyncio.wait(pumps, return_when=asyncio.FIRST_COMPLETED)
        finally:
            for pump in pumps:
                pump.cancel()
            writer.close()
            up_writer.close()
            self.tasks.discard(task)
            self.writers[endpoint].discard(writer)

    async def _requests(self, reader, writer, up_writer, endpoint: str, connection: int, pending: dict) -> None:
        """Record each request and forward it upstream; one the fault hook names is answered here, or never."""
        while True:
            raw = await read_frame(reader)
            command = decode_frame(raw)
            if not command.is_response:
                now_ms = time.monotonic() * 1000
                kind = self.get_fault_kind(command, endpoint, now_ms)
                if kind is not None:
                    await self._inject(command, kind, now_ms, connection, writer)
                    continue
                index = len(self.requests)
                answered = None if command.is_oneway else -1  # -1 until the response comes
                self.requests.append(WireRequest(now_ms, command.code, dict(command.ext_fields), command.flag,
                                                 answered, connection))
                pending[command.opaque] = (index, command.code)
            up_writer.write(raw)
            await up_writer.drain()

    def get_fault_kind(self, command: RemotingCommand, endpoint: str, now_ms: float) -> str | None:
        """The fault the hook injects into a broker request (None: forward it); one-way requests are never hit."""
        if self.fault_hook is None or endpoint != "broker" or command.is_oneway:
            return None
        return self.fault_hook(command, self.keys.get, now_ms)

    async def _inject(self, command: RemotingCommand, kind: str, now_ms: float, connection: int, writer) -> None:
        """Answer `command` with the fault `kind`'s answer (or leave it unanswered), recorded with that answer."""
        answer = make_fault_answer(command, kind)
        self.requests.append(WireRequest(now_ms, command.code, dict(command.ext_fields), command.flag,
                                         None if answer is None else answer.code, connection))
        if answer is not None:
            writer.write(encode_frame(answer))
            await writer.drain()

    async def _responses(self, up_reader, writer, endpoint: str, pending: dict) -> None:
        while True:
            raw = await read_frame(up_reader)
            command = decode_frame(raw)
            if command.is_response and command.opaque in pending:
                index, code = pending.pop(command.opaque)
                self.requests[index] = attrs.evolve(self.requests[index], response_code=command.code)
                raw = self.rewrite(raw, command, code, endpoint)
            writer.write(raw)
            await writer.drain()

    def rewrite(self, raw: bytes, command, request_code: int, endpoint: str) -> bytes:
        if endpoint == "namesrv" and request_code in (GET_ROUTEINFO_BY_TOPIC, GET_BROKER_CLUSTER_INFO):
            body = command.body.replace(self.upstream["broker"].encode(), self.broker_addr.encode())
            return replace_body(raw, body)
        if endpoint == "broker" and request_code == PULL_MESSAGE and command.code == 0 and command.body:
            host, port = self.broker_addr.rsplit(":", 1)
            try:
                messages = decode_messages(command.body)
            except (FrameError, ValueError, struct.error):
                return raw
            self.keys.update({m.commit_log_offset: m.properties["UNIQ_KEY"] for m in messages
                              if "UNIQ_KEY" in m.properties})
            moved = [attrs.evolve(m, store_host=(host, int(port))) for m in messages]
            return replace_body(raw, encode_messages(moved))
        return raw
