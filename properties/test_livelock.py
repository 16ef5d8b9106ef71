"""Bounded work per virtual instant (spec/11-guarantees.md SY-12) and the one cycle of zero-delay transitions the
modelled clients really have: the 5.2.0+ OFFSET_ILLEGAL repair while its one-way persist is still in flight
(spec/07-pull.md PL-10). The queue's head is expired past everything the broker's stale offset points at, so
each re-added queue pulls an illegal offset again."""

from __future__ import annotations

from hypothesis import event, example, given
from hypothesis import strategies as st

from model.client.observations import PullObserved
from model.client.timer_items import OffsetIllegalFix
from model.system.events import Advance, Crash, DeliverOneway, ExpireQueueHead, Produce, SetMembers
from model.system.observations import Livelock
from model.system.scheduler import MAX_TRANSITIONS_PER_INSTANT
from model.system.step import create_system
from model.values.config import Config
from model.values.message import MessageQueue
from model.values.names import TOPIC
from model.values.profiles import PROFILES, get_profile
from model.values.timer_heap import get_sorted_heap_items
from properties.steps import complete_running, run

Q0 = MessageQueue(TOPIC, 0)
VERSIONS = sorted(PROFILES)



def expire_consumed_head(version: str, produced: int):
    """One consumer whose offset commits are held in the network: the broker knows `produced` consumed messages,
    the consumer `2 * produced`; the broker then deletes the queue's head up to its end, and the consumer crashes
    and restarts, so its new ProcessQueue starts from the broker's stale offset: an OFFSET_ILLEGAL pull."""
    system = create_system(Config(profile=version), ("c1",), topic_queue_nums=1, hold_oneway=True)
    system = complete_running(run(system, *[Produce(f"a{i}") for i in range(produced)], Advance(0))[0])
    system, _ = run(system, Advance(10_000), DeliverOneway(0))
    system = complete_running(run(system, *[Produce(f"b{i}") for i in range(produced)], Advance(10_001))[0])
    head = ExpireQueueHead(Q0, 2 * produced)
    return run(system, head, Crash("c1"), SetMembers(("c1",)), Advance(60_000))


def with_each_version(test):
    for version in VERSIONS:
        test = example(version=version, produced=2)(test)
    return test


@given(version=st.sampled_from(VERSIONS), produced=st.integers(1, 5))
@with_each_version
def test_the_immediate_offset_illegal_repair_spins_while_its_persist_is_in_flight(version, produced):
    """[PL-10] [SY-12] From 5.2.0 the repair of an OFFSET_ILLEGAL pull runs at once and re-balances at once; with
    the persisted offset not yet at the broker, the re-added queue starts from the same stale offset and the
    cycle repeats at one instant — the step stops it with a Livelock naming OffsetIllegalFix and PullDue. Before
    5.2.0 the repair waits 10 s and the next rebalance up to 20 s: no cycle at one instant."""
    system, seen = expire_consumed_head(version, produced)
    livelocks = [o for o in seen if isinstance(o, Livelock)]
    spins = get_profile(version).offset_illegal_freezes_immediately
    event("PL-10")
    event("SY-12")
    assert len(livelocks) == (1 if spins else 0), livelocks
    if spins:
        kinds = dict(livelocks[0].kinds)
        assert kinds["OffsetIllegalFix"] > 0 and kinds["PullDue"] > 0, kinds
        assert livelocks[0].transitions == MAX_TRANSITIONS_PER_INSTANT + 1
        assert system.now == livelocks[0].time < 60_000
    else:
        assert system.now == 60_000


@given(version=st.sampled_from([v for v in VERSIONS if get_profile(v).offset_illegal_freezes_immediately]),
       produced=st.integers(1, 5))
def test_the_delivered_persist_ends_the_cycle(version, produced):
    """[PL-10] Once the frozen offset's one-way persist reaches the broker, the re-added queue starts there and
    the next advance runs without a Livelock: the spin lasts as long as the persist is in flight or lost (held
    commits are delivered here in the order they were sent)."""
    system, _ = expire_consumed_head(version, produced)
    while len(system.oneway):
        system, _ = run(system, DeliverOneway(0))
    system, seen = run(system, Advance(system.now + 60_000))
    event("PL-10")
    assert not [o for o in seen if isinstance(o, Livelock)]


def test_a_huge_system_has_a_short_repr():
    """[SY-12] A failure report or a Ctrl-C never builds the repr of a whole System: the big records print their
    collections as sizes, whatever the history (here 3,000 stored messages and their consumer state)."""
    system = create_system(Config(), ("c1", "c2"), topic_queue_nums=4)
    system, _ = run(system, *[Produce(f"k{i}", queue_id=i % 4) for i in range(3_000)], Advance(0))
    text = repr(system)
    assert len(text) < 3_000, len(text)
    assert "System(" in text and "Broker(" in text and "Store(" in text
    assert "commit_log=<AppendLog of 3000>" in text and "oneway=<Fifo of 0>" in text  # sizes, not contents


@given(version=st.sampled_from(VERSIONS), produced=st.integers(1, 3))
@with_each_version
def test_the_offset_illegal_repair_is_timed_per_profile(version, produced):
    """[PL-08] An OFFSET_ILLEGAL pull schedules its repair 10 s later up to 5.1 (executeTaskLater(…, 10000)) and
    at the same instant from 5.2.0 (executeTask)."""
    system, seen = expire_consumed_head(version, produced)
    illegal = [o.time for o in seen if isinstance(o, PullObserved) and o.status == "OFFSET_ILLEGAL"]
    fixes = [key[0] for key, item in get_sorted_heap_items(system.timers) if isinstance(item, OffsetIllegalFix)]
    event("PL-08")
    assert illegal, "the stale offset is pulled"
    if get_profile(version).offset_illegal_freezes_immediately:
        assert len(illegal) > 1 and set(illegal) == {illegal[0]}, illegal
    else:
        assert fixes == [illegal[-1] + 10_000], (illegal, fixes)
