"""The server from synchronous code: its own event loop in a background thread, every call time-limited."""

from __future__ import annotations

import asyncio
import contextlib
import threading

from conformance.runner.server.core import Server, start_server
from conformance.runner.settings import BrokerSettings, Faults

CALL_TIMEOUT = 10.0


class ServerThread:
    """Runs a Server on a private loop; `call` runs a function on that loop and returns its result."""

    def __init__(self, settings: BrokerSettings | None = None, faults: Faults | None = None):
        self.server: Server = start_server(settings, faults)
        self.loop = asyncio.new_event_loop()
        self.thread = threading.Thread(target=self.loop.run_forever, name="rmqspec-server", daemon=True)

    def start(self) -> Server:
        self.thread.start()
        asyncio.run_coroutine_threadsafe(self.server.start(), self.loop).result(CALL_TIMEOUT)
        return self.server

    def call(self, function, *args, timeout: float = CALL_TIMEOUT):
        async def run():
            return function(*args)
        return asyncio.run_coroutine_threadsafe(run(), self.loop).result(timeout)

    def run(self, coroutine_function, *args, timeout: float = CALL_TIMEOUT):
        """`await coroutine_function(*args)` on the server's loop; its result within `timeout` seconds."""
        return asyncio.run_coroutine_threadsafe(coroutine_function(*args), self.loop).result(timeout)

    def stop(self) -> None:
        try:
            if self.thread.is_alive():
                asyncio.run_coroutine_threadsafe(self.server.stop(), self.loop).result(CALL_TIMEOUT)
        finally:
            self.loop.call_soon_threadsafe(self.loop.stop)
            self.thread.join(CALL_TIMEOUT)
            if not self.thread.is_alive():
                self.loop.close()


@contextlib.contextmanager
def run_server(settings: BrokerSettings | None = None, faults: Faults | None = None):
    """`with run_server(settings) as runner:` a started server in a background thread, always stopped."""
    runner = ServerThread(settings, faults)
    try:
        runner.start()
        yield runner
    finally:
        runner.stop()
