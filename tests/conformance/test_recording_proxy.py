"""The recording proxy the real backend's runs go through (conformance/runner/backends/recording_proxy.py), in front of
the model-backed server: it records each request with its response code, and rewrites only the broker address in
routes and the store host of pulled messages, so that a client keeps coming through it."""

from __future__ import annotations

import json

from conformance.codec.message import decode_messages
from conformance.runner.backends.broker_client import BrokerClient
from conformance.runner.backends.recording_proxy import RecordingProxy
from conformance.runner.server.runner import run_server

TOPIC = "ProxyTopic"


def test_proxy_records_and_rewrites_only_addresses():
    with run_server() as runner, RecordingProxy(runner.server.namesrv_addr, runner.server.broker_addr) as proxy:
        with BrokerClient(proxy.namesrv_addr) as namesrv:
            route = json.loads(namesrv.call(105, {"topic": TOPIC}).body)
        with BrokerClient(proxy.broker_addr) as broker:
            sent = broker.send(TOPIC, 0, b"body", {"UNIQ_KEY": "k0"})
            pulled = broker.pull("G", TOPIC, 0, 0)
            missing = broker.pull("G", "NoSuchTopic", 0, 0)
        requests = proxy.get_requests()
    assert [a for d in route["brokerDatas"] for a in d["brokerAddrs"].values()] == [proxy.broker_addr]
    [message] = decode_messages(pulled.body)
    assert (message.body, message.properties["UNIQ_KEY"]) == (b"body", "k0")
    assert f"{message.store_host[0]}:{message.store_host[1]}" == proxy.broker_addr
    assert [(r.code, r.response_code) for r in requests] == [(105, 0), (10, sent.code), (11, 0), (11, missing.code)]
    assert missing.code == 17 and requests[2].fields["topic"] == TOPIC
    assert requests[0].connection != requests[1].connection == requests[3].connection
