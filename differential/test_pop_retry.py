"""Retry limits and policies on RocketMQ 5.3.3 and the model-backed server: the proxy dead-letters a message whose
reconsume count reached retryMaxTimes + 1 (maxAttempts) — after stored copies in the retry topic, by
forward-then-ack —, while the broker's POP path itself never dead-letters; the group's retry policy (customized or
exponential) reaches a consumer only as the backoff in its settings, and neither broker nor proxy applies it to an
un-acked message's revive; a receive's invisible time is bounded by the proxy; 4.x send-back keeps its own retry
topic beside POP's."""

from __future__ import annotations

import time

import pytest

from conformance.codec import pop
from conformance.codec.proxy import CODE_OK, Backoff
from differential import pop_probe as p
from differential.pop_probe import facts, requires_5x

pytestmark = requires_5x
__all__ = ["facts"]
ILLEGAL_INVISIBLE_TIME = 40011  # apache.rocketmq.v2.Code
MAX_INVISIBLE_MS = 12 * 3600 * 1000  # ProxyConfig.maxInvisibleTimeMills
SEND_BACK_LEVEL = 1  # the first delay level, 1 s at the default messageDelayLevel
DEFAULT_NEXT_MS = (1000, 5000, 10000, 30000, *(m * 60000 for m in (1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 20, 30, 60, 120)))


@pytest.mark.rules("PD-02", "PD-03", "PD-04", "PG-02")
def test_the_proxy_dead_letters_at_max_attempts(pop_backend, facts):
    names = p.prepare(pop_backend, "dlq", retry_max_times=1)
    settings = pop_backend.open_consumer(names.group, names.topic)
    attempts = []
    deadline = time.monotonic() + 3 * p.REVIVE_LIMIT_S
    while not p.read_dlq(pop_backend, names) and time.monotonic() < deadline:
        attempts += [m.reconsume_times + 1 for m in pop_backend.receive(names.group, names.topic,
                                                                        p.INVISIBLE_MS).messages]
        time.sleep(p.POLL_S)
    dead, retry = p.read_dlq(pop_backend, names), p.read_retry(pop_backend, names)
    facts("retryMaxTimes 1: settings' maxAttempts, attempts delivered, retry copies (reconsumeTimes), DLQ copies "
          "(reconsumeTimes)", (settings.max_attempts, attempts, [m.reconsume_times for m in retry],
                               [m.reconsume_times for m in dead]))
    facts("DLQ copy properties", sorted(dead[0].properties) if dead else None)
    assert settings.max_attempts == 2 and attempts == [1, 2]
    assert [m.reconsume_times for m in retry] == [1, 2]  # the third copy is revived, then forwarded on its pop
    # the dead letter names the copy's real topic, the retry topic, as where it came from (ORIGIN of the send-back)
    assert p.keys_of(dead) == ["k0"]
    assert dead[0].properties["RETRY_TOPIC"] == pop.get_retry_topic(names.group, names.topic)


@pytest.mark.rules("IV-08")
def test_the_brokers_pop_never_dead_letters(pop_backend, facts):
    names = p.prepare(pop_backend, "nodlq", retry_max_times=1)
    seen = [m.reconsume_times for m in pop_backend.pop(names.group, names.topic, p.INVISIBLE_MS).messages]
    for _ in range(3):
        answer = p.pop_until(pop_backend, names, p.REVIVE_LIMIT_S, p.INVISIBLE_MS)[0]
        seen += [m.reconsume_times for m in answer.messages]
    dead = p.read_dlq(pop_backend, names)
    facts("retryMaxTimes 1, remoting POP: reconsumeTimes popped, DLQ copies", (seen, len(dead)))
    assert seen == [0, 1, 2, 3] and dead == ()


@pytest.mark.rules("PD-03", "PD-04")
def test_explicit_forward_to_dlq_stores_a_dead_letter_and_acks(pop_backend, facts):
    names = p.prepare(pop_backend, "fwd")
    message = p.receive_until(pop_backend, names, 10.0, p.INVISIBLE_MS)[0].messages[0]
    code = pop_backend.forward_to_dlq(names.group, names.topic, message, 16)
    dead = p.wait_until(lambda: p.read_dlq(pop_backend, names), 5.0)
    time.sleep(p.REVIVE_LIMIT_S)  # past its revive time: the proxy's ack after the forward kept it from reviving
    retry = p.read_retry(pop_backend, names)
    facts("ForwardMessageToDeadLetterQueue of a first delivery: code, DLQ copy reconsumeTimes and RETRY_TOPIC, "
          "retry copies after the revive time", (code, dead[0].reconsume_times, dead[0].properties.get("RETRY_TOPIC"),
                                                len(retry)))
    assert code == CODE_OK and p.keys_of(dead) == ["k0"] and retry == ()
    assert dead[0].properties["RETRY_TOPIC"] == names.topic


