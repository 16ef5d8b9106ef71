"""One run of the revive service, rule by rule (spec/15-revive.md, IV-01, IV-02, IV-05, IV-07): the copy's
1ST_POP_TIME, the new retry topic's offset, a checkpoint whose group is gone, a run's limit and the next run's time.

The expected values are read from the source at rocketmq-all-5.3.3 (file and lines per test, under
https://github.com/apache/rocketmq/blob/rocketmq-all-5.3.3/broker/src/main/java/org/apache/rocketmq/broker/), not
from the model."""

from __future__ import annotations

from hypothesis import given
from hypothesis import strategies as st

from model.broker.pop.pop import PopRequest, on_pop
from model.broker.pop.revive import get_next_revive_time, on_revive
from model.broker.pop.state import create_pop_broker, set_broker
from model.broker.state import SubscriptionGroupConfig
from model.broker.store import put_message
from model.values.config import Config
from model.values.message import PROPERTY_ORIGIN_MESSAGE_ID, create_message
from model.values.records import evolve
from properties.pop_brokers import new_pop_broker, produce, produce_many
from properties.pop_strategies import GROUP, RETRY_V1, TOPIC

INVISIBLE = 10_000
DLQ = "%DLQ%G"


def pop(state, group, topic, now, n=32):
    """A pop that never reads the retry topic first (random draw 50 >= popFromRetryProbability 20)."""
    return on_pop(state, PopRequest(group, topic, -1, n, INVISIBLE), now, 50)


def store(state, message):
    stored, _ = put_message(state.broker.store, message, 0, state.config.delay_levels)
    return set_broker(state, evolve(state.broker, store=stored))


def test_a_popped_dead_letter_is_revived_with_the_checkpoints_first_pop_time():
    """IV-05: reviveRetry puts 1ST_POP_TIME (the checkpoint's pop time) when the message's reconsumeTimes is 0 *or*
    the property is absent (processor/PopReviveService.java L127-L131). A dead letter popped for reprocessing
    (%DLQ%G is created read-write, processor/AbstractSendMessageProcessor.java L196-L199) has reconsumeTimes 17 and
    no 1ST_POP_TIME: group R pops it at 1000 and never acks, so its copy in %RETRY%R_%DLQ%G has reconsumeTimes 18
    and 1ST_POP_TIME "1000", beside the dead letter's own properties."""
    state = create_pop_broker(Config(profile="5.3.3"), "R", {DLQ: 1})
    dead = create_message(DLQ, "m0", body=b"b").put_property(PROPERTY_ORIGIN_MESSAGE_ID, "ID0")
    state = store(state, dead._replace(reconsume_times=17))
    state, answer = pop(state, "R", DLQ, 1_000)
    assert [m.reconsume_times for m in answer.messages] == [17]
    _state, revived = on_revive(state, 1_000 + INVISIBLE + 2_001)
    (copy,) = revived.stored
    assert (copy.topic, copy.reconsume_times) == ("%RETRY%R_%DLQ%G", 18)
    assert dict(copy.properties) == {"UNIQ_KEY": "m0", "ORIGIN_MESSAGE_ID": "ID0", "1ST_POP_TIME": "1000"}


def test_a_first_delivery_carrying_a_first_pop_time_gets_the_checkpoints():
    """IV-05: with reconsumeTimes 0 reviveRetry overwrites a 1ST_POP_TIME the message already carries
    (processor/PopReviveService.java L128-L131): an application that republishes a popped MessageExt to T sends
    its properties along, and the producer sends reconsumeTimes 0 to a topic that is not a retry topic
    (client/.../DefaultMQProducerImpl.java L1001-L1008). Popped at 4000, the copy's 1ST_POP_TIME is "4000", not the
    "1000" it carried."""
    state = store(new_pop_broker(), create_message(TOPIC, "m0").put_property("1ST_POP_TIME", "1000"))
    state, _ = pop(state, GROUP, TOPIC, 4_000)
    _state, revived = on_revive(state, 4_000 + INVISIBLE + 2_001)
    assert [(m.reconsume_times, m.get_property("1ST_POP_TIME")) for m in revived.stored] == [(1, "4000")]


def test_the_first_revive_sets_the_groups_offset_on_the_new_retry_topic_to_0():
    """IV-07: addRetryTopicIfNotExist creates the retry topic, then initPopRetryOffset commits offset 0 for the
    checkpoint's group on queue 0 of it, as the group has none there (processor/PopReviveService.java
    L153-L177): after the first revive the offset table holds exactly one entry of %RETRY%G_T, (G, queue 0) at 0
    (the copy is not consumed yet)."""
    state, _ = pop(produce(new_pop_broker(), "m0"), GROUP, TOPIC, 1_000)
    assert not [key for key in state.broker.consumer_offsets if key[1] == RETRY_V1]
    state, revived = on_revive(state, 1_000 + INVISIBLE + 2_001)
    assert [m.topic for m in revived.stored] == [RETRY_V1]
    offsets = {key: value for key, value in state.broker.consumer_offsets.items() if key[1] == RETRY_V1}
    assert offsets == {(GROUP, RETRY_V1, 0): 0}


