"""Each broker rule of the spec, checked over the wire against the backend: what the rule says, sent and read
back as requests. The expectations are the spec's statements, not any backend's answers."""

from __future__ import annotations

import json
import time

import pytest

from conformance.codec.codes import GET_ALL_TOPIC_CONFIG
from conformance.codec.message import decode_message_id
from conformance.runner.backends import admin
from conformance.runner.backends.broker_client import BrokerClient
from differential.example import SCHEDULE_TOPIC, Names, Run, find_deliveries

SUCCESS, SYSTEM_ERROR, NO_PERMISSION, GROUP_NOT_EXIST = 0, 1, 16, 26
PULL_NOT_FOUND, PULL_OFFSET_MOVED = 19, 21


class Case:
    """One test's fresh topic and groups on one backend (roles as in differential/steps.py)."""

    def __init__(self, client: BrokerClient, broker_name: str) -> None:
        self.client, self.names = client, Names()
        self.run = Run(client, broker_name, self.names)
        self.run.set_up()
        self.marks = self.run.get_schedule_marks()
        self.topic = self.names.topic

    def group(self, role: str) -> str:
        return self.names.group(role)

    def send(self, queue_id: int = 0, delay: int | None = None, reconsume_times: int | None = None,
             max_times: int | None = None, topic: str | None = None, **props: str) -> tuple[int, str]:
        """Stores a message; returns its commit-log offset and offset message id."""
        properties = {"UNIQ_KEY": f"U-{time.monotonic_ns()}", "WAIT": "true", "TAGS": "a", **props}
        if delay is not None:
            properties["DELAY"] = str(delay)
        response = self.client.send(topic or self.topic, queue_id, b"payload", properties, reconsume_times, max_times)
        assert response.code == SUCCESS, response
        admin.wait_for_dispatch(self.client)  # to the consume queue
        msg_id = response.ext_fields["msgId"]
        return decode_message_id(msg_id)[1], msg_id

    def send_back(self, offset: int, role: str = "q1", delay_level: int = 0, max_times: int | None = None,
                  origin: str | None = None) -> int:
        code = self.client.send_back(self.group(role), offset, delay_level, origin, self.topic, max_times).code
        admin.wait_for_dispatch(self.client)
        return code

    def read(self, topic: str) -> list:
        return [m for q in range(4) for m in self.run.read_queue(topic, q)]

    def parked(self) -> list:
        return self.run.read_parked(self.marks)

    def topic_config(self, topic: str) -> dict | None:
        body = self.client.call(GET_ALL_TOPIC_CONFIG).body
        return json.loads(body)["topicConfigTable"].get(topic)

    def wait_for(self, topic: str, count: int, timeout: float = 5.0) -> list:
        deadline = time.monotonic() + timeout
        while len(messages := self.read(topic)) < count and time.monotonic() < deadline:
            time.sleep(0.05)
        return messages


@pytest.fixture
def case(target):
    with BrokerClient(target.broker_addr) as client:
        yield Case(client, target.broker_name)
        admin.update_broker_config(client, brokerPermission=6)


@pytest.mark.rules("SB-01")
def test_unknown_group_is_refused(case):
    offset, _ = case.send()
    assert case.send_back(offset, role="unknown") == GROUP_NOT_EXIST
    assert case.parked() == [] and case.read(f"%DLQ%{case.group('unknown')}") == []


@pytest.mark.rules("SB-02")
def test_read_only_broker_refuses_send_back(case):
    offset, _ = case.send()
    admin.update_broker_config(case.client, brokerPermission=admin.PERM_READ)
    assert case.send_back(offset) == NO_PERMISSION
    admin.update_broker_config(case.client, brokerPermission=admin.PERM_READ_WRITE)
    assert case.parked() == []


@pytest.mark.rules("SB-03")
def test_group_without_retry_queue_drops_the_message(case):
    offset, _ = case.send()
    assert case.send_back(offset, role="q0") == SUCCESS
    assert case.parked() == [] and case.read(f"%RETRY%{case.group('q0')}") == []
    assert case.read(f"%DLQ%{case.group('q0')}") == []


