"""admin.wait_for_dispatch: a read right after a write waits until the broker reports nothing left to dispatch
(GET_BROKER_RUNTIME_INFO's dispatchBehindBytes), not a fixed 30 ms — differential-broker read an empty queue from a
real 4.9.8 broker at load 10 — and a broker that does not answer the request gets the old pause."""

from __future__ import annotations

import json

from conformance.codec.codes import GET_BROKER_RUNTIME_INFO, ResponseCode
from conformance.codec.remoting import RemotingCommand
from conformance.runner.backends import admin


class Broker:
    """Answers GET_BROKER_RUNTIME_INFO with each of `behind` in turn (None: not supported)."""

    def __init__(self, behind: list[str | None]):
        self.behind, self.calls = behind, 0

    def call(self, code: int, fields: dict | None = None, body: bytes = b"") -> RemotingCommand:
        assert code == GET_BROKER_RUNTIME_INFO
        value = self.behind[min(self.calls, len(self.behind) - 1)]
        self.calls += 1
        if value is None:
            return RemotingCommand(ResponseCode.REQUEST_CODE_NOT_SUPPORTED, 0)
        table = json.dumps({"table": {"dispatchBehindBytes": value, "msgPutTotalTodayNow": "3"}}).encode()
        return RemotingCommand(ResponseCode.SUCCESS, 0, body=table)


def test_it_waits_until_the_broker_dispatched_everything():
    broker = Broker(["1024", "512", "0", "0"])
    admin.wait_for_dispatch(broker)
    assert broker.calls == 3


def test_a_broker_that_does_not_report_it_gets_the_fixed_pause():
    broker = Broker([None])
    admin.wait_for_dispatch(broker)
    assert broker.calls == 1


def test_it_gives_up_at_its_limit():
    broker = Broker(["1"])
    admin.wait_for_dispatch(broker, limit_s=0.05)
    assert 1 < broker.calls < 50
