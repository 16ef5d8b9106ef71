"""Round trips of the remoting frame codec and MessageDecoder's binary format, and hand-checked byte layouts."""

import struct

import attrs
import pytest
from hypothesis import given
from hypothesis import strategies as st

from conformance.codec.message import (
    MESSAGE_MAGIC_CODE,
    StoredMessage,
    create_message_id,
    decode_message_id,
    decode_messages,
    encode_message,
    encode_messages,
)
from conformance.codec.remoting import (
    FrameError,
    RemotingCommand,
    decode_frame,
    encode_frame,
    split_frames,
)

pytestmark = [pytest.mark.timeout(60), pytest.mark.conformance]

text = st.text(st.characters(blacklist_categories=("Cs",), blacklist_characters="\u0001\u0002"), max_size=20)
commands = st.builds(
    RemotingCommand,
    code=st.integers(-(2**31), 2**31 - 1), opaque=st.integers(-(2**31), 2**31 - 1), flag=st.integers(0, 3),
    language=st.sampled_from(["JAVA", "CPP", "PYTHON"]), version=st.integers(0, 500),
    remark=st.none() | st.text(max_size=30), ext_fields=st.dictionaries(st.text(max_size=10), text, max_size=5),
    body=st.binary(max_size=200))
hosts = st.tuples(st.ip_addresses().map(str), st.integers(0, 65535))
longs = st.integers(-(2**63), 2**63 - 1)
ints = st.integers(-(2**31), 2**31 - 1)
messages = st.builds(
    StoredMessage, topic=st.text(st.characters(codec="ascii"), min_size=1, max_size=40), body=st.binary(max_size=100),
    queue_id=ints, queue_offset=longs, commit_log_offset=longs,
    properties=st.dictionaries(text.filter(bool), text, max_size=5), flag=ints,
    sys_flag=st.sampled_from([0, 2, 4]), born_timestamp=longs, born_host=hosts, store_timestamp=longs,
    store_host=hosts, reconsume_times=ints, prepared_transaction_offset=longs)


@given(commands)
def test_frame_round_trip(command):
    assert decode_frame(encode_frame(command)) == command


@given(st.lists(commands, max_size=4), st.integers(0, 30))
def test_split_frames_keeps_the_incomplete_tail(batch, cut):
    stream = b"".join(encode_frame(c) for c in batch)
    head, tail = stream[: max(0, len(stream) - cut)], stream[max(0, len(stream) - cut):]
    decoded, rest = split_frames(head)
    more, rest = split_frames(rest + tail)
    assert decoded + more == batch and rest == b""


def test_frame_layout_marks_json_and_lengths():
    frame = encode_frame(RemotingCommand(code=11, opaque=7, body=b"xyz"))
    total, mark = struct.unpack_from(">ii", frame)
    assert total == len(frame) - 4 and mark >> 24 == 0
    assert frame[8:8 + mark].startswith(b'{"code":11,') and frame.endswith(b"xyz")


def test_non_json_serialize_type_is_rejected():
    frame = bytearray(encode_frame(RemotingCommand(code=1, opaque=1)))
    frame[4] = 1
    with pytest.raises(FrameError, match="serialize type 1"):
        decode_frame(bytes(frame))


@given(messages)
def test_message_round_trip(message):
    (decoded,) = decode_messages(encode_message(message))
    assert decoded.sys_flag & ~0x30 == message.sys_flag
    assert attrs.evolve(decoded, sys_flag=message.sys_flag, body_crc=None) == message
    assert decoded.msg_id == message.msg_id


@given(st.lists(messages, max_size=4))
def test_messages_back_to_back(batch):
    assert [m.topic for m in decode_messages(encode_messages(batch))] == [m.topic for m in batch]


def test_message_layout_by_hand():
    message = StoredMessage(topic="T", body=b"123456789", queue_id=2, queue_offset=5, commit_log_offset=1000,
                            properties={"TAGS": "a"}, store_host=("10.0.0.1", 10911), reconsume_times=3)
    data = encode_message(message)
    assert struct.unpack_from(">ii", data) == (len(data), MESSAGE_MAGIC_CODE)
    assert struct.unpack_from(">i", data, 8)[0] == 0xCBF43926 & 0x7FFFFFFF  # the CRC-32 check value
    # messageProperties2String (4.9.8) leaves no separator after the last pair.
    assert data.endswith(b"\x01T\x00\x06TAGS\x01a")
    assert b"\x00\x00\x00\x09123456789\x01T" in data


def test_message_id_of_ipv4_store_host():
    msg_id = create_message_id(("10.0.0.1", 10911), 1000)
    assert msg_id == "0A000001" + "00002A9F" + "00000000000003E8"
    assert decode_message_id(msg_id) == (("10.0.0.1", 10911), 1000)


@given(hosts, longs)
def test_message_id_round_trip(host, offset):
    assert decode_message_id(create_message_id(host, offset)) == (host, offset)