@pytest.mark.rules("SB-04", "SB-10", "SB-11", "SB-13")
@pytest.mark.parametrize("reconsume_times, max_times, delay_level", [(2, None, 0), (3, 3, 0), (0, 5, -1), (0, 5, -2)])
def test_dead_letter_at_maximum_or_negative_level(case, reconsume_times, max_times, delay_level):
    offset, msg_id = case.send(reconsume_times=reconsume_times)  # q1: retryMaxTimes 2
    assert case.send_back(offset, delay_level=delay_level, max_times=max_times) == SUCCESS
    assert case.parked() == []  # SB-11: stored at once
    dlq = case.read(f"%DLQ%{case.group('q1')}")
    assert [(m.queue_id, m.reconsume_times) for m in dlq] == [(0, reconsume_times + 1)]
    props = dlq[0].properties
    assert (props["DELAY"], props["WAIT"], props["ORIGIN_MESSAGE_ID"], props["RETRY_TOPIC"]) == (
        "0", "false", msg_id, case.topic)
    config = case.topic_config(f"%DLQ%{case.group('q1')}")
    assert (config["readQueueNums"], config["writeQueueNums"], config["perm"]) == (1, 1, 6)


@pytest.mark.rules("SB-05", "SB-14", "ST-01", "ST-02")
def test_retry_topic_created_and_copy_parked(case):
    offset, _ = case.send()
    assert case.topic_config(f"%RETRY%{case.group('q3')}") is None
    for _ in range(6):
        assert case.send_back(offset, role="q3") == SUCCESS
    config = case.topic_config(f"%RETRY%{case.group('q3')}")
    assert (config["readQueueNums"], config["writeQueueNums"], config["perm"]) == (3, 3, 6)
    parked = case.parked()
    assert len(parked) == 6
    assert {(m.topic, m.queue_id, m.properties["DELAY"]) for m in parked} == {(SCHEDULE_TOPIC, 2, "3")}
    assert {m.properties["REAL_TOPIC"] for m in parked} == {f"%RETRY%{case.group('q3')}"}
    assert {int(m.properties["REAL_QID"]) for m in parked} <= {0, 1, 2}


@pytest.mark.rules("SB-06")
def test_retry_topic_not_writeable_refuses_even_for_the_dlq(case):
    offset, _ = case.send(reconsume_times=5)
    admin.create_topic(case.client, f"%RETRY%{case.group('q1')}", 1, admin.PERM_READ)
    assert case.send_back(offset) == NO_PERMISSION
    assert case.read(f"%DLQ%{case.group('q1')}") == []


@pytest.mark.rules("SB-07")
def test_unknown_offset_is_a_system_error(case):
    case.send()
    assert case.send_back(1 << 40, role="q3") == SYSTEM_ERROR
    assert case.topic_config(f"%RETRY%{case.group('q3')}") is not None


@pytest.mark.rules("SB-08", "SB-12", "SB-13", "DT-05", "DT-06")
def test_retry_chain_keeps_topic_and_counts(case):
    offset, msg_id = case.send(queue_id=1, reconsume_times=0)
    assert case.send_back(offset, max_times=16) == SUCCESS
    first = case.wait_for(f"%RETRY%{case.group('q1')}", 1)
    assert [(m.reconsume_times, m.queue_id) for m in first] == [(1, 0)]
    props = first[0].properties
    assert (props["RETRY_TOPIC"], props["DELAY"], props["ORIGIN_MESSAGE_ID"]) == (case.topic, "3", msg_id)
    assert props["REAL_TOPIC"] == f"%RETRY%{case.group('q1')}" and first[0].body == b"payload"
    assert case.send_back(first[0].commit_log_offset, max_times=16) == SUCCESS
    second = case.wait_for(f"%RETRY%{case.group('q1')}", 2)[1]
    assert (second.reconsume_times, second.properties["DELAY"]) == (2, "4")
    assert (second.properties["RETRY_TOPIC"], second.properties["ORIGIN_MESSAGE_ID"]) == (case.topic, msg_id)


@pytest.mark.rules("SB-09")
def test_header_maximum_wins_over_group(case):
    offset, _ = case.send(reconsume_times=3)  # q3: retryMaxTimes 16
    assert case.send_back(offset, role="q3", max_times=3) == SUCCESS
    assert len(case.read(f"%DLQ%{case.group('q3')}")) == 1
    offset, _ = case.send(reconsume_times=3)  # q1: retryMaxTimes 2
    assert case.send_back(offset, role="q1", max_times=16) == SUCCESS
    assert case.read(f"%DLQ%{case.group('q1')}") == [] and len(case.parked()) == 1


