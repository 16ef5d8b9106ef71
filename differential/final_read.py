"""Steps that leave a known state in a broker, for the tests of the final read (conformance/runner/backends/
broker_read.py) on the model-backed server (tests/conformance/test_broker_read.py) and on RocketMQ 4.9.8
(differential/test_final_read.py): the harness's own BrokerClient as the consumer, no real client.

Topic T with two queues: k0, k2 in queue 0, k1, k3 in queue 1. The group commits queue 0 at 1 (k2 left to consume)
and queue 1 at 2; k1 is sent back, its copy (reconsumeTimes 1) falls due in %RETRY%<group> after 1 s, is pulled,
sent back again and goes to %DLQ%<group> (reconsumeTimes 2, maxReconsumeTimes 1), and the group commits %RETRY% at 1;
k3 is sent back last, and the first read follows at once, while its copy is still parked (the delay table's levels
are 1 s on both backends); the second read follows once it has fallen due.
"""

from __future__ import annotations

import time
import uuid

from attrs import frozen

from conformance.codec.message import StoredMessage, decode_messages
from conformance.history.records import BrokerRead, QueueRead, RunSettings
from conformance.history.workload import Workload
from conformance.runner.backends.broker_client import BrokerClient
from conformance.runner.backends.broker_read import read_broker

WORKLOAD = Workload(())
DUE_LIMIT_S = 10.0


def make_settings() -> RunSettings:
    """Fresh names (the real broker serves the whole session), two queues, retryMaxTimes 1."""
    suffix = uuid.uuid4().hex[:8]
    return RunSettings(group=f"final_read_{suffix}", topic=f"FinalRead_{suffix}", retry_max_times=1,
                       topic_queue_nums=2)


@frozen
class Expected:
    """What the steps leave, by RocketMQ 4.9.8's rules: `parked` while k3's copy waits, `settled` after."""

    parked: BrokerRead
    settled: BrokerRead


def get_expected(settings: RunSettings) -> Expected:
    topic, retry = settings.topic, f"%RETRY%{settings.group}"
    queues = (QueueRead(topic, 0, 1, 2, (("k2", 0, 1),)), QueueRead(topic, 1, 2, 2, ()))
    dead = (("k1", 2),)
    parked = BrokerRead((*queues, QueueRead(retry, 0, 1, 1, ())), dead, (("k3", 1),))
    settled = BrokerRead((*queues, QueueRead(retry, 0, 1, 2, (("k3", 1, 1),))), dead, ())
    return Expected(parked, settled)


def pull_all(client: BrokerClient, group: str, topic: str, queue_id: int, offset: int = 0,
             expect: int = 0) -> list[StoredMessage]:
    """Every message of the queue from `offset`, pulled again until there are at least `expect` of them (within
    DUE_LIMIT_S): a real broker dispatches a stored message to its consume queue a moment after acknowledging the
    send, so a pull made at once may see fewer than were sent."""
    deadline = time.monotonic() + DUE_LIMIT_S
    while True:
        response = client.pull(group, topic, queue_id, offset)
        found = decode_messages(response.body) if response.code == 0 else []
        if len(found) >= expect or time.monotonic() >= deadline:
            return found
        time.sleep(0.05)


def send_back(client: BrokerClient, group: str, message: StoredMessage, topic: str) -> None:
    response = client.send_back(group, message.commit_log_offset, 0, message.msg_id, topic, 1)
    if response.code != 0:
        raise AssertionError(f"send-back of {message.properties.get('UNIQ_KEY')}: {response.code} {response.remark}")


def wait_for_copy(client: BrokerClient, group: str, retry: str) -> StoredMessage:
    """The first copy in %RETRY%<group> queue 0, once it has fallen due."""
    deadline = time.monotonic() + DUE_LIMIT_S
    while time.monotonic() < deadline:
        found = pull_all(client, group, retry, 0)
        if found:
            return found[0]
        time.sleep(0.1)
    raise AssertionError(f"no copy fell due in {retry} within {DUE_LIMIT_S} s")


def leave_state(backend, client: BrokerClient) -> BrokerRead:
    """Run the steps against `backend` (produce through it, the rest with `client`); the read made at once after
    the last send-back (k3's copy still parked)."""
    group, topic, retry = backend.settings.group, backend.settings.topic, f"%RETRY%{backend.settings.group}"
    for index, key in enumerate(("k0", "k1", "k2", "k3")):
        backend.produce(key, None, 0, index % 2)
    _k0, _k2 = pull_all(client, group, topic, 0, expect=2)
    k1, k3 = pull_all(client, group, topic, 1, expect=2)
    for queue_id, offset in ((0, 1), (1, 2)):
        assert client.update_offset(group, topic, queue_id, offset).code == 0
    send_back(client, group, k1, topic)
    send_back(client, group, wait_for_copy(client, group, retry), topic)
    assert client.update_offset(group, retry, 0, 1).code == 0
    send_back(client, group, k3, topic)
    return read_broker(client, group, topic, getattr(backend, "marks", ()))


def wait_until_due(client: BrokerClient, group: str) -> None:
    """Until the second copy has fallen due in %RETRY%<group>."""
    deadline = time.monotonic() + DUE_LIMIT_S
    while time.monotonic() < deadline and int(client.max_offset(f"%RETRY%{group}", 0).ext_fields["offset"]) < 2:
        time.sleep(0.1)
