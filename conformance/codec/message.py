"""RocketMQ 4.9.8's stored-message binary format (MessageDecoder.encode/decode) and offset message ids.

Source: https://github.com/apache/rocketmq/blob/rocketmq-all-4.9.8/common/src/main/java/org/apache/rocketmq/common/message/MessageDecoder.java#L156-L265
"""

from __future__ import annotations

import ipaddress
import struct
import zlib

import attrs

MESSAGE_MAGIC_CODE = -626843481
NAME_VALUE_SEPARATOR = "\u0001"
PROPERTY_SEPARATOR = "\u0002"
COMPRESSED_FLAG = 0x1
BORNHOST_V6_FLAG = 0x1 << 4
STOREHOST_V6_FLAG = 0x1 << 5


class MessageFormatError(ValueError):
    """Bytes that MessageDecoder would not decode."""


@attrs.frozen
class StoredMessage:
    """One message as MessageDecoder lays it out in a pull response body."""

    topic: str
    body: bytes
    queue_id: int
    queue_offset: int
    commit_log_offset: int
    properties: dict[str, str] = attrs.field(factory=dict)
    flag: int = 0
    sys_flag: int = 0
    born_timestamp: int = 0
    born_host: tuple[str, int] = ("127.0.0.1", 0)
    store_timestamp: int = 0
    store_host: tuple[str, int] = ("127.0.0.1", 0)
    reconsume_times: int = 0
    prepared_transaction_offset: int = 0
    body_crc: int | None = None

    @property
    def msg_id(self) -> str:
        return create_message_id(self.store_host, self.commit_log_offset)


def compute_body_crc(body: bytes) -> int:
    """UtilAll.crc32: java.util.zip.CRC32 masked to a non-negative int."""
    return zlib.crc32(body) & 0x7FFFFFFF


def encode_properties(properties: dict[str, str]) -> str:
    """MessageDecoder.messageProperties2String (4.9.8): name \u0001 value pairs joined by \u0002, with no
    separator after the last pair (a real 4.9.8 broker's pull response, tests/conformance/fixtures/)."""
    return PROPERTY_SEPARATOR.join(f"{k}{NAME_VALUE_SEPARATOR}{v}" for k, v in properties.items())


def decode_properties(text: str) -> dict[str, str]:
    result = {}
    for item in text.split(PROPERTY_SEPARATOR):
        name, sep, value = item.partition(NAME_VALUE_SEPARATOR)
        if sep:
            result[name] = value
    return result


def _host_bytes(host: tuple[str, int]) -> bytes:
    return ipaddress.ip_address(host[0]).packed + struct.pack(">i", host[1])


def _host_flags(message: StoredMessage) -> int:
    flags = message.sys_flag & ~(BORNHOST_V6_FLAG | STOREHOST_V6_FLAG)
    if ipaddress.ip_address(message.born_host[0]).version == 6:
        flags |= BORNHOST_V6_FLAG
    if ipaddress.ip_address(message.store_host[0]).version == 6:
        flags |= STOREHOST_V6_FLAG
    return flags


def encode_message(message: StoredMessage) -> bytes:
    """MessageDecoder.encode (uncompressed): the host V6 flags follow the hosts' address families."""
    topic = message.topic.encode("utf-8")
    properties = encode_properties(message.properties).encode("utf-8")
    if len(topic) > 127 or len(properties) > 32767:
        raise MessageFormatError(f"topic ({len(topic)} B, max 127) or properties ({len(properties)} B) too long")
    crc = compute_body_crc(message.body) if message.body_crc is None else message.body_crc
    tail = (struct.pack(">iqi", message.reconsume_times, message.prepared_transaction_offset, len(message.body))
            + message.body + struct.pack(">b", len(topic)) + topic + struct.pack(">h", len(properties)) + properties)
    middle = (struct.pack(">iiiiiqqiq", 0, MESSAGE_MAGIC_CODE, crc, message.queue_id, message.flag,
                          message.queue_offset, message.commit_log_offset, _host_flags(message),
                          message.born_timestamp)[4:]
              + _host_bytes(message.born_host) + struct.pack(">q", message.store_timestamp)
              + _host_bytes(message.store_host))
    total = 4 + len(middle) + len(tail)
    return struct.pack(">i", total) + middle + tail


class _Reader:
    def __init__(self, data: bytes, position: int):
        self.data, self.position = data, position

    def take(self, fmt: str):
        size = struct.calcsize(fmt)
        if self.position + size > len(self.data):
            raise MessageFormatError(f"message truncated at byte {self.position}")
        values = struct.unpack_from(fmt, self.data, self.position)
        self.position += size
        return values if len(values) > 1 else values[0]

    def raw(self, size: int) -> bytes:
        if size < 0 or self.position + size > len(self.data):
            raise MessageFormatError(f"field of {size} bytes overruns message at byte {self.position}")
        chunk = self.data[self.position:self.position + size]
        self.position += size
        return bytes(chunk)

    def host(self, v6: bool) -> tuple[str, int]:
        address = ipaddress.ip_address(self.raw(16 if v6 else 4))
        return str(address), self.take(">i")


def decode_message(data: bytes, position: int = 0) -> tuple[StoredMessage, int]:
    """Decode one message starting at position; return it and the position after it."""
    r = _Reader(data, position)
    total, magic, crc, queue_id, flag, queue_offset, phys, sys_flag, born_ts = r.take(">iiiiiqqiq")
    if magic != MESSAGE_MAGIC_CODE:
        raise MessageFormatError(f"magic code {magic} is not {MESSAGE_MAGIC_CODE}")
    born_host = r.host(bool(sys_flag & BORNHOST_V6_FLAG))
    store_ts = r.take(">q")
    store_host = r.host(bool(sys_flag & STOREHOST_V6_FLAG))
    reconsume, prepared, body_length = r.take(">iqi")
    body = r.raw(body_length)
    topic = r.raw(r.take(">B")).decode("utf-8")
    properties = decode_properties(r.raw(r.take(">h")).decode("utf-8"))
    if r.position - position != total:
        raise MessageFormatError(f"total size {total} but fields span {r.position - position} bytes")
    return StoredMessage(topic=topic, body=body, queue_id=queue_id, queue_offset=queue_offset,
                         commit_log_offset=phys, properties=properties, flag=flag, sys_flag=sys_flag,
                         born_timestamp=born_ts, born_host=born_host, store_timestamp=store_ts,
                         store_host=store_host, reconsume_times=reconsume, prepared_transaction_offset=prepared,
                         body_crc=crc), r.position


def encode_messages(messages) -> bytes:
    return b"".join(encode_message(m) for m in messages)


def decode_messages(data: bytes) -> list[StoredMessage]:
    """MessageDecoder.decodes: messages back to back, as in a PULL_MESSAGE response body."""
    messages, position = [], 0
    while position < len(data):
        message, position = decode_message(data, position)
        messages.append(message)
    return messages


def create_message_id(store_host: tuple[str, int], commit_log_offset: int) -> str:
    """MessageDecoder.createMessageId: store address, port, commit-log offset, as upper-case hex."""
    return (_host_bytes(store_host) + struct.pack(">q", commit_log_offset)).hex().upper()


def decode_message_id(msg_id: str) -> tuple[tuple[str, int], int]:
    raw = bytes.fromhex(msg_id)
    if len(raw) not in (16, 28):
        raise MessageFormatError(f"message id of {len(raw)} bytes (valid: 16 for IPv4, 28 for IPv6)")
    address = ipaddress.ip_address(raw[:-12])
    port, offset = struct.unpack(">iq", raw[-12:])
    return (str(address), port), offset
