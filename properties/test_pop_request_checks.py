"""PO-01 and PO-02 at their edges: each refusal of POP_MESSAGE with its own code, the draw that picks retry-first
and the retry topic's name, and the rules each answer names — as PopMessageProcessor.processRequest of RocketMQ
5.3.3 orders them (spec/14-pop.md; line numbers below are of
https://github.com/apache/rocketmq/blob/rocketmq-all-5.3.3/broker/src/main/java/org/apache/rocketmq/broker/processor/PopMessageProcessor.java)."""

from __future__ import annotations

import pytest

from model.broker.pop.config import PopConfig
from model.broker.pop.pop import PopRequest, get_retry_topics, on_pop
from model.broker.pop.state import PopGroupConfig, set_broker
from model.broker.state import PERM_READ, PERM_WRITE
from model.values.records import evolve
from properties.pop_brokers import new_pop_broker, produce_many
from properties.pop_strategies import GROUP, TOPIC


def refusing_broker(fault: str):
    """A broker of topic T with two queues holding three messages, group G, broken in one way."""
    state = produce_many(new_pop_broker(queues=2, group_config=PopGroupConfig(consume_enable=fault != "group off")),
                         3, 2)
    broker = state.broker
    if fault == "broker write-only":
        broker = evolve(broker, perm=PERM_WRITE)
    if fault == "topic write-only":
        broker = evolve(broker, topics=broker.topics.set(TOPIC, evolve(broker.topics[TOPIC], perm=PERM_WRITE)))
    return set_broker(state, broker)


# (fault of the broker, request (group, topic, queue id, max messages), the code PopMessageProcessor answers)
REFUSALS = [
    ("broker write-only", (GROUP, TOPIC, 0, 1), "NO_PERMISSION"),  # L254-L259
    ("broker write-only", ("OTHER", "X", 5, 33), "NO_PERMISSION"),  # the broker's permission comes first
    ("", (GROUP, TOPIC, 0, 33), "INVALID_PARAMETER"),  # L261-L266: more than 32
    ("", ("OTHER", "X", 5, 33), "INVALID_PARAMETER"),  # before the topic, the queue and the group
    ("", (GROUP, "X", 0, 32), "TOPIC_NOT_EXIST"),  # L276-L284
    ("topic write-only", (GROUP, TOPIC, 0, 32), "NO_PERMISSION"),  # L286-L290
    ("topic write-only", ("OTHER", TOPIC, 5, 1), "NO_PERMISSION"),  # before the queue id and the group
    ("", (GROUP, TOPIC, 2, 1), "INVALID_PARAMETER"),  # L292-L301: queue id >= readQueueNums (2)
    ("", ("OTHER", TOPIC, 2, 1), "INVALID_PARAMETER"),  # before the group
    ("", ("OTHER", TOPIC, 1, 1), "SUBSCRIPTION_GROUP_NOT_EXIST"),  # L303-L310
    ("group off", (GROUP, TOPIC, 1, 1), "NO_PERMISSION"),  # L312-L316: consumeEnable false
]


@pytest.mark.parametrize(("fault", "request_fields", "code"), REFUSALS)
def test_each_refusal_answers_its_own_code_and_changes_nothing(fault, request_fields, code):
    """PO-01: processRequest's checks in their order (5.3.3 L254-L316): the first that fails
    answers its response code, with no message, and the broker is as it was — no offset committed, no checkpoint,
    no revive queue drawn (the draw, L483-L490, comes after the checks). The answer names PO-01 alone."""
    state = refusing_broker(fault)
    group, topic, queue_id, n = request_fields
    after, answer = on_pop(state, PopRequest(group, topic, queue_id, n, 10_000), 1_000, 50)
    assert (answer.code, answer.messages, answer.rules, after) == (code, (), ("PO-01",), state)


