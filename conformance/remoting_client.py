"""A minimal RocketMQ remoting client over the codec: the harness's own requests to either backend."""

from __future__ import annotations

import asyncio
import itertools

from conformance.codec.remoting import ONEWAY_FLAG, RemotingCommand, encode_frame, read_command

REQUEST_TIMEOUT = 10.0


class RemotingClient:
    """One connection; requests are matched to responses by opaque, so several may be in flight."""

    def __init__(self, address: str, language: str = "PYTHON", version: int = 399):
        self.address, self.language, self.version = address, language, version
        self._opaques = itertools.count(1)
        self._pending: dict[int, asyncio.Future] = {}
        self._reader = self._writer = self._read_task = None

    async def __aenter__(self) -> RemotingClient:
        host, port = self.address.rsplit(":", 1)
        self._reader, self._writer = await asyncio.wait_for(asyncio.open_connection(host, int(port)),
                                                            REQUEST_TIMEOUT)
        self._read_task = asyncio.get_running_loop().create_task(self._read())
        return self

    async def __aexit__(self, *exc) -> None:
        self._read_task.cancel()
        self._writer.close()
        await asyncio.gather(self._read_task, return_exceptions=True)

    async def _read(self) -> None:
        try:
            while True:
                command = await read_command(self._reader)
                future = self._pending.pop(command.opaque, None)
                if future is not None and command.is_response and not future.done():
                    future.set_result(command)
        except (asyncio.IncompleteReadError, ConnectionError) as error:
            for future in self._pending.values():
                if not future.done():
                    future.set_exception(ConnectionError(f"connection to {self.address} closed: {error}"))

    def build(self, code: int, ext_fields: dict | None = None, body: bytes = b"", oneway: bool = False):
        return RemotingCommand(code=int(code), opaque=next(self._opaques), flag=ONEWAY_FLAG if oneway else 0,
                               language=self.language, version=self.version,
                               ext_fields={k: str(v) for k, v in (ext_fields or {}).items()}, body=body)

    async def request(self, code: int, ext_fields: dict | None = None, body: bytes = b"",
                      timeout: float = REQUEST_TIMEOUT) -> RemotingCommand:
        command = self.build(code, ext_fields, body)
        future = asyncio.get_running_loop().create_future()
        self._pending[command.opaque] = future
        self._writer.write(encode_frame(command))
        await self._writer.drain()
        try:
            return await asyncio.wait_for(future, timeout)
        finally:
            self._pending.pop(command.opaque, None)

    async def oneway(self, code: int, ext_fields: dict | None = None, body: bytes = b"") -> None:
        self._writer.write(encode_frame(self.build(code, ext_fields, body, oneway=True)))
        await self._writer.drain()
