"""Real frames of rocketmq-client-cpp 1.2.3 (PyPI `rocketmq` 0.4.4), captured from the socket by
tests/conformance/tools/capture_cpp_frames.py, decoded by the codec.

The expected values are what the client's source at tag 1.2.3 writes (and the issue's probe saw), not codec output.
"""

import json
import pathlib
import struct
import zlib

import pytest

from conformance.codec.codes import RequestCode
from conformance.codec.headers import decode_json_body
from conformance.codec.message import decode_messages, decode_properties, encode_messages
from conformance.codec.remoting import decode_frame, encode_frame

pytestmark = [pytest.mark.timeout(60), pytest.mark.conformance]
FIXTURES = pathlib.Path(__file__).parent / "fixtures"


def load(name: str) -> bytes:
    return bytes.fromhex((FIXTURES / f"cpp-{name}.hex").read_text().strip())


@pytest.mark.parametrize("path", sorted(FIXTURES.glob("cpp-*.hex")), ids=lambda p: p.stem)
def test_every_captured_frame_is_a_cpp_request(path):
    frame = bytes.fromhex(path.read_text().strip())
    command = decode_frame(frame)
    assert command.language == "CPP" and not command.is_response and not command.is_oneway
    assert path.stem == f"cpp-{RequestCode(command.code).name.lower()}"
    assert {"AccessKey", "OnsChannel", "Signature"} <= command.ext_fields.keys()
    assert decode_frame(encode_frame(command)) == command
    assert struct.unpack_from(">i", frame, 4)[0] >> 24 == 0  # JSON serialize type


def test_pull_request_header():
    header = decode_frame(load("pull_message")).ext_fields
    assert (header["sysFlag"], header["suspendTimeoutMillis"], header["maxMsgNums"]) == ("6", "15000", "32")
    assert (header["consumerGroup"], header["subscription"]) == ("G", "*")
    assert header["topic"] in {"T", "%RETRY%G"}  # the capture keeps whichever queue the client pulled first


def test_send_back_header_has_no_origin_fields():
    header = decode_frame(load("consumer_send_msg_back")).ext_fields
    assert {k: header[k] for k in ("group", "offset", "delayLevel")} == {"group": "G", "offset": "0",
                                                                        "delayLevel": "0"}
    assert not {"originMsgId", "originTopic", "maxReconsumeTimes"} & header.keys()


def test_send_message_v1_header_and_properties():
    command = decode_frame(load("send_message"))
    assert command.code == RequestCode.SEND_MESSAGE and command.body == b"hello"
    properties = decode_properties(command.ext_fields["properties"])
    assert (properties["KEYS"], properties["TAGS"], properties["WAIT"]) == ("k1", "a", "true")
    assert len(properties["UNIQ_KEY"]) == 32


def test_heartbeat_body():
    body = decode_json_body(decode_frame(load("heart_beat")).body)
    (consumer,) = body["consumerDataSet"]
    assert consumer["groupName"] == "G"
    assert sorted(s["topic"] for s in consumer["subscriptionDataSet"]) == ["%RETRY%G", "T"]
    assert json.dumps(body)  # plain JSON, no fastjson-only syntax


def test_a_real_4_9_8_pull_response_decodes_to_what_was_sent():
    """A PULL_MESSAGE response of RocketMQ 4.9.8's broker (tests/conformance/tools/capture_broker_frames.py): the
    expected values are what the tool sent and what the broker's source adds, not decoder output."""
    sent = json.loads((FIXTURES / "rocketmq-4.9.8-pull.json").read_text())
    frame = bytes.fromhex((FIXTURES / "rocketmq-4.9.8-pull.hex").read_text().strip())
    response = decode_frame(frame)
    assert (response.code, response.remark, response.language, response.is_response) == (0, "FOUND", "JAVA", True)
    assert response.ext_fields == {"suggestWhichBrokerId": "0", "nextBeginOffset": "1", "minOffset": "0",
                                   "maxOffset": "1"}
    [message] = decode_messages(response.body)
    body = sent["body"].encode()
    assert (message.topic, message.queue_id, message.body) == (sent["topic"], sent["queueId"], body)
    assert (message.queue_offset, message.commit_log_offset, message.reconsume_times) == (0, 0, 0)
    # SendMessageProcessor adds the broker's cluster name; UtilAll.crc32 is CRC-32 masked to 31 bits.
    assert message.properties == {**sent["properties"], "CLUSTER": "DefaultCluster"}
    assert message.body_crc == zlib.crc32(body) & 0x7FFFFFFF
    host, port = sent["brokerAddr"].rsplit(":", 1)
    assert message.store_host == (host, int(port)) and message.born_host[0] == host
    assert sent["sentAtMillis"] <= message.born_timestamp <= message.store_timestamp <= sent["sentAtMillis"] + 5000
    assert message.msg_id == f"7F000001{int(port):08X}{0:016X}"
    assert encode_messages([message]) == response.body  # the model-backed server writes these very bytes
