"""A small blocking RocketMQ remoting client over the codec (conformance/codec/): frames out, frames in, matched by
opaque, with a time limit.

Enough for the harness to act as a client of either backend (admin settings, send, send-back, pull, offsets,
locks) without any RocketMQ client in between, from plain synchronous test code.
"""

from __future__ import annotations

import itertools
import socket
import struct

from conformance.codec.remoting import RemotingCommand, decode_payload, encode_frame

LANGUAGE = "PYTHON"
VERSION = 409  # MQVersion.Version.V4_9_8.ordinal(), as the 4.9.8 broker answers


def make_request(code: int, ext_fields: dict[str, object] | None = None, body: bytes = b"",
                 opaque: int = 1) -> RemotingCommand:
    """A request as this client sends it: string header fields, None values left out."""
    fields = {k: str(v) for k, v in (ext_fields or {}).items() if v is not None}
    return RemotingCommand(code=code, opaque=opaque, language=LANGUAGE, version=VERSION, ext_fields=fields,
                           body=body)


class RemotingClient:
    """One connection; `call` sends a request and returns its response, waiting at most `timeout` seconds."""

    def __init__(self, address: str, timeout: float = 10.0) -> None:
        host, port = address.rsplit(":", 1)
        self.sock = socket.create_connection((host, int(port)), timeout=timeout)
        self.opaques = itertools.count(1)

    def close(self) -> None:
        self.sock.close()

    def __enter__(self) -> RemotingClient:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def send_raw(self, data: bytes) -> None:
        self.sock.sendall(data)

    def read_frame(self) -> bytes:
        """One whole frame, its length word included, exactly as read from the socket."""
        length = self._read_exactly(4)
        return length + self._read_exactly(struct.unpack(">i", length)[0])

    def call(self, code: int, ext_fields: dict[str, object] | None = None, body: bytes = b"") -> RemotingCommand:
        request = make_request(code, ext_fields, body, next(self.opaques))
        self.send_raw(encode_frame(request))
        while True:
            response = decode_payload(self.read_frame()[4:])
            if response.opaque == request.opaque and response.is_response:
                return response

    def _read_exactly(self, size: int) -> bytes:
        chunks, left = [], size
        while left:
            chunk = self.sock.recv(min(left, 1 << 20))
            if not chunk:
                raise ConnectionError("the peer closed the connection")
            chunks.append(chunk)
            left -= len(chunk)
        return b"".join(chunks)
