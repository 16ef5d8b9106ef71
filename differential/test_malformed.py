"""Malformed frames and nonsense headers: no backend may crash, and each answers with the kind of error RocketMQ
4.9.8 gives — a frame it cannot read closes the connection; an unknown request code is REQUEST_CODE_NOT_SUPPORTED
(3); a request whose header the handler cannot use is SYSTEM_ERROR (1) with the exception in the remark."""

from __future__ import annotations

import json
import socket
import struct

import pytest

from conformance.codec.remoting import encode_frame
from conformance.runner.backends.remoting_client import RemotingClient, make_request

CLOSED, NOT_SUPPORTED, SYSTEM_ERROR, SUCCESS = "closed", 3, 1, 0


def frame(header: bytes, body: bytes = b"", serialize_type: int = 0) -> bytes:
    return struct.pack(">ii", 4 + len(header) + len(body), (serialize_type << 24) | len(header)) + header + body


def request(code: int, body: bytes = b"", **fields: str) -> bytes:
    return encode_frame(make_request(code, fields, body))


CASES = {
    "unknown request code": (request(9999), NOT_SUPPORTED),
    "header without a code": (frame(json.dumps({"opaque": 1, "flag": 0}).encode()), NOT_SUPPORTED),
    "send without its header fields": (request(10, topic="X"), SYSTEM_ERROR),
    "pull without its header fields": (request(11, topic="X"), SYSTEM_ERROR),
    "query offset, queueId not a number": (request(14, consumerGroup="G", topic="X", queueId="x"), SYSTEM_ERROR),
    "lock body not JSON": (request(41, body=b"{not json"), SYSTEM_ERROR),
    "header not JSON": (frame(b"{this is not json"), CLOSED),
    "header length beyond the frame": (struct.pack(">ii", 8, 1000) + b"abcd", CLOSED),
    "unknown serialize type": (frame(b"\x00" * 4, serialize_type=7), CLOSED),
    "negative frame length": (struct.pack(">i", -5) + b"xxxx", CLOSED),
    "frame length over the limit": (struct.pack(">i", 100_000_000) + b"xxxx", CLOSED),
    "zero frame length": (struct.pack(">i", 0), CLOSED),
}


def get_answer_kind(address: str, data: bytes) -> int | str:
    """The response code to `data`, or "closed" when the backend closed the connection instead."""
    host, port = address.rsplit(":", 1)
    with socket.create_connection((host, int(port)), timeout=5) as sock:
        sock.sendall(data)
        head = b""
        while len(head) < 8:
            chunk = sock.recv(8 - len(head))
            if not chunk:
                return CLOSED
            head += chunk
        length, header_word = struct.unpack(">ii", head)
        header = b""
        while len(header) < header_word & 0xFFFFFF:
            header += sock.recv((header_word & 0xFFFFFF) - len(header))
        return json.loads(header)["code"]


@pytest.mark.rules("WIRE-MALFORMED")
@pytest.mark.parametrize("case", list(CASES))
def test_malformed_request_answered_like_rocketmq(target, case):
    data, expected = CASES[case]
    assert get_answer_kind(target.broker_addr, data) == expected
    with RemotingClient(target.broker_addr) as client:  # still serving
        assert client.call(30, {"topic": "TBW102", "queueId": 0}).code == SUCCESS
