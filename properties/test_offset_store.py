"""Properties of spec/06-offset-store.md: the offset stores against an oracle written from the reference's §6."""

from __future__ import annotations

import pytest
from hypothesis import event, find, given
from hypothesis import strategies as st
from hypothesis.stateful import RuleBasedStateMachine, initialize, invariant, rule

from model.broker.consumer_offsets import commit_offset, query_offset
from model.broker.state import Broker
from model.client.offset_store import (
    FetchError,
    OffsetStoreKind,
    ReadOffsetType,
    compare_and_increase_only,
    create_offset_store,
    persist,
    persist_all,
    read_offset,
    remove_offset,
    update_and_freeze_offset,
    update_offset,
)
from model.values.config import Config
from model.values.errors import IllegalTransition
from model.values.message import MessageQueue
from model.values.profiles import PROFILES
from properties.coverage import record_rules

MQS = [MessageQueue("TopicA", queue_id) for queue_id in range(3)]
MEMORY, STORE = ReadOffsetType.READ_FROM_MEMORY, ReadOffsetType.READ_FROM_STORE
# §6 / §7: which versions have ControllableOffset (5.2.0+) and map a broker error to -1 (4.9).
FREEZES = {"4.9.1": False, "4.9.8": False, "5.0.0": False, "5.3.3": True, "develop": True}
BROKER_ERROR_CODE = {"4.9.1": -1, "4.9.8": -1, "5.0.0": -2, "5.3.3": -2, "develop": -2}


def oracle_error_code(version: str, error: FetchError) -> int:
    return {FetchError.OFFSET_NOT_FOUND: -1, FetchError.BROKER_ERROR: BROKER_ERROR_CODE[version],
            FetchError.CLIENT_ERROR: -2}[error]


class OffsetStoreMachine(RuleBasedStateMachine):
    """One store of a drawn version and message model against dicts that follow the reference's prose."""

    @initialize(version=st.sampled_from(sorted(PROFILES)), model=st.sampled_from(["clustering", "broadcasting"]))
    def start(self, version, model):
        self.version = version
        self.store = create_offset_store(Config(profile=version, message_model=model))
        self.local = self.store.kind is OffsetStoreKind.LOCAL_FILE
        self.table: dict[MessageQueue, list] = {}  # mq -> [value, frozen]
        self.file: dict[MessageQueue, int] = {}
        self.broker: dict[MessageQueue, int] = {}  # what a remote store has sent, last one wins
        self.increase_only_update = None  # (mq, offset before) of the last increase-only update of a cached mq

    @rule(mq=st.sampled_from(MQS), offset=st.integers(-1, 60), increase_only=st.booleans())
    def update(self, mq, offset, increase_only):
        """OS-01, OS-02, OS-03"""
        entry = self.table.get(mq)
        before = None if entry is None else entry[0]
        event("OS-01" if entry is None else "OS-03" if entry[1] else "OS-02")
        self.store = update_offset(self.store, mq, offset, increase_only)
        if entry is None:
            self.table[mq] = [offset, False]
        elif not entry[1] and (not increase_only or offset > entry[0]):
            entry[0] = offset
        self.increase_only_update = (mq, before) if increase_only and before is not None else None

    @rule(mq=st.sampled_from(MQS), offset=st.integers(0, 60))
    def freeze(self, mq, offset):
        """OS-03: 5.2.0+ only."""
        event("OS-03")
        if not FREEZES[self.version]:
            with pytest.raises(IllegalTransition):
                update_and_freeze_offset(self.store, mq, offset)
            return
        self.store = update_and_freeze_offset(self.store, mq, offset)
        self.table[mq] = [offset, True]

    @rule(mq=st.sampled_from(MQS))
    def remove(self, mq):
        """OS-07"""
        event("OS-07")
        self.store = remove_offset(self.store, mq)
        self.table.pop(mq, None)

    @rule(mq=st.sampled_from(MQS), read_type=st.sampled_from(list(ReadOffsetType)),
          answer=st.integers(0, 60) | st.sampled_from(list(FetchError)))
    def read(self, mq, read_type, answer):
        """OS-04, OS-08"""
        outcome = read_offset(self.store, mq, read_type, answer)
        record_rules(outcome.rules)
        self.store = outcome.state
        assert outcome.value == self.oracle_read(mq, read_type, answer)

    def oracle_read(self, mq, read_type, answer):
        if read_type is not STORE and mq in self.table:
            return self.table[mq][0]
        if read_type is MEMORY:
            return -1
        if self.local:
            answer = self.file.get(mq, FetchError.OFFSET_NOT_FOUND)
        if isinstance(answer, FetchError):
            return oracle_error_code(self.version, answer)
        if mq not in self.table:
            self.table[mq] = [answer, False]
        elif not self.table[mq][1]:
            self.table[mq][0] = answer
        return answer

    @rule(mqs=st.sets(st.sampled_from(MQS)))
    def persist_everything(self, mqs):
        """OS-06, OS-08"""
        outcome = persist_all(self.store, mqs)
        record_rules(outcome.rules)
        self.store = outcome.state
        chosen = {mq: entry[0] for mq, entry in self.table.items() if mq in mqs}
        if self.local:
            self.file.update(chosen)
            assert outcome.value == ()
        else:
            assert dict(outcome.value) == chosen and len(outcome.value) == len(chosen)
            if mqs:
                self.table = {mq: entry for mq, entry in self.table.items() if mq in mqs}
            self.broker.update(outcome.value)

    @rule(mq=st.sampled_from(MQS))
    def persist_one(self, mq):
        """OS-07"""
        event("OS-07")
        self.store, sent = persist(self.store, mq)
        expected = {mq: self.table[mq][0]} if mq in self.table else {}
        if self.local:
            self.file.update(expected)
            assert sent == ()
        else:
            assert dict(sent) == expected
            self.broker.update(sent)

    @invariant()
    def increase_only_updates_never_lower_the_offset(self):
        """OS-02: whatever the store's state, an increase-only update leaves the cached offset >= before."""
        if getattr(self, "increase_only_update", None) is not None:
            mq, before = self.increase_only_update
            assert read_offset(self.store, mq, MEMORY).value >= before
            self.increase_only_update = None

    @invariant()
    def table_matches_the_oracle(self):
        if not hasattr(self, "store"):
            return
        assert {mq: [entry.value, entry.frozen] for mq, entry in self.store.offsets.items()} == self.table
        assert dict(self.store.file) == self.file


