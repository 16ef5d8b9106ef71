"""Capture a real PULL_MESSAGE response of RocketMQ 4.9.8's broker: the bytes the codec's message decoder must read.

Run by hand, inside the loopback-only namespace the real broker needs (its Debian run-time jars installed, see
.ci/install-rocketmq-runtime):

    python -m conformance.runner.backends.loopback .venv/bin/python tests/conformance/tools/capture_broker_frames.py

It sends SENT (below) to a fresh broker, pulls it, and rewrites tests/conformance/fixtures/rocketmq-4.9.8-pull.hex
with the response frame exactly as read from the socket, and rocketmq-4.9.8-pull.json with what it sent and when.
"""

from __future__ import annotations

import json
import pathlib
import tempfile
import time

from conformance.codec.remoting import encode_frame
from conformance.runner.backends import admin
from conformance.runner.backends.broker_client import PULL_FLAG_SUBSCRIPTION, PULL_MESSAGE, BrokerClient
from conformance.runner.backends.loopback import require_loopback_only
from conformance.runner.backends.remoting_client import make_request
from conformance.runner.backends.rocketmq import RocketMQSession
from conformance.runner.backends.settings_table import get_real_broker_conf

FIXTURES = pathlib.Path(__file__).resolve().parents[1] / "fixtures"
GROUP = "rmqspec_capture"
SENT = {"topic": "TopicTest", "queueId": 0, "body": "retry me \u00e9\u0001",
        "properties": {"TAGS": "TagA", "KEYS": "k1 k2", "UNIQ_KEY": "0A0B0C0D00002A9F0000000000000001",
                       "custom": "a=b;c"}}


def capture_pull(client: BrokerClient) -> bytes:
    """One pull of queue 0 from offset 0, answered at once; the whole response frame."""
    fields = {"consumerGroup": GROUP, "topic": SENT["topic"], "queueId": SENT["queueId"],
              "queueOffset": 0, "maxMsgNums": 32, "sysFlag": PULL_FLAG_SUBSCRIPTION, "commitOffset": 0,
              "suspendTimeoutMillis": 0, "subscription": "*", "subVersion": 0, "expressionType": "TAG"}
    client.send_raw(encode_frame(make_request(PULL_MESSAGE, fields, opaque=7)))
    return client.read_frame()


def main() -> None:
    require_loopback_only()
    session = RocketMQSession(get_real_broker_conf(), pathlib.Path(tempfile.mkdtemp()))
    broker = session.open()
    try:
        with BrokerClient(broker.broker_addr) as client:
            admin.create_topic(client, SENT["topic"])
            sent_at = int(time.time() * 1000)
            response = client.send(SENT["topic"], SENT["queueId"], SENT["body"].encode(), SENT["properties"])
            assert response.code == 0, response
            admin.create_group(client, GROUP)
            frame = capture_pull(client)
    finally:
        session.close(failed=False)
    (FIXTURES / "rocketmq-4.9.8-pull.hex").write_text(frame.hex() + "\n")
    record = {**SENT, "sentAtMillis": sent_at, "brokerAddr": broker.broker_addr}
    (FIXTURES / "rocketmq-4.9.8-pull.json").write_text(json.dumps(record, indent=1, sort_keys=True) + "\n")
    print(f"captured a {len(frame)}-byte pull response")


if __name__ == "__main__":
    main()
