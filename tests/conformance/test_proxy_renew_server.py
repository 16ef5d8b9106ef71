"""The model-backed proxy's auto-renew (spec/16-proxy.md PD-07) on the wire, with the renew timings lowered so that a
test sees a renewal in seconds. Where the scan runs (develop's proxy) a push consumer's receive (auto-renew) is
renewed before its invisible time ends, and its ack with the handle it received — expired by then — acts on the
handle the proxy renewed (AckMessageActivity); where it does not (5.3.3, the server's profile) nothing is renewed and
that ack is refused as expired (PD-05)."""

from __future__ import annotations

import time

import pytest
from rocketmq.grpc_protocol import definition_pb2 as pb

from conformance.codec import proxy as codec
from conformance.suite.pop_targets import open_model_pop_target
from model.proxy.settings import ProxyConfig
from tests.conformance.test_proxy_server import Client, names

pytestmark = [pytest.mark.timeout(60), pytest.mark.conformance]
FAST = ProxyConfig(min_invisible_time_mills_for_recv=1000, default_invisible_time_mills=3000,
                   renew_ahead_time_millis=2000, renew_schedule_period_millis=500)


@pytest.fixture(scope="module")
def target():
    with open_model_pop_target() as running:
        server = running.runner.server
        running.runner.call(lambda: (setattr(server.pop, "proxy", FAST), setattr(server.pop.renewals, "proxy", FAST)))
        yield running


@pytest.mark.parametrize("running", [True, False])
def test_a_held_message_is_renewed_where_the_scan_runs_and_its_expired_handle_acks_through_the_renewed_one(target,
                                                                                                          running):
    client, other = Client(target.endpoints), Client(target.endpoints)
    renewals = target.runner.server.pop.renewals
    target.runner.call(lambda: setattr(renewals, "running", running))
    try:
        topic, group = names(target, "renew")
        client.settings(group, topic)
        other.settings(group, topic)
        assert target.backend.send(topic, 0, b"x", "k0") == 0
        request = codec.encode_receive(group, topic, 1, 0, 0, auto_renew=True)
        code, received = codec.decode_receive(client.call("ReceiveMessage", request))
        assert code == pb.Code.OK and [m.message_id for m in received] == ["k0"]
        time.sleep(4.0)  # past the 3 s invisible time: renewed about 1-2 s before it ended, where the scan runs
        held = target.runner.call(lambda: [h.renew_times for h in renewals.held.values()])
        assert held == [1 if running else 0]
        assert not running or other.receive(group, topic)[1] == ()  # renewed: not visible to another consumer
        ack = client.call("AckMessage", codec.encode_ack(group, topic, "k0", received[0].receipt_handle))
        assert ack.status.code == (pb.Code.OK if running else pb.Code.INVALID_RECEIPT_HANDLE)
        assert target.runner.call(lambda: dict(renewals.held)) == {}
    finally:
        target.runner.call(lambda: setattr(renewals, "running", False))
        client.close()
        other.close()