@pytest.mark.parametrize("n", [1, 32])
def test_a_pop_of_up_to_32_messages_is_read(n):
    """PO-01: `getMaxMsgNums() > 32` refuses (L261): 32 itself is read, and the answer names the rules of a read
    that found messages: the draw (PO-02), the offset (PO-03), the checkpoint (PO-04) and the handles (PO-06)."""
    state = produce_many(new_pop_broker(queues=2), 3, 2)
    _, answer = on_pop(state, PopRequest(GROUP, TOPIC, 1, n, 10_000), 1_000, 50)
    assert answer.code == "SUCCESS" and [m.uniq_key for m in answer.messages] == ["m1"][:n]
    assert answer.rules == ("PO-02", "PO-03", "PO-04", "PO-06")


def test_a_tag_filtered_pop_that_finds_nothing_names_po_05():
    """PO-02, PO-05: a pop whose tag filter passes over every message (NO_MATCHED_MESSAGE, L806-L818) answers
    POLLING_TIMEOUT with the draw's rule and the filter's: it read no message, so no checkpoint or handle."""
    state = produce_many(new_pop_broker(), 2)
    _, answer = on_pop(state, PopRequest(GROUP, TOPIC, 0, 4, 10_000, tags=frozenset({"b"})), 1_000, 50)
    assert (answer.code, len(answer.skipped), answer.rules) == ("POLLING_TIMEOUT", 2, ("PO-02", "PO-05"))


V1, V2 = f"%RETRY%{GROUP}_{TOPIC}", f"%RETRY%{GROUP}+{TOPIC}"  # KeyBuilder 5.3.3: separators '_' and '+'


@pytest.mark.parametrize(("random_q", "retry_first"), [(0, True), (19, True), (20, False), (21, False), (99, False)])
@pytest.mark.parametrize(("v2", "retrieve_v1"), [(False, False), (False, True), (True, False), (True, True)])
def test_the_draw_picks_retry_first_below_20_and_v1_on_even_draws(random_q, retry_first, v2, retrieve_v1):
    """PO-02: `needRetry = randomQ < popFromRetryProbability` (20), and with enableRetryTopicV2 and
    retrieveMessageFromPopRetryTopicV1 `needRetryV1 = randomQ % 2 == 0` reads the v1 name, else
    buildPopRetryTopic(topic, group, enableRetryTopicV2) (5.3.3 L502-L541)."""
    state = new_pop_broker(pop_config=PopConfig(enable_retry_topic_v2=v2,
                                                retrieve_message_from_pop_retry_topic_v1=retrieve_v1))
    expected = V2 if v2 and not (retrieve_v1 and random_q % 2 == 0) else V1
    assert get_retry_topics(state, PopRequest(GROUP, TOPIC, 0, 1, 10_000), random_q) == (retry_first, expected)


@pytest.mark.parametrize("random_q", range(10))
def test_with_both_names_an_odd_draw_reads_v2_and_an_even_one_v1(random_q):
    """PO-02, IV-03: while both retry topic names are read, the name alternates with the draw's parity — 0, 2, 4...
    v1, 1, 3, 5... v2 (`randomQ % 2 == 0`, 5.3.3 L504-L506)."""
    state = new_pop_broker(pop_config=PopConfig(enable_retry_topic_v2=True))
    _, topic = get_retry_topics(state, PopRequest(GROUP, TOPIC, 0, 1, 10_000), random_q)
    assert topic == (V1 if random_q in (0, 2, 4, 6, 8) else V2)


def test_a_refusal_of_a_readable_broker_needs_read_permission_only():
    """PO-01: PermName.isReadable tests the read bit alone (5.3.3 L254, L286): a read-only broker and topic are
    read."""
    state = produce_many(new_pop_broker(), 1)
    broker = evolve(state.broker, perm=PERM_READ,
                    topics=state.broker.topics.set(TOPIC, evolve(state.broker.topics[TOPIC], perm=PERM_READ)))
    _, answer = on_pop(set_broker(state, broker), PopRequest(GROUP, TOPIC, 0, 1, 10_000), 1_000, 50)
    assert (answer.code, [m.uniq_key for m in answer.messages]) == ("SUCCESS", ["m0"])
