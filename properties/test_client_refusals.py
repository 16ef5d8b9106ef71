"""What a refusal leaves on the client's side: a freeze of the offset asked of a client older than 5.2.0 (OS-03),
a queue lockAll is refused (LK-03) and a pull the broker answers with an error code (PL-11), each compared whole."""

from __future__ import annotations

import pytest
from immutables import Map

from model.broker.locks import on_lock_batch
from model.broker.state import Broker
from model.client.observations import Note
from model.client.offset_store import create_offset_store, update_and_freeze_offset
from model.client.process_queue import create_process_queue
from model.client.queue_locks import process_lock_all, process_lock_one
from model.system.events import Advance, RefuseRequests
from model.system.step import create_system
from model.values.config import Config
from model.values.errors import IllegalTransition
from model.values.message import MessageQueue
from model.values.records import evolve
from model.values.wire import ResponseCode
from properties.steps import run


@pytest.mark.parametrize("profile", ["4.9.1", "4.9.8", "5.0.0"])
def test_a_freeze_before_5_2_0_is_an_illegal_transition_naming_the_profile(profile):
    """OS-03: RemoteBrokerOffsetStore.updateAndFreezeOffset and ControllableOffset exist from 5.2.0 on (the class is
    absent at rocketmq-all-5.1.4 and present at 5.2.0:
    https://github.com/apache/rocketmq/blob/rocketmq-all-5.3.3/client/src/main/java/org/apache/rocketmq/client/consumer/store/RemoteBrokerOffsetStore.java#L77-L82),
    so asking it of an older profile is an illegal transition that names the state (the profile), the event and
    why (h11-style), and leaves the store as it was."""
    store = create_offset_store(Config(profile=profile))
    with pytest.raises(IllegalTransition) as error:
        update_and_freeze_offset(store, MessageQueue("t", 0), 7)
    assert (error.value.state, error.value.event, error.value.reason) == (
        f"profile {profile}", "update_and_freeze_offset", "ControllableOffset exists from 5.2.0 on")
    assert str(error.value) == (f"event update_and_freeze_offset is illegal in state profile {profile}: "
                                "ControllableOffset exists from 5.2.0 on")


def test_a_queue_lock_all_is_refused_loses_its_mark_and_keeps_its_lock_time():
    """LK-03: lockAll calls `processQueue.setLocked(false)` for every queue of its request the broker did not grant,
    and nothing else (RebalanceImpl 4.9.8 L201-L209,
    https://github.com/apache/rocketmq/blob/rocketmq-all-4.9.8/client/src/main/java/org/apache/rocketmq/client/impl/consumer/RebalanceImpl.java#L201-L209):
    B locked q0 at 0; its lease is older than 60 s at 61 s, A takes it, and B's lockAll at 62 s is refused — B's
    ProcessQueue is the same but for the mark, which is False (a boolean, as ProcessQueue.locked), its
    lastLockTimestamp still 0; q1, free, is granted and stamped 62 s."""
    q0, q1 = MessageQueue("t", 0), MessageQueue("t", 1)
    broker, pqs, granted = process_lock_one(Broker(), "g", "B", Map({q0: create_process_queue(0)}), q0, 0)
    assert granted and pqs[q0].locked is True
    broker = on_lock_batch(broker, "g", (q0,), "A", 61_000).broker
    pqs = pqs.set(q1, create_process_queue(61_500))
    before = pqs
    broker, pqs = process_lock_all(broker, "g", "B", pqs, 62_000)
    assert pqs[q0] == evolve(before[q0], locked=False) and pqs[q0].locked is False
    assert pqs[q1] == evolve(before[q1], locked=True, last_lock_timestamp=62_000)


def test_a_refused_pull_notes_pl_11_at_each_retry():
    """PL-11: the pull callback's onException re-queues the same PullRequest pullTimeDelayMillsWhenException later
    (here 700 ms; DefaultMQPushConsumerImpl 4.9.8 L403-L413,
    https://github.com/apache/rocketmq/blob/rocketmq-all-4.9.8/client/src/main/java/org/apache/rocketmq/client/impl/consumer/DefaultMQPushConsumerImpl.java#L403-L413):
    while the broker answers SYSTEM_ERROR, each of c1's three queues (two of the topic, one of %RETRY%) is refused
    at 0, 700, 1400 and 2100 ms, and each refusal is noted with the rule it exercised, PL-11."""
    system = create_system(Config(pull_time_delay_mills_when_exception=700), ("c1",))
    system, seen = run(system, RefuseRequests("pull", ResponseCode.SYSTEM_ERROR), Advance(2_500))
    notes = [o for o in seen if isinstance(o, Note) and o.what.endswith("pull refused")]
    queues = sorted({o.what for o in notes})
    assert len(queues) == 3
    for what in queues:
        assert [o for o in notes if o.what == what] == [Note(what, t, ("PL-11",)) for t in (0, 700, 1_400, 2_100)]
