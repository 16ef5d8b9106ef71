"""A small blocking RocketMQ remoting client over the codec (conformance/codec/): frames out, frames in, matched by
opaque, with a time limit.

Enough for the harness to act as a client of either backend (admin settings, send, send-back, pull, offsets,
locks) without any RocketMQ client in between, from plain synchronous test code.
"""

from __future__ import annotations

import itertools
import socket
import struct
import time

from conformance.codec.remoting import ONEWAY_FLAG, RemotingCommand, decode_payload, encode_frame

LANGUAGE = "PYTHON"
VERSION = 409  # MQVersion.Version.V4_9_8.ordinal(), as the 4.9.8 broker answers


def make_request(code: int, ext_fields: dict[str, object] | None = None, body: bytes = b"",
                 opaque: int = 1, oneway: bool = False) -> RemotingCommand:
    """A request as this client sends it: string header fields, None values left out, flagged one-way if asked."""
    fields = {k: str(v) for k, v in (ext_fields or {}).items() if v is not None}
    return RemotingCommand(code=code, opaque=opaque, flag=ONEWAY_FLAG if oneway else 0, language=LANGUAGE,
                           version=VERSION, ext_fields=fields, body=body)


class RemotingClient:
    """One connection; `call` sends a request and returns its response, waiting at most `timeout` seconds."""

    def __init__(self, address: str, timeout: float = 10.0) -> None:
        host, port = address.rsplit(":", 1)
        self.sock = socket.create_connection((host, int(port)), timeout=timeout)
        self.timeout = timeout
        self.opaques = itertools.count(1)

    def close(self) -> None:
        self.sock.close()

    def __enter__(self) -> RemotingClient:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def send_raw(self, data: bytes) -> None:
        self.sock.settimeout(self.timeout)
        self.sock.sendall(data)

    def read_frame(self, timeout: float | None = None) -> bytes:
        """One whole frame, its length word included, exactly as read from the socket; TimeoutError if it has not
        all arrived within `timeout` seconds (the connection's timeout when None)."""
        deadline = time.monotonic() + (self.timeout if timeout is None else timeout)
        length = self._read_exactly(4, deadline)
        return length + self._read_exactly(struct.unpack(">i", length)[0], deadline)

    def call(self, code: int, ext_fields: dict[str, object] | None = None, body: bytes = b"",
             timeout: float | None = None) -> RemotingCommand:
        """The response to one request; TimeoutError if it has not arrived within `timeout` seconds (the
        connection's timeout when None)."""
        request = make_request(code, ext_fields, body, next(self.opaques))
        self.send_raw(encode_frame(request))
        deadline = time.monotonic() + (self.timeout if timeout is None else timeout)
        while True:
            response = decode_payload(self.read_frame(_time_left(deadline))[4:])
            if response.opaque == request.opaque and response.is_response:
                return response

    def oneway(self, code: int, ext_fields: dict[str, object] | None = None, body: bytes = b"") -> None:
        """Sends a one-way request: flagged so, and no response awaited (the peer sends none)."""
        self.send_raw(encode_frame(make_request(code, ext_fields, body, next(self.opaques), oneway=True)))

    def _read_exactly(self, size: int, deadline: float) -> bytes:
        chunks, left = [], size
        while left:
            self.sock.settimeout(_time_left(deadline))
            chunk = self.sock.recv(min(left, 1 << 20))
            if not chunk:
                raise ConnectionError("the peer closed the connection")
            chunks.append(chunk)
            left -= len(chunk)
        return b"".join(chunks)


def _time_left(deadline: float) -> float:
    """Seconds until `deadline` (a time.monotonic() reading); TimeoutError once it has passed."""
    left = deadline - time.monotonic()
    if left <= 0:
        raise TimeoutError("no response within the time limit")
    return left
