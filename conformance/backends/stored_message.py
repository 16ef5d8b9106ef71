"""Messages as the broker stores and returns them (MessageDecoder's binary format), and the properties string.

A pull's body is stored messages one after another; each starts with its total size. Properties are ``name``
\\u0001 ``value`` \\u0002 pairs. The offset message id is the store host (IPv4 + port) and the commit-log offset,
in hex.
"""

from __future__ import annotations

import struct

import attrs

NAME_VALUE_SEPARATOR = "\u0001"
PROPERTY_SEPARATOR = "\u0002"
BORNHOST_V6_FLAG = 1 << 4
STOREHOST_V6_FLAG = 1 << 5


@attrs.frozen
class StoredMessage:
    """One message as the broker returned it."""

    topic: str
    queue_id: int
    queue_offset: int
    commit_log_offset: int
    reconsume_times: int
    flag: int
    sys_flag: int
    born_timestamp: int
    store_timestamp: int
    store_host: str
    properties: dict[str, str]
    body: bytes

    @property
    def offset_msg_id(self) -> str:
        return compute_offset_msg_id(self.store_host, self.commit_log_offset)


def encode_properties(properties: dict[str, str]) -> str:
    """MessageDecoder.messageProperties2String (4.9.8): name \u0001 value pairs joined by \u0002, with no
    separator after the last pair (a real 4.9.8 broker's pull response, tests/conformance/fixtures/)."""
    return PROPERTY_SEPARATOR.join(f"{k}{NAME_VALUE_SEPARATOR}{v}" for k, v in properties.items())


def decode_properties(text: str) -> dict[str, str]:
    pairs = (item.split(NAME_VALUE_SEPARATOR, 1) for item in text.split(PROPERTY_SEPARATOR) if item)
    return {pair[0]: pair[1] for pair in pairs if len(pair) == 2}


def compute_offset_msg_id(store_host: str, commit_log_offset: int) -> str:
    """The broker's message id: IPv4 bytes, port, commit-log offset, as upper-case hex."""
    host, port = store_host.rsplit(":", 1)
    packed = bytes(int(part) for part in host.split(".")) + struct.pack(">iq", int(port), commit_log_offset)
    return packed.hex().upper()


def get_commit_log_offset(offset_msg_id: str) -> int:
    """The commit-log offset inside an IPv4 offset message id (its last 16 hex digits)."""
    return int(offset_msg_id[-16:], 16)


def _host(data: bytes, at: int, v6: bool) -> tuple[str, int]:
    size = 16 if v6 else 4
    address = data[at : at + size]
    (port,) = struct.unpack_from(">i", data, at + size)
    text = address.hex() if v6 else ".".join(str(b) for b in address)
    return f"{text}:{port}", at + size + 4


def decode_stored_message(data: bytes, at: int) -> tuple[StoredMessage, int]:
    """The message starting at `at` and the position after it."""
    fields = struct.unpack_from(">iiiiiqqiq", data, at)
    size, _magic, _crc, queue_id, flag, queue_offset, physical, sys_flag, born = fields
    _born_host, pos = _host(data, at + 48, bool(sys_flag & BORNHOST_V6_FLAG))
    (store_ts,) = struct.unpack_from(">q", data, pos)
    store_host, pos = _host(data, pos + 8, bool(sys_flag & STOREHOST_V6_FLAG))
    reconsume, _prepared, body_len = struct.unpack_from(">iqi", data, pos)
    pos += 16
    body = data[pos : pos + body_len]
    pos += body_len
    topic_len = data[pos]
    topic = data[pos + 1 : pos + 1 + topic_len].decode()
    pos += 1 + topic_len
    (props_len,) = struct.unpack_from(">h", data, pos)
    properties = decode_properties(data[pos + 2 : pos + 2 + props_len].decode())
    message = StoredMessage(topic, queue_id, queue_offset, physical, reconsume, flag, sys_flag, born, store_ts,
                            store_host, properties, body)
    return message, at + size


def decode_stored_messages(data: bytes) -> list[StoredMessage]:
    """Every message of a pull's body, in order."""
    messages, at = [], 0
    while at < len(data):
        message, at = decode_stored_message(data, at)
        messages.append(message)
    return messages