TestOffsetStoreMachine = OffsetStoreMachine.TestCase


@given(current=st.integers(-(2**63), 2**63 - 1), target=st.integers(-(2**63), 2**63 - 1))
def test_compare_and_increase_only(current, target):
    """OS-02: MixAllTest.testCompareAndIncreaseOnly (5 → 6 true; 6 → 4 false) and its generalisation."""
    event("OS-02")
    assert compare_and_increase_only(5, 6) == (6, True)
    assert compare_and_increase_only(6, 4) == (6, False)
    assert compare_and_increase_only(current, target) == ((target, True) if target > current else (current, False))


@pytest.mark.parametrize("model", ["clustering", "broadcasting"])
def test_remote_broker_offset_store_update_offset(model):
    """OS-01, OS-02: RemoteBrokerOffsetStoreTest / LocalFileOffsetStoreTest.testUpdateOffset."""
    store = create_offset_store(Config(message_model=model))
    readings = []
    for offset, increase_only in [(1024, True), (1023, False), (1022, True)]:
        store = update_offset(store, MQS[0], offset, increase_only)
        readings.append(read_offset(store, MQS[0], MEMORY).value)
    assert readings == [1024, 1023, 1023]


def test_remote_broker_offset_store_read_offset_success():
    """OS-04, OS-06: RemoteBrokerOffsetStoreTest.testReadOffset_Success, the broker being model.broker."""
    store, broker, mq = create_offset_store(Config()), Broker(), MQS[0]

    def send(store, sent):
        nonlocal broker
        for queue, offset in sent:
            broker = commit_offset(broker, "GroupA", queue.topic, queue.queue_id, offset)
        return read_offset(store, mq, STORE, query_offset(broker, "GroupA", mq.topic, mq.queue_id)).value

    readings = []
    for offset, increase_only in [(1024, False), (1023, False), (1022, True)]:
        store = update_offset(store, mq, offset, increase_only)
        readings.append(send(*persist(store, mq)))
    store = update_offset(store, mq, 1025, False)
    readings.append(send(*persist_all(store, {mq})))
    assert readings == [1024, 1023, 1023, 1025]


def test_a_remote_read_from_the_store_without_the_brokers_answer_is_an_illegal_transition():
    """OS-04: a remote store reads from the broker, so reading from the store without the broker's answer names
    the store's kind, the event and why (h11-style)."""
    with pytest.raises(IllegalTransition) as error:
        read_offset(create_offset_store(Config()), MQS[0], STORE)
    assert (error.value.state, error.value.event) == (OffsetStoreKind.REMOTE_BROKER.value, "read_offset")
    assert str(error.value) == (f"event read_offset is illegal in state {OffsetStoreKind.REMOTE_BROKER.value}: "
                                "reading from the broker needs its answer")


@given(cached=st.integers(0, 10_000), answered=st.integers(0, 10_000))
def test_a_read_from_store_caches_the_answer_even_below_the_cache(cached, answered):
    """OS-04: READ_FROM_STORE caches the broker's answer with a plain update, so a smaller answer replaces a larger
    cached offset (an increase-only update would keep the cache)."""
    store = update_offset(create_offset_store(Config()), MQS[0], cached, False)
    store, value = read_offset(store, MQS[0], STORE, answered)
    assert value == answered
    assert read_offset(store, MQS[0], MEMORY).value == answered
    if answered < cached:
        event("OS-04")


