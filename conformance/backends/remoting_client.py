"""A small blocking RocketMQ remoting client: frames out, frames in, matched by opaque, with a time limit.

Enough for the harness to act as a client of either backend (admin settings, send, send-back, pull, offsets,
locks) without any RocketMQ client in between. Frame: total length (4 bytes, big-endian), header length with the
serialize type in its high byte (0 = JSON), the JSON header, the body.
"""

from __future__ import annotations

import itertools
import json
import socket
import struct
from typing import Any

import attrs

LANGUAGE = "PYTHON"
VERSION = 409  # MQVersion.Version.V4_9_8.ordinal(), as the 4.9.8 broker answers
RESPONSE_FLAG = 1
ONEWAY_FLAG = 2


@attrs.frozen
class Command:
    """One remoting command, request or response."""

    code: int
    ext_fields: dict[str, str] = attrs.field(factory=dict)
    body: bytes = b""
    remark: str | None = None
    opaque: int = 0
    flag: int = 0
    version: int = VERSION
    language: str = LANGUAGE


def encode_command(command: Command) -> bytes:
    """The frame of `command` with a JSON header."""
    header: dict[str, Any] = {
        "code": command.code, "language": command.language, "version": command.version,
        "opaque": command.opaque, "flag": command.flag, "serializeTypeCurrentRPC": "JSON",
        "extFields": {k: str(v) for k, v in command.ext_fields.items()},
    }
    if command.remark is not None:
        header["remark"] = command.remark
    header_bytes = json.dumps(header, separators=(",", ":")).encode()
    lengths = struct.pack(">ii", 4 + len(header_bytes) + len(command.body), len(header_bytes))
    return lengths + header_bytes + command.body


def decode_frame(frame: bytes) -> Command:
    """The command in `frame` (without its leading total-length word)."""
    (word,) = struct.unpack_from(">i", frame)
    serialize_type, header_len = (word >> 24) & 0xFF, word & 0xFFFFFF
    if serialize_type != 0:
        raise ValueError(f"serialize type {serialize_type} is not JSON")
    header = json.loads(frame[4 : 4 + header_len])
    return Command(
        code=header["code"], ext_fields=header.get("extFields") or {}, body=frame[4 + header_len :],
        remark=header.get("remark"), opaque=header.get("opaque", 0), flag=header.get("flag", 0),
        version=header.get("version", 0), language=header.get("language", ""),
    )


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

    def read_command(self) -> Command:
        (length,) = struct.unpack(">i", self._read_exactly(4))
        return decode_frame(self._read_exactly(length))

    def call(self, code: int, ext_fields: dict[str, object] | None = None, body: bytes = b"") -> Command:
        opaque = next(self.opaques)
        fields = {k: str(v) for k, v in (ext_fields or {}).items() if v is not None}
        self.send_raw(encode_command(Command(code=code, ext_fields=fields, body=body, opaque=opaque)))
        while True:
            response = self.read_command()
            if response.opaque == opaque and response.flag & RESPONSE_FLAG:
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
