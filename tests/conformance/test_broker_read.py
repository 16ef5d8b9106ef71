"""The final read of a broker (conformance/runner/backends/broker_read.py) on the model-backed server: the harness's
own client leaves a known state (differential/final_read.py) and the read finds exactly that — committed offsets,
what is left to consume, the DLQ copy with its reconsumeTimes, the copy still parked — and none of its requests
counts as the client's. The same steps on RocketMQ 4.9.8: differential/test_final_read.py."""

from __future__ import annotations

import pytest

from conformance.codec.codes import GET_ALL_DELAY_OFFSET, ResponseCode
from conformance.codec.headers import decode_delay_offset_table, encode_delay_offset_table
from conformance.codec.remoting import RemotingCommand
from conformance.history.records import BrokerRead, QueueRead
from conformance.runner.backends.broker_client import BrokerClient
from conformance.runner.backends.broker_read import read_committed, read_settled
from conformance.runner.backends.model import open_model_backend
from differential.final_read import WORKLOAD, get_expected, leave_state, make_settings, wait_until_due

pytestmark = [pytest.mark.timeout(60), pytest.mark.conformance]


@pytest.fixture(scope="module")
def reads():
    """(settings, the read at once after the last send-back, the backend's final read after it fell due, the
    requests the backend counts as the client's)."""
    settings = make_settings()
    with open_model_backend(settings, WORKLOAD) as backend, BrokerClient(backend.broker_addr) as client:
        parked = leave_state(backend, client)
        wait_until_due(client, settings.group)
        requests_before = len(backend.get_requests())
        final = backend.read_final()
        yield settings, parked, final, requests_before, len(backend.get_requests())


def test_the_read_finds_committed_offsets_pending_keys_the_dlq_and_a_parked_copy(reads):
    settings, parked, _final, _before, _after = reads
    assert parked == get_expected(settings).parked


def test_the_final_read_finds_the_copy_once_it_fell_due(reads):
    settings, _parked, final, _before, _after = reads
    assert final == get_expected(settings).settled
    assert final.get_pending_keys() == {"k2", "k3"}


def test_the_final_reads_requests_are_not_the_clients(reads):
    _settings, _parked, _final, before, after = reads
    assert after == before


def test_the_delay_offset_table_round_trips_in_fastjsons_form():
    """A 4.9.8 broker answered {"offsetTable":{}} when fresh and {"offsetTable":{2:1}} once level 2 delivered one."""
    assert decode_delay_offset_table(b'{"offsetTable":{}}') == {}
    assert decode_delay_offset_table(b'{"offsetTable":{2:1,18:40}}') == {2: 1, 18: 40}
    assert encode_delay_offset_table({18: 40, 2: 1}) == b'{"offsetTable":{2:1,18:40}}'


def test_the_model_server_answers_its_delay_offsets():
    settings = make_settings()
    with open_model_backend(settings, WORKLOAD) as backend, BrokerClient(backend.broker_addr) as client:
        fresh = client.call(GET_ALL_DELAY_OFFSET)
        leave_state(backend, client)
        wait_until_due(client, settings.group)
        moved = decode_delay_offset_table(client.call(GET_ALL_DELAY_OFFSET).body)
    assert (fresh.code, fresh.body) == (ResponseCode.SUCCESS, b'{"offsetTable":{}}')
    # Level 3 (3 + reconsumeTimes 0) delivered k1's and k3's copies; level 4 none (k1's second went to the DLQ).
    assert moved == {3: 2}


class NotFound:
    """A broker that has no offset for any queue."""

    def query_offset(self, group, topic, queue_id):
        return RemotingCommand(code=ResponseCode.QUERY_NOT_FOUND, opaque=1, flag=1)


def test_no_offset_is_minus_one():
    assert read_committed(NotFound(), "G", "T", 0) == -1


def test_reads_are_repeated_until_two_agree():
    answers = iter([BrokerRead(), BrokerRead((QueueRead("T", 0, 1, 1),)), BrokerRead((QueueRead("T", 0, 1, 1),)),
                    BrokerRead()])
    assert read_settled(lambda: next(answers), limit_s=5, poll_s=0.01) == BrokerRead((QueueRead("T", 0, 1, 1),))