@pytest.mark.parametrize("version", sorted(PROFILES))
def test_read_offset_error_codes_per_profile(version):
    """OS-04: testReadOffset_WithException — not found -1; a broker error -1 in 4.9, -2 in 5.x; remoting -2."""
    store = create_offset_store(Config(profile=version))
    codes = [read_offset(store, MQS[0], STORE, error).value for error in
             (FetchError.OFFSET_NOT_FOUND, FetchError.BROKER_ERROR, FetchError.CLIENT_ERROR)]
    assert codes == [-1, BROKER_ERROR_CODE[version], -2]
    with pytest.raises(IllegalTransition):
        read_offset(store, MQS[0], STORE)


def test_update_and_freeze_offset():
    """OS-03: 5.x testUpdateAndFreezeOffset and testUpdateAndFreezeOffsetWithRemove."""
    mq = MQS[0]
    store = update_and_freeze_offset(create_offset_store(Config(profile="develop")), mq, 1024)
    store = update_offset(update_offset(store, mq, 1023, False), mq, 1022, True)
    assert read_offset(store, mq, MEMORY).value == 1024
    store = remove_offset(store, mq)
    assert read_offset(store, mq, MEMORY).value == -1
    assert read_offset(update_offset(store, mq, 1023, False), mq, MEMORY).value == 1023
    frozen_read = read_offset(update_and_freeze_offset(store, mq, 5), mq, STORE, 900)
    assert (frozen_read.value, read_offset(frozen_read.state, mq, MEMORY).value) == (900, 5)


@pytest.mark.parametrize("version", [v for v, freezes in FREEZES.items() if not freezes])
def test_freeze_is_not_in_older_profiles(version):
    """OS-03: no ControllableOffset before 5.2.0."""
    with pytest.raises(IllegalTransition, match="5.2.0"):
        update_and_freeze_offset(create_offset_store(Config(profile=version)), MQS[0], 1)


def test_remote_persist_all_prunes_other_queues():
    """OS-06: queues outside the set are dropped from the table; an empty set changes nothing."""
    store = create_offset_store(Config())
    for queue_id, mq in enumerate(MQS):
        store = update_offset(store, mq, 100 + queue_id, False)
    assert persist_all(store, set()) == (store, ())
    store, sent = persist_all(store, {MQS[1], MessageQueue("TopicB", 0)})
    assert sent == ((MQS[1], 101),)
    assert [read_offset(store, mq, MEMORY).value for mq in MQS] == [-1, 101, -1]


def test_local_file_offset_store_read_from_store():
    """OS-08: LocalFileOffsetStoreTest.testReadOffset_FromStore and testCloneOffset."""
    store = update_offset(create_offset_store(Config(message_model="broadcasting")), MQS[2], 1024, False)
    assert read_offset(store, MQS[2], STORE).value == -1
    store, _ = persist_all(store, {MQS[2]})
    assert read_offset(store, MQS[2], STORE).value == 1024
    assert {mq: entry.value for mq, entry in store.offsets.items()} == {MQS[2]: 1024}


def test_local_file_offset_store_persist():
    """OS-07: LocalFileOffsetStoreTest.testPersist and testRemoveOffset."""
    store = update_offset(create_offset_store(Config(message_model="broadcasting")), MQS[0], 1024, False)
    outcome = persist(store, MQS[0])
    store, sent = outcome
    assert (sent, outcome.rules) == ((), ("OS-07", "OS-08"))  # written to the file, nothing sent
    assert [read_offset(store, mq, STORE).value for mq in MQS[:2]] == [1024, -1]
    assert read_offset(remove_offset(store, MQS[0]), MQS[0], MEMORY).value == -1


def test_local_file_offset_store_persist_all_merges():
    """OS-08: LocalFileOffsetStoreTest.testPersistAll — the file keeps queues outside the set."""
    store = update_offset(create_offset_store(Config(message_model="broadcasting")), MQS[0], 1024, False)
    store, _ = persist_all(store, {MQS[0]})
    store = update_offset(update_offset(store, MQS[1], 1025, False), MQS[2], 1026, False)
    store, _ = persist_all(store, {MQS[1], MQS[2]})
    assert [read_offset(store, mq, STORE).value for mq in MQS] == [1024, 1025, 1026]


def broker_offset_after(commits: list[int]) -> list[int]:
    broker, seen = Broker(), []
    for offset in commits:
        broker = commit_offset(broker, "GroupA", "TopicA", 0, offset)
        seen.append(query_offset(broker, "GroupA", "TopicA", 0))
    return seen


@given(st.lists(st.integers(0, 10**6), min_size=1, max_size=20))
def test_broker_accepts_a_decrease_the_client_sent(commits):
    """OS-05: the broker's offset is always the last one committed, smaller or not."""
    event("OS-05")
    assert broker_offset_after(commits) == commits


def decreases(seen: list[int]) -> bool:
    return any(later < earlier for earlier, later in zip(seen, seen[1:], strict=False))


def test_broker_offset_is_not_increase_only():
    """OS-05 (refutation of the folklore): "the committed offset never decreases" has a counterexample."""
    commits = find(st.lists(st.integers(0, 100), min_size=2), lambda commits: decreases(broker_offset_after(commits)))
    assert decreases(broker_offset_after(commits))
