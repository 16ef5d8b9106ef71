"""The final read of a broker (conformance/runner/backends/broker_read.py) on RocketMQ 4.9.8 and on the model-backed
server after the same steps (differential/final_read.py): both reads are RocketMQ's expected state, so they are equal.

Everything a BrokerRead holds is comparable across the backends: queue offsets (not commit-log offsets, which differ
with the stores' record sizes) in a fresh topic and group, UNIQ_KEYs and reconsumeTimes. The schedule queues of the
session's broker hold other examples' copies: the real read starts at the backend's marks and keeps only copies bound
for this run's %RETRY% topic.
"""

from __future__ import annotations

import pytest

from conformance.runner.backends.broker_client import BrokerClient
from conformance.runner.backends.model import open_model_backend
from conformance.runner.backends.real_run import open_real_backend
from differential.final_read import WORKLOAD, get_expected, leave_state, make_settings, wait_until_due

pytestmark = pytest.mark.timeout(120)


def read_twice(backend) -> tuple:
    """The read at once after the last send-back, and the backend's final read once that copy fell due."""
    with BrokerClient(backend.broker_addr) as client:
        parked = leave_state(backend, client)
        wait_until_due(client, backend.settings.group)
    return parked, backend.read_final()


def test_final_read_of_rocketmq_is_the_models(rocketmq):
    settings = make_settings()
    with open_real_backend(rocketmq, settings, WORKLOAD) as backend:
        real = read_twice(backend)
    with open_model_backend(settings, WORKLOAD) as backend:
        model = read_twice(backend)
    expected = get_expected(settings)
    assert real == (expected.parked, expected.settled)
    assert model == real
