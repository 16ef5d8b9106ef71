"""The model's broker half against RocketMQ 4.9.8, request by request: Hypothesis draws a stored message and a
CONSUMER_SEND_MSG_BACK or a direct send to %RETRY%, the real broker answers over the wire, the model answers the
same request from the same state (differential/model_oracle.py), and code, destination, properties and
reconsumeTimes must agree. Each example records, per rule the model says it took, whether the two agreed."""

from __future__ import annotations

import json
import time

import immutables
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from conformance.runner.backends import admin
from conformance.runner.backends.broker_client import BrokerClient, get_locked_queue_ids
from conformance.runner.backends.settings_table import DELAY_LEVELS, DELAY_SECONDS
from differential import model_oracle as oracle
from differential.example import Names, Run, find_deliveries
from model.broker.consumer_offsets import commit_offset, query_offset
from model.broker.delay_timer import process_schedule_until
from model.broker.locks import on_lock_batch, on_unlock_batch
from model.broker.store import put_message
from model.values.message import Message, MessageQueue
from model.values.records import evolve

NOW = oracle.NOW
CONFIG = oracle.get_config(DELAY_LEVELS, DELAY_SECONDS)
MODEL = "model"
# record_rules only appends to the session's records: nothing in it is per example.
RECORDER = [HealthCheck.function_scoped_fixture]

extra_properties = st.fixed_dictionaries({}, optional={
    "RETRY_TOPIC": st.just("ORIGINAL-TOPIC"), "ORIGIN_MESSAGE_ID": st.sampled_from(("ORIGIN-X", " "))})
roles = st.sampled_from(("q0", "q1", "q3", "unknown"))
maxima = st.one_of(st.none(), st.integers(0, 4), st.just(16))


send_back_cases = st.builds(
    oracle.SendBackCase, reconsume_times=st.integers(0, 4), props=extra_properties, role=roles,
    delay_level=st.sampled_from((-2, -1, 0, 1, 2, 17, 18, 19, 40)), max_times=maxima,
    perm=st.sampled_from(("rw", "rw", "r", "w")), retry_read_only=st.booleans(), bogus=st.booleans())


@settings(max_examples=60, deadline=None, suppress_health_check=RECORDER)
@given(case=send_back_cases)
def test_send_back_agrees_with_model(rocketmq, record_rules, case):
    verdict = oracle.run_send_back_case(rocketmq.broker_addr, CONFIG, case)
    record_rules(verdict.rules, MODEL, verdict.agrees, verdict.detail)
    assert verdict.agrees, verdict.detail


@settings(max_examples=40, deadline=None, suppress_health_check=RECORDER)
@given(reconsume_times=st.one_of(st.none(), st.integers(0, 4)), max_times=maxima, role=roles,
       delay=st.sampled_from((None, 1, 3, 5)), props=extra_properties)
def test_direct_retry_send_agrees_with_model(rocketmq, record_rules, reconsume_times, max_times, role, delay, props):
    names = Names()
    group = names.group(role)
    retry = f"%RETRY%{group}"
    properties = {"UNIQ_KEY": f"U-{time.monotonic_ns()}", "WAIT": "true", "TAGS": "a", **props}
    if delay is not None:
        properties["DELAY"] = str(delay)
    with BrokerClient(rocketmq.broker_addr) as client:
        run = Run(client, "broker-a", names)
        run.set_up()
        marks = run.get_schedule_marks()
        assert client.heartbeat("c1", group, names.topic).code == 0  # the retry topic as a real consumer makes it
        code = client.send(retry, 0, b"payload", properties, reconsume_times, max_times).code
        copies = oracle.read_copies(run, marks, group)
    broker = oracle.create_model_broker(CONFIG, names, admin.PERM_READ_WRITE, None)
    message = Message(retry, b"payload", "a", immutables.Map(properties))
    model = oracle.predict_retry_send(broker, CONFIG, message, reconsume_times, max_times)
    verdict = oracle.compare((code, copies), model, names, ("", ""), False)
    record_rules(verdict.rules, MODEL, verdict.agrees, verdict.detail)
    assert verdict.agrees, verdict.detail


lock_ops = st.tuples(st.sampled_from(("lock", "unlock")), st.sampled_from(("q1", "q3")), st.sampled_from(("c1", "c2")),
                     st.lists(st.integers(0, 1), min_size=1, max_size=2, unique=True))
offset_ops = st.tuples(st.just("commit"), st.sampled_from(("q1", "q3")), st.integers(0, 1), st.integers(0, 9))


