"""Listening sockets that a fault closes and opens again on the same port (the model-backed server's and the recording
proxy's endpoints): `listen` binds a port, retrying while it is not yet free; `close_listener` stops accepting
without losing a connection accepted in the meantime, so every client either gets a served connection (which the
caller then drops) or a refused connect, never one left open and unserved."""

from __future__ import annotations

import asyncio
import errno
import random
import time
from collections.abc import Awaitable, Callable
from pathlib import Path

BIND_LIMIT_S = 5.0  # how long an endpoint listening again waits for its port to be free
# Loop turns for an accepted connection to get its transport and its handler task (asyncio's _accept_connection2).
ACCEPT_TURNS = 3

Handler = Callable[[asyncio.StreamReader, asyncio.StreamWriter], Awaitable[None]]
# A fresh port is drawn below the kernel's ephemeral range: while an endpoint is down, a client reconnecting to its
# port in that range can be given the very port as its own source port (a TCP self-connect), and the endpoint then
# cannot listen there again (a CI rehearsal's broker_kill: "address already in use" for 5 s and more).
FRESH_LOW, FRESH_TRIES = 20000, 50
EPHEMERAL_RANGE = Path("/proc/sys/net/ipv4/ip_local_port_range")


def get_ephemeral_low() -> int:
    """The lowest port the kernel hands out as a source port (32768 where it cannot be read)."""
    try:
        return int(EPHEMERAL_RANGE.read_text().split()[0])
    except (OSError, ValueError, IndexError):
        return 32768


async def listen_fresh(handler: Handler) -> asyncio.Server:
    """A server on a free port below the ephemeral range (any free port if none of FRESH_TRIES draws is)."""
    low = get_ephemeral_low()
    for _ in range(FRESH_TRIES if low > FRESH_LOW + 1000 else 0):
        try:
            return await asyncio.start_server(handler, "127.0.0.1", random.randrange(FRESH_LOW, low))
        except OSError as error:
            if error.errno != errno.EADDRINUSE:
                raise
    return await asyncio.start_server(handler, "127.0.0.1", 0)


async def listen(handler: Handler, port: int) -> asyncio.Server:
    """A server on 127.0.0.1:`port` (0: a fresh port, listen_fresh) calling `handler` per connection; OSError when
    the port is still taken after BIND_LIMIT_S."""
    if port == 0:
        return await listen_fresh(handler)
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