def test_a_checkpoint_whose_group_was_deleted_is_passed_over_and_the_run_goes_on():
    """IV-02: mergeAndRevive passes over (`continue`) a checkpoint whose subscription group no longer exists
    (processor/PopReviveService.java L494-L498; deleteSubscriptionGroup removes it,
    subscription/SubscriptionGroupManager.java L358-L368) and goes on with the next due checkpoint. Group H pops
    m0 at 1000, G pops it at 2000, H is deleted; a run at 14001 (both due) stores G's copy only and reports H's
    checkpoint as dropped, and no %RETRY%H_T appears."""
    state = produce(new_pop_broker(), "m0")
    state = set_broker(state, evolve(state.broker, groups=state.broker.groups.set("H", SubscriptionGroupConfig("H"))))
    state, _ = pop(state, "H", TOPIC, 1_000)
    state, _ = pop(state, GROUP, TOPIC, 2_000)
    state = set_broker(state, evolve(state.broker, groups=state.broker.groups.delete("H")))
    state, revived = on_revive(state, 2_000 + INVISIBLE + 2_001)
    assert [(m.topic, m.uniq_key) for m in revived.stored] == [(RETRY_V1, "m0")]
    assert [(ck.group, ck.topic, ck.offsets, ck.pop_time) for ck in revived.dropped] == [("H", TOPIC, (0,), 1_000)]
    assert "%RETRY%H_T" not in state.broker.topics
    assert on_revive(state, 60_000)[1] == ((), (), ())


@given(limit=st.integers(1, 4))
def test_a_run_with_a_limit_revives_the_earliest_due_and_leaves_the_rest(limit):
    """IV-01: mergeAndRevive takes the checkpoints in revive-queue order (genSortList,
    processor/PopReviveService.java L693-L700; a checkpoint enters the revive queue at its revive time - 1 s), so
    a run the model cuts short after `limit` checkpoints (the system's REVIVE_BATCH) has revived the earliest ones,
    and the next run the rest. m0, m1, m2 popped one each at 1000, 2000, 3000, all due at 15001: runs at 15001
    revive them `limit` at a time, oldest first."""
    state = produce_many(new_pop_broker(), 3)
    for index in range(3):
        state, _ = pop(state, GROUP, TOPIC, 1_000 * (index + 1), n=1)
    runs = []
    for _ in range(4):
        state, revived = on_revive(state, 3_000 + INVISIBLE + 2_001, limit)
        runs.append([m.uniq_key for m in revived.stored])
    keys = ["m0", "m1", "m2"]
    expected = [keys[i:i + limit] for i in range(0, 3, limit)]
    assert runs == expected + [[]] * (4 - len(expected))


def test_a_run_cites_the_revive_rules_only_when_it_revived():
    """IV-01, IV-02: a run before the checkpoint is due revives nothing and cites no rule; the run that revives it
    cites at least the two it applied (due, then copied)."""
    state, _ = pop(produce(new_pop_broker(), "m0"), GROUP, TOPIC, 1_000)
    state, early = on_revive(state, 1_000 + INVISIBLE + 2_000)
    assert (early.stored, early.rules) == ((), ())
    _state, due = on_revive(state, 1_000 + INVISIBLE + 2_001)
    assert len(due.stored) == 1 and {"IV-01", "IV-02"} <= set(due.rules)


@given(pop_time=st.integers(0, 10**6), invisible=st.integers(0, 120_000))
def test_the_next_revive_time_is_the_first_instant_the_checkpoint_is_due(pop_time, invisible):
    """IV-01: mergeAndRevive stops at a checkpoint with endTime - reviveTime <= ackTimeInterval + 1 s = 2000 ms
    (processor/PopReviveService.java L483-L485), so in whole milliseconds the first run that revives it is at
    popTime + invisibleTime + 2001: that is the next revive time, a run 1 ms earlier revives nothing. Without a
    checkpoint there is none."""
    state = produce(new_pop_broker(), "m0")
    assert get_next_revive_time(state) is None
    state, _ = on_pop(state, PopRequest(GROUP, TOPIC, -1, 1, invisible), pop_time, 50)
    at = pop_time + invisible + 2_001
    assert get_next_revive_time(state) == at
    assert on_revive(state, at - 1)[1].stored == ()
    assert [m.uniq_key for m in on_revive(state, at)[1].stored] == ["m0"]
