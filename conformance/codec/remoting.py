"""RocketMQ remoting frames <-> RemotingCommand values (JSON header serialization).

A frame is: int32 length of everything after it; int32 whose high byte is the serialize type (0 = JSON) and whose
low 24 bits are the header length; the header; the body. Flag bit 0 marks a response, bit 1 a one-way request.
Source: https://github.com/apache/rocketmq/blob/rocketmq-all-4.9.8/remoting/src/main/java/org/apache/rocketmq/remoting/protocol/RemotingCommand.java#L228-L240
"""

from __future__ import annotations

import json
import struct

import attrs

RESPONSE_FLAG = 0b01
ONEWAY_FLAG = 0b10
SERIALIZE_JSON = 0
MAX_FRAME = 16 * 1024 * 1024


class FrameError(ValueError):
    """A frame that RocketMQ's decoder would reject."""


@attrs.frozen
class RemotingCommand:
    code: int
    opaque: int
    flag: int = 0
    language: str = "JAVA"
    version: int = 0
    remark: str | None = None
    ext_fields: dict[str, str] = attrs.field(factory=dict)
    body: bytes = b""

    @property
    def is_response(self) -> bool:
        return bool(self.flag & RESPONSE_FLAG)

    @property
    def is_oneway(self) -> bool:
        return bool(self.flag & ONEWAY_FLAG)

    def header(self, key: str, default: str | None = None) -> str | None:
        return self.ext_fields.get(key, default)


def make_response(request: RemotingCommand, code: int, remark: str | None = None,
                  ext_fields: dict[str, str] | None = None, body: bytes = b"") -> RemotingCommand:
    return RemotingCommand(code=int(code), opaque=request.opaque, flag=RESPONSE_FLAG, remark=remark,
                           ext_fields=dict(ext_fields or {}), body=body, version=request.version)


def encode_header(command: RemotingCommand) -> bytes:
    header: dict = {"code": command.code, "flag": command.flag, "language": command.language,
                    "opaque": command.opaque, "serializeTypeCurrentRPC": "JSON", "version": command.version}
    if command.remark is not None:
        header["remark"] = command.remark
    if command.ext_fields:
        header["extFields"] = {k: str(v) for k, v in command.ext_fields.items()}
    return json.dumps(header, separators=(",", ":"), ensure_ascii=False).encode("utf-8")


def encode_frame(command: RemotingCommand) -> bytes:
    header = encode_header(command)
    if len(header) >= 1 << 24:
        raise FrameError(f"header of {len(header)} bytes does not fit 24 bits")
    mark = (SERIALIZE_JSON << 24) | len(header)
    return struct.pack(">ii", 4 + len(header) + len(command.body), mark) + header + command.body


def decode_header(data: bytes) -> RemotingCommand:
    try:
        raw = json.loads(data.decode("utf-8"))
    except (UnicodeDecodeError, json.JSONDecodeError) as error:
        raise FrameError(f"header is not JSON: {error}") from error
    ext = raw.get("extFields") or {}
    # RemotingCommand's `int code` stays 0 when the header has none (fastjson); 0 is no request code.
    return RemotingCommand(code=int(raw.get("code", 0)), opaque=int(raw.get("opaque", 0)), flag=int(raw.get("flag", 0)),
                           language=str(raw.get("language", "JAVA")), version=int(raw.get("version", 0)),
                           remark=raw.get("remark"), ext_fields={str(k): _text(v) for k, v in ext.items()})


def _text(value) -> str:
    """extFields are strings in Java; a client may send numbers or booleans, which Java's fastjson would stringify."""
    if isinstance(value, bool):
        return "true" if value else "false"
    return str(value)


def decode_payload(payload: bytes) -> RemotingCommand:
    """Decode what follows the 4-byte total length."""
    if len(payload) < 4:
        raise FrameError(f"frame of {len(payload)} bytes has no header length")
    (mark,) = struct.unpack_from(">i", payload)
    serialize_type, header_length = (mark >> 24) & 0xFF, mark & 0xFFFFFF
    if serialize_type != SERIALIZE_JSON:
        raise FrameError(f"serialize type {serialize_type} is not supported (valid: {SERIALIZE_JSON} = JSON)")
    if 4 + header_length > len(payload):
        raise FrameError(f"header length {header_length} exceeds frame of {len(payload)} bytes")
    command = decode_header(payload[4:4 + header_length])
    return attrs.evolve(command, body=bytes(payload[4 + header_length:]))


def decode_frame(frame: bytes) -> RemotingCommand:
    """Decode one whole frame (length prefix included)."""
    (length,) = struct.unpack_from(">i", frame)
    if length != len(frame) - 4:
        raise FrameError(f"frame length {length} does not match {len(frame) - 4} bytes")
    return decode_payload(frame[4:])


def split_frames(buffer: bytes) -> tuple[list[RemotingCommand], bytes]:
    """Decode every complete frame at the start of buffer; return them and the unconsumed rest."""
    commands, position = [], 0
    while len(buffer) - position >= 4:
        (length,) = struct.unpack_from(">i", buffer, position)
        if not 4 <= length <= MAX_FRAME:
            raise FrameError(f"frame length {length} outside 4..{MAX_FRAME}")
        if len(buffer) - position - 4 < length:
            break
        commands.append(decode_payload(buffer[position + 4:position + 4 + length]))
        position += 4 + length
    return commands, buffer[position:]


async def read_frame(reader) -> bytes:
    """Read one whole frame's bytes from an asyncio StreamReader (IncompleteReadError at end of stream)."""
    prefix = await reader.readexactly(4)
    (length,) = struct.unpack(">i", prefix)
    if not 4 <= length <= MAX_FRAME:
        raise FrameError(f"frame length {length} outside 4..{MAX_FRAME}")
    return prefix + await reader.readexactly(length)


async def read_command(reader) -> RemotingCommand:
    """Read and decode one frame from an asyncio StreamReader."""
    return decode_frame(await read_frame(reader))