@pytest.mark.rules("RP-03")
def test_the_group_retry_policy_reaches_consumers_only_in_their_settings(pop_backend, facts):
    groups = {"default": None, "customized": pop.customized_policy([30_000, 60_000]),
              "empty exponential": {"type": "EXPONENTIAL"}, "exponential": pop.exponential_policy(30_000, 600_000, 3)}
    settings = {}
    for kind, policy in groups.items():
        names = p.fresh(kind[:4])
        p.set_up(pop_backend, names, retry_max_times=3, policy=policy)
        settings[kind] = pop_backend.open_consumer(names.group, names.topic)
    facts("settings per group policy (retryMaxTimes 3)", {k: str(v) for k, v in settings.items()})
    assert settings["default"] == Backoff(4, DEFAULT_NEXT_MS)
    assert settings["customized"] == Backoff(4, (30_000, 60_000))
    # RP-03's two readings: the settings send an EXPONENTIAL group without parameters the exponential defaults
    assert settings["empty exponential"] == Backoff(4, (), (5_000, 7_200_000, 2.0))
    assert settings["exponential"] == Backoff(4, (), (30_000, 600_000, 3.0))
    # the policy's 30 s first delay is not applied to a receive that is never acked: the revive comes at
    # invisibleTime + the revive lag
    p.send_all(pop_backend, names, ["k0"])
    first = p.receive_until(pop_backend, names, 10.0, p.INVISIBLE_MS)[0].messages[0]
    again, seen_at = p.receive_until(pop_backend, names, p.REVIVE_LIMIT_S)
    facts("exponential policy, initial 30 s: ms from first receive's revive time to attempt 2",
          seen_at - p.get_revive_time(first))
    assert again.messages[0].reconsume_times == 1


@pytest.mark.rules("PD-01")
def test_a_receive_asks_an_invisible_time_within_the_proxys_bounds(pop_backend, facts):
    names = p.prepare(pop_backend, "bounds")
    codes = {f"{ms} ms": pop_backend.receive(names.group, names.topic, ms).code
             for ms in (p.INVISIBLE_MS - 1, MAX_INVISIBLE_MS + 1)}
    received = pop_backend.receive(names.group, names.topic, p.INVISIBLE_MS)
    facts("ReceiveMessage codes by invisible duration (minimum lowered to 1 s here, maximum 12 h)",
          {**codes, f"{p.INVISIBLE_MS} ms": (received.code, [m.key for m in received.messages])})
    assert set(codes.values()) == {ILLEGAL_INVISIBLE_TIME}
    assert received.code == CODE_OK and [m.key for m in received.messages] == ["k0"]


@pytest.mark.rules("PC-04")
def test_one_group_has_two_retry_topics_send_back_beside_pop(pop_backend, facts):
    """4.x send-back still works on 5.3.3 and keeps its own road: a CONSUMER_SEND_MSG_BACK of a message puts its
    copy in %RETRY%{group}, a POP of it not acked in %RETRY%{group}_{topic}."""
    names = p.prepare(pop_backend, "both")
    stored = pop_backend.read_topic(names.topic)[0]
    sent_back = pop_backend.send_back(names.group, stored, SEND_BACK_LEVEL)
    pop_backend.pop(names.group, names.topic, p.INVISIBLE_MS)
    classic = f"%RETRY%{names.group}"
    found = p.wait_until(lambda: (pop_backend.read_topic(classic), p.read_retry(pop_backend, names))
                         if pop_backend.read_topic(classic) and p.read_retry(pop_backend, names) else None,
                         p.REVIVE_LIMIT_S)
    facts("send-back (level 1) and an unacked POP of one message: code, (key, reconsumeTimes) in %RETRY%G and in "
          "%RETRY%G_T", (sent_back, [[(p.keys_of([m])[0], m.reconsume_times) for m in topic] for topic in found]))
    assert sent_back == 0
    assert [[(p.keys_of([m])[0], m.reconsume_times) for m in topic] for topic in found] == [[("k0", 1)], [("k0", 1)]]