@pytest.mark.rules("SB-12", "ST-04")
@pytest.mark.parametrize("delay_level, stored_level", [(0, 4), (1, 1), (2, 2), (18, 18), (19, 18), (40, 18)])
def test_send_back_level(case, delay_level, stored_level):
    offset, _ = case.send(reconsume_times=1)
    assert case.send_back(offset, delay_level=delay_level, max_times=16) == SUCCESS
    [parked] = case.parked()
    assert (parked.queue_id, parked.properties["DELAY"]) == (stored_level - 1, str(stored_level))


@pytest.mark.rules("ST-01", "ST-02", "ST-04", "DT-05", "DT-06")
@pytest.mark.parametrize("delay, stored_level", [(1, 1), (5, 5), (19, 18), (0, None), (-1, None)])
def test_delayed_send_is_parked_then_delivered(case, delay, stored_level):
    case.send(queue_id=1, delay=delay)
    parked = case.parked()
    if stored_level is None:
        assert parked == [] and [m.queue_id for m in case.read(case.topic)] == [1]
        return
    assert [(p.queue_id, p.properties["REAL_TOPIC"], p.properties["REAL_QID"]) for p in parked] == [
        (stored_level - 1, case.topic, "1")]
    [delivered] = case.wait_for(case.topic, 1)
    assert (delivered.queue_id, delivered.properties["DELAY"]) == (1, str(stored_level))
    assert 1000 <= delivered.store_timestamp - parked[0].store_timestamp <= 1500  # 1 s levels, 0.5 s tolerance


@pytest.mark.rules("DT-03")
def test_level_delivers_in_queue_order(case):
    uniq = [f"ORDER-{i}" for i in range(5)]
    for key in uniq:
        case.send(delay=2, UNIQ_KEY=key)
    delivered = case.wait_for(case.topic, 5)
    assert [m.properties["UNIQ_KEY"] for m in sorted(delivered, key=lambda m: m.queue_offset)] == uniq


@pytest.mark.rules("RS-01")
def test_direct_send_for_unknown_group_is_refused(case):
    response = case.client.send(f"%RETRY%{case.group('unknown')}", 0, b"x", {"WAIT": "true"}, 1, 16)
    assert response.code == GROUP_NOT_EXIST


@pytest.mark.rules("RS-02", "RS-06")
def test_direct_send_stored_with_header_count_and_delay(case):
    retry = f"%RETRY%{case.group('q3')}"
    case.send(topic=retry, reconsume_times=2, max_times=16, delay=1, RETRY_TOPIC=case.topic)
    [parked] = case.parked()
    assert (parked.reconsume_times, parked.properties["REAL_TOPIC"]) == (2, retry)
    [delivered] = case.wait_for(retry, 1)
    assert delivered.reconsume_times == 2


@pytest.mark.rules("RS-03", "RS-05")
@pytest.mark.parametrize("reconsume_times, max_times, to_dlq", [(2, 2, True), (1, 2, False), (3, None, True)])
def test_direct_send_redirect_at_maximum(case, reconsume_times, max_times, to_dlq):
    retry = f"%RETRY%{case.group('q1')}"  # retryMaxTimes 2
    case.send(topic=retry, reconsume_times=reconsume_times, max_times=max_times, delay=3 + reconsume_times)
    [parked] = case.parked()  # RS-05: 4.9 keeps the client's DELAY, so even the DLQ copy is parked first
    destination = f"%DLQ%{case.group('q1')}" if to_dlq else retry
    assert parked.properties["REAL_TOPIC"] == destination


@pytest.mark.rules("RS-07")
def test_read_only_broker_accepts_a_plain_send(case):
    """Over the wire a read-only broker still stores a send to a topic that is not ordered (msgCheck refuses only
    ordered topics); RocketMQ's producers never send there because the route marks the broker read-only."""
    admin.update_broker_config(case.client, brokerPermission=admin.PERM_READ)
    response = case.client.send(case.topic, 0, b"x", {"WAIT": "true"})
    admin.update_broker_config(case.client, brokerPermission=admin.PERM_READ_WRITE)
    assert response.code == SUCCESS


