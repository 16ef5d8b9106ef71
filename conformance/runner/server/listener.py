"""Listening sockets that a fault closes and opens again on the same port (the model-backed server's and the recording
proxy's endpoints): `listen` binds a port, retrying while it is not yet free; `close_listener` stops accepting
without losing a connection accepted in the meantime, so every client either gets a served connection (which the
caller then drops) or a refused connect, never one left open and unserved."""

from __future__ import annotations

import asyncio
import time
from collections.abc import Awaitable, Callable

BIND_LIMIT_S = 5.0  # how long an endpoint listening again waits for its port to be free
# Loop turns for an accepted connection to get its transport and its handler task (asyncio's _accept_connection2).
ACCEPT_TURNS = 3

Handler = Callable[[asyncio.StreamReader, asyncio.StreamWriter], Awaitable[None]]


async def listen(handler: Handler, port: int) -> asyncio.Server:
    """A server on 127.0.0.1:`port` (0: a fresh port) calling `handler` per connection; OSError when the port is
    still taken after BIND_LIMIT_S."""
    deadline = time.monotonic() + BIND_LIMIT_S
    while True:
        try:
            return await asyncio.start_server(handler, "127.0.0.1", port)
        except OSError:
            if time.monotonic() >= deadline:
                raise
            await asyncio.sleep(0.05)


async def close_listener(server: asyncio.Server) -> None:
    """Stop accepting, let the connections already accepted reach their handler, then close the listening sockets:
    closing them at once would leave such a connection open with no handler (asyncio's Server._attach asserts)."""
    loop = asyncio.get_running_loop()
    for sock in server.sockets:
        loop.remove_reader(sock.fileno())
    for _ in range(ACCEPT_TURNS):
        await asyncio.sleep(0)
    server.close()
    await server.wait_closed()
