"""A recording proxy in front of a real name server and broker: the real broker keeps no wire trace, so the
client talks to it through this proxy, which forwards every frame unchanged and records each request (code,
header, flag, connection, arrival time on `time.monotonic()` ms) with the code of its response — the trace the
verdicts read from the model-backed server (conformance/checker/observe.py WireRequest).

So that the client keeps coming through the proxy, three answers are rewritten, nothing else: the broker address
in the name server's routes and cluster info (GET_ROUTEINFO_BY_TOPIC 105, GET_BROKER_CLUSTER_INFO 106), and the
store host of each message in a PULL_MESSAGE answer (a client sends CONSUMER_SEND_MSG_BACK to a message's store
host; rocketmq-client-cpp does).
"""

from __future__ import annotations

import asyncio
import itertools
import struct
import threading
import time

import attrs

from conformance.codec.message import decode_messages, encode_messages
from conformance.codec.remoting import FrameError, decode_frame, read_frame
from conformance.history.records import WireRequest

GET_ROUTEINFO_BY_TOPIC, GET_BROKER_CLUSTER_INFO, PULL_MESSAGE = 105, 106, 11
CALL_TIMEOUT = 10.0


def replace_body(raw: bytes, body: bytes) -> bytes:
    """The frame `raw` with its body replaced; the header bytes kept as they are."""
    (mark,) = struct.unpack_from(">i", raw, 4)
    header = raw[8:8 + (mark & 0xFFFFFF)]
    return struct.pack(">ii", 4 + len(header) + len(body), mark) + header + body


class RecordingProxy:
    """Listens on two loopback ports (``namesrv_addr``, ``broker_addr``) and forwards to the upstream pair."""

    def __init__(self, namesrv_upstream: str, broker_upstream: str) -> None:
        self.upstream = {"namesrv": namesrv_upstream, "broker": broker_upstream}
        self.namesrv_addr = self.broker_addr = ""
        self.requests: list[WireRequest] = []
        self.connections = itertools.count()
        self.loop = asyncio.new_event_loop()
        self.thread = threading.Thread(target=self.loop.run_forever, name="rmqspec-proxy", daemon=True)
        self.servers: list = []
        self.tasks: set = set()

    def start(self) -> RecordingProxy:
        self.thread.start()
        asyncio.run_coroutine_threadsafe(self._start(), self.loop).result(CALL_TIMEOUT)
        return self

    async def _start(self) -> None:
        for endpoint in ("namesrv", "broker"):
            server = await asyncio.start_server(lambda r, w, e=endpoint: self._serve(r, w, e), "127.0.0.1", 0)
            self.servers.append(server)
            setattr(self, f"{endpoint}_addr", f"127.0.0.1:{server.sockets[0].getsockname()[1]}")

    def stop(self) -> None:
        async def close():
            for server in self.servers:
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

    def get_requests(self) -> list[WireRequest]:
        async def copy():  # an answer not come yet is no answer (None), as in the model-backed server's trace
            return [attrs.evolve(r, response_code=None) if r.response_code == -1 else r for r in self.requests]
        return asyncio.run_coroutine_threadsafe(copy(), self.loop).result(CALL_TIMEOUT)

    def __enter__(self) -> RecordingProxy:
        return self.start()

    def __exit__(self, *exc) -> None:
        self.stop()

    async def _serve(self, reader, writer, endpoint: str) -> None:
        task = asyncio.current_task()
        self.tasks.add(task)
        host, port = self.upstream[endpoint].rsplit(":", 1)
        connection, pending = next(self.connections), {}
        try:
            up_reader, up_writer = await asyncio.open_connection(host, int(port))
        except OSError:
            writer.close()
            self.tasks.discard(task)
            return
        pumps = [asyncio.ensure_future(self._requests(reader, up_writer, connection, pending)),
                 asyncio.ensure_future(self._responses(up_reader, writer, endpoint, pending))]
        try:
            await asyncio.wait(pumps, return_when=asyncio.FIRST_COMPLETED)
        finally:
            for pump in pumps:
                pump.cancel()
            writer.close()
            up_writer.close()
            self.tasks.discard(task)

    async def _requests(self, reader, up_writer, connection: int, pending: dict) -> None:
        while True:
            raw = await read_frame(reader)
            command = decode_frame(raw)
            if not command.is_response:
                index = len(self.requests)
                answered = None if command.is_oneway else -1  # -1 until the response comes
                self.requests.append(WireRequest(time.monotonic() * 1000, command.code, dict(command.ext_fields),
                                                 command.flag, answered, connection))
                pending[command.opaque] = (index, command.code)
            up_writer.write(raw)
            await up_writer.drain()

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
            moved = [attrs.evolve(m, store_host=(host, int(port))) for m in messages]
            return replace_body(raw, encode_messages(moved))
        return raw