@settings(max_examples=30, deadline=None, suppress_health_check=RECORDER)
@given(ops=st.lists(st.one_of(lock_ops, offset_ops), min_size=1, max_size=10))
def test_locks_and_offsets_agree_with_model(rocketmq, record_rules, ops):
    """LK-01/LK-02 and OS-05: each lock answer and every committed offset read back, on both, within one lease."""
    names = Names()
    broker = oracle.create_model_broker(CONFIG, names, admin.PERM_READ_WRITE, None)
    real, model = [], []
    with BrokerClient(rocketmq.broker_addr) as client:
        Run(client, "broker-a", names).set_up()
        for kind, role, who, arg in ops:
            group = names.group(role)
            if kind == "commit":
                assert client.update_offset(group, names.topic, who, arg).code == 0
                real.append(client.query_offset(group, names.topic, who).ext_fields["offset"])
                broker = commit_offset(broker, group, names.topic, who, arg)
                model.append(str(query_offset(broker, group, names.topic, who)))
                continue
            call = client.lock if kind == "lock" else client.unlock
            response = call(group, who, "broker-a", names.topic, arg)
            real.append(get_locked_queue_ids(response) if kind == "lock" else response.code)
            mqs = [MessageQueue(names.topic, q) for q in arg]
            if kind == "lock":
                result = on_lock_batch(broker, group, mqs, who, NOW)
                broker = result.broker
                model.append(sorted(mq.queue_id for mq in result.granted))
            else:
                broker = on_unlock_batch(broker, group, mqs, who)
                model.append(0)
    rules = {"lock": ("LK-01",), "unlock": ("LK-02",), "commit": ("OS-05",)}
    touched = {rule for op in ops for rule in rules[op[0]]}
    record_rules(sorted(touched), MODEL, real == model, f"rocketmq-4.9.8: {real}\nmodel: {model}")
    assert real == model


@settings(max_examples=12, deadline=None, suppress_health_check=RECORDER)
@given(puts=st.lists(st.tuples(st.sampled_from((1, 2, 18, 19)), st.integers(0, 1), st.integers(0, 3),
                               extra_properties), min_size=1, max_size=4))
def test_delay_timer_agrees_with_model(rocketmq, record_rules, puts):
    """Delayed sends parked and delivered by the real broker's timer and by the model's (process_schedule_until):
    the delivered copies (topic, queue, properties, reconsumeTimes) must be the same, and each delivery delay
    within [1 s, 1 s + one 100 ms period] on the model, [1 s, 1.25 s] on the real broker (measured 1012-1097 ms)."""
    names = Names()
    broker = oracle.create_model_broker(CONFIG, names, admin.PERM_READ_WRITE, None)
    with BrokerClient(rocketmq.broker_addr) as client:
        run = Run(client, "broker-a", names)
        run.set_up()
        marks = run.get_schedule_marks()
        for i, (delay, queue_id, reconsume_times, props) in enumerate(puts):
            properties = {"UNIQ_KEY": f"D{i}", "TAGS": "a", "DELAY": str(delay), **props}
            assert client.send(names.topic, queue_id, b"payload", properties, reconsume_times).code == 0
            message = Message(names.topic, b"payload", "a", immutables.Map(properties), queue_id,
                              reconsume_times=reconsume_times)
            store, _ = put_message(broker.store, message, NOW + 10 * i, CONFIG.delay_levels)
            broker = evolve(broker, store=store)
        deadline = time.monotonic() + 6
        while True:  # until every put was parked (dispatch is asynchronous) and delivered, or the deadline
            delays = find_deliveries(run.read_parked(marks), run.read_landed())
            if (len(delays) == len(puts) and None not in delays) or time.monotonic() > deadline:
                break
            time.sleep(0.1)
        landed = run.read_landed().get(names.topic, [])
    real = sorted(json.dumps(oracle.describe(m.topic, m.queue_id, m.properties, m.reconsume_times, names, "", False),
                             sort_keys=True) for m in landed)
    _, deliveries = process_schedule_until(broker, CONFIG, NOW + 10_000)
    model = sorted(json.dumps(oracle.describe(d.delivered.topic, d.delivered.queue_id, dict(d.delivered.properties),
                                              d.delivered.reconsume_times, names, "", False), sort_keys=True)
                   for d in deliveries)
    model_delays = [d.time - d.scheduled.store_timestamp for d in deliveries]
    agrees = (real == model and all(x is not None and 1000 <= x <= 1250 for x in delays)
              and all(1000 <= x <= 1100 for x in model_delays))
    clamped = ("ST-04",) if any(put[0] > DELAY_LEVELS for put in puts) else ()
    rules = ("ST-01", "ST-02", "DT-02", "DT-04", "DT-05", "DT-06", *clamped)
    detail = f"rocketmq-4.9.8: {real} delays {delays}\nmodel: {model} delays {model_delays}"
    record_rules(rules, MODEL, agrees, detail)
    assert agrees, detail