@pytest.mark.rules("OS-05")
def test_broker_stores_a_smaller_offset(case):
    group = case.group("q1")
    for offset in (5, 2):
        assert case.client.update_offset(group, case.topic, 0, offset).code == SUCCESS
        assert case.client.query_offset(group, case.topic, 0).ext_fields["offset"] == str(offset)


@pytest.mark.rules("PL-04")
def test_pull_answers(case):
    for _ in range(2):
        case.send(queue_id=0)
    group = case.group("q1")
    assert case.client.pull(group, case.topic, 0, 0).code == SUCCESS
    assert case.client.pull(group, case.topic, 0, 2).code == PULL_NOT_FOUND  # at the maximum
    assert case.client.pull(group, case.topic, 0, 5).code == PULL_OFFSET_MOVED  # above it: OFFSET_ILLEGAL


@pytest.mark.rules("LK-01", "LK-02")
def test_locks(case):
    from conformance.runner.backends.broker_client import get_locked_queue_ids

    group, name = case.group("q1"), case.run.broker_name
    assert get_locked_queue_ids(case.client.lock(group, "c1", name, case.topic, [0, 1])) == [0, 1]
    assert get_locked_queue_ids(case.client.lock(group, "c1", name, case.topic, [0])) == [0]  # its own
    assert get_locked_queue_ids(case.client.lock(group, "c2", name, case.topic, [0, 1])) == []
    assert case.client.unlock(group, "c2", name, case.topic, [0, 1]).code == SUCCESS  # not c2's: kept
    assert get_locked_queue_ids(case.client.lock(group, "c2", name, case.topic, [0, 1])) == []
    assert case.client.unlock(group, "c1", name, case.topic, [1]).code == SUCCESS
    assert get_locked_queue_ids(case.client.lock(group, "c2", name, case.topic, [0, 1])) == [1]


@pytest.mark.rules("RB-04")
def test_never_committed_offset_of_a_young_queue_is_zero(case):
    """The broker half of computePullFromWhere: no committed offset, the queue's head still in memory -> 0."""
    case.send(queue_id=0)
    response = case.client.query_offset(case.group("q1"), case.topic, 0)
    assert (response.code, response.ext_fields.get("offset")) == (SUCCESS, "0")


@pytest.mark.rules("RS-04")
def test_locked_group_direct_send_is_not_redirected_in_4_9(case):
    """RS-04 is a 5.1.1+ rule: 4.9.8 stores a direct send below the maximum in %RETRY% even while the group holds
    a queue lock."""
    group = case.group("q3")
    case.client.lock(group, "c1", case.run.broker_name, case.topic, [0])
    case.send(topic=f"%RETRY%{group}", reconsume_times=0, max_times=16)
    assert len(case.read(f"%RETRY%{group}")) == 1 and case.read(f"%DLQ%{group}") == []


@pytest.mark.rules("ST-06")
def test_put_appends_at_the_end_of_its_queue(case):
    before = time.time() * 1000
    for _ in range(3):
        case.send(queue_id=1)
    stored = case.read(case.topic)
    assert [(m.queue_id, m.queue_offset) for m in stored] == [(1, 0), (1, 1), (1, 2)]
    assert all(before - 1000 <= m.store_timestamp <= time.time() * 1000 + 1000 for m in stored)  # broker clock


@pytest.mark.rules("DT-02", "DT-04")
def test_delivery_within_one_recheck_period(case):
    """Parked messages of 1 s levels come out 1 s after they were stored, plus at most one 100 ms re-check period
    of their level (DT-02, DT-04) and a stated 150 ms of scheduling slack: measured here 1012-1097 ms."""
    for i in range(10):
        case.send(delay=(1, 3)[i % 2])
        time.sleep(0.013 * i)  # spread the puts over the levels' 100 ms periods
    deadline = time.monotonic() + 5
    while None in (delays := find_deliveries(case.parked(), case.run.read_landed())) and time.monotonic() < deadline:
        time.sleep(0.1)
    assert len(delays) == 10 and all(d is not None and 1000 <= d <= 1250 for d in delays), delays
