"""spec/19-pop-guarantees.md over the whole system: POP consumers and a 4.x push consumer group, clients of one broker
(model/system): produce, listener outcomes of both kinds of client, POP consumers joining and crashing with their
handles in flight, 4.x instances joining and crashing, the clock moving (the revive service and the persist run on
the system's timers), and broker restarts, graceful or not (PO-10).

Three POP groups read the topic beside the 4.x group: GP with remoting POP push consumers (the broker's POP path,
no proxy), GR with gRPC SimpleConsumers behind the proxy, GF a FIFO group behind the proxy. Each POP listener takes
at least 1 ms (PO-11). At teardown the system is drained to quiescence with listeners that fail only the poison
messages of their group, and every message must be consumed by every group, dead-lettered, or lost in the one
counted way a group here can lose one (the remoting consumer's give-up after four hours, PC-02).
"""

from __future__ import annotations

from collections import defaultdict

import pytest
from hypothesis import event
from hypothesis import strategies as st
from hypothesis.stateful import RuleBasedStateMachine, initialize, invariant, precondition, rule

from model.broker.pop.revive import get_next_revive_time
from model.broker.pop.state import PopGroupConfig, get_first_due
from model.client.listener import ConsumeStatus, ListenerResult
from model.client.pop_consumer import (
    PopConsumer,
    PopConsumeRequest,
    PopDelivered,
    PopSettled,
    compute_actions,
    compute_settle_request,
)
from model.client.pop_push_consumer import PopAction
from model.system.drain import drain
from model.system.events import (
    AddPopConsumer,
    Advance,
    CompleteConsume,
    CompletePop,
    Crash,
    Produce,
    RemovePopConsumer,
    RestartBroker,
    SetMembers,
)
from model.system.observations import Livelock, Produced
from model.system.pop_route import get_pop_broker
from model.system.step import create_system, step
from model.values.config import Config, ConsumeFromWhere
from model.values.message import Message, get_dlq_topic
from model.values.names import GROUP, TOPIC
from model.values.pop_wire import (
    Handle,
    ProxyAckRequest,
    ProxyChangeRequest,
    compute_ack_request,
    compute_change_request,
)
from model.values.records import evolve
from model.values.timer_heap import get_heap_items
from properties.coverage import record_rules

GP, GR, GF = "GP", "GR", "GF"
POP_GROUPS = {GP: PopGroupConfig(), GR: PopGroupConfig(), GF: PopGroupConfig(consume_message_orderly=True)}
GROUPS = (GROUP, GP, GR, GF)
POP_CLIENTS = {"p1": GP, "p2": GP, "r1": GR, "r2": GR, "f1": GF, "f2": GF}
SUCCESS = ListenerResult(ConsumeStatus.CONSUME_SUCCESS)
LATER = ListenerResult(ConsumeStatus.RECONSUME_LATER)


class SharedBroker(RuleBasedStateMachine):
    """A 4.x push consumer group and three POP groups on one 5.3.3 broker: at-least-once for every group at
    quiescence with the by-design losses counted exactly (PG-01), dead letters exactly at maxAttempts through the
    proxy and never on the broker's POP path (PG-02, IV-08, PC-02), no POP delivery before its invisible time ends
    unless the broker crashed (PG-03, PO-10), and FIFO order within a queue (FF-02, FF-05)."""

    @initialize(retry_max_times=st.integers(1, 2), batch=st.integers(1, 3),
                invisible=st.integers(10_000, 40_000), retry_delay=st.integers(1_000, 20_000),
                give_up_at=st.integers(1, 2))
    def start(self, retry_max_times, batch, invisible, retry_delay, give_up_at):
        config = Config(profile="5.3.3", retry_max_times=retry_max_times, max_reconsume_times=retry_max_times,
                        consume_from_where=ConsumeFromWhere.CONSUME_FROM_FIRST_OFFSET)
        self.system = create_system(config, ("c1",), pop_groups=POP_GROUPS)
        self.max_attempts = retry_max_times + 1
        self.templates = {
            GP: PopConsumer("", GP, 0, False, batch, invisible, max_reconsume_times=give_up_at),
            GR: PopConsumer("", GR, 0, True, batch, invisible, retry_delay=retry_delay),
            # FF-05: an ack can skip an unacked message after a crash only within a batch of two or more.
            GF: PopConsumer("", GF, 0, True, 1, invisible, retry_delay=retry_delay),
        }
        self.members = ("c1",)
        self.queue_of, self.poison = {}, defaultdict(set)  # key -> queue id; group -> keys its listener fails
        self.consumed = defaultdict(set)  # group -> keys a listener of the group returned success for
        self.attempts = defaultdict(set)  # (group, key) -> the reconsumeTimes it was delivered with
        self.visible_after, self.given_up = {}, defaultdict(set)
        self.first_offsets = defaultdict(list)  # GF queue id -> queue offsets in the order first delivered
        self.crashed = False
        for client_id in ("p1", "r1", "f1"):
            self.apply(AddPopConsumer(self.get_template(client_id)))

    def get_template(self, client_id: str) -> PopConsumer:
        return evolve(self.templates[POP_CLIENTS[client_id]], client_id=client_id)

    def apply(self, ev) -> None:
        self.system, seen = step(self.system, ev)
        self.observe(seen)

    def observe(self, seen) -> None:
        for observation in seen:
            assert not isinstance(observation, Livelock), observation
            if isinstance(observation, PopDelivered):
                self.check_delivery(observation)
            elif isinstance(observation, PopSettled):
                self.check_settled(observation)
            elif isinstance(observation, Produced):
                self.queue_of[observation.message.uniq_key] = observation.message.queue_id

    def check_delivery(self, delivered: PopDelivered) -> None:
        """PG-03 and PD-02 at every delivery, FF-02 at every first delivery of the FIFO group."""
        group = delivered.group
        for message, handle in zip(delivered.messages, delivered.handles, strict=True):
            key = message.uniq_key
            if not self.crashed:
                assert delivered.time >= self.visible_after.get((group, key), 0), f"{key} early in {group}"
                event("PG-03")
            if group != GP:
                assert message.reconsume_times < self.max_attempts, f"{key} delivered past maxAttempts in {group}"
            if group == GF and not self.attempts[(group, key)]:
                queue = self.first_offsets[message.queue_id]
                assert message.queue_offset == len(queue), f"{key} first delivered out of order in {queue}"
                queue.append(message.queue_offset)
                event("FF-02")
                if self.crashed:
                    event("FF-05")
            self.attempts[(group, key)].add(message.reconsume_times)
            self.visible_after[(group, key)] = handle.next_visible_time

    def check_settled(self, settled: PopSettled) -> None:
        if settled.visible_at is not None:
            self.visible_after[(settled.group, settled.uniq_key)] = settled.visible_at
        if settled.give_up and settled.kind == "ack":
            assert settled.group == GP
            self.given_up[GP].add(settled.uniq_key)
        record_rules(settled.rules)

    # GP's poison messages cycle for four hours before PC-02 drops them: test_remoting_give_up_is_a_counted_loss.
    @rule(queue_id=st.integers(0, 1), poison=st.sets(st.sampled_from((GROUP, GR, GF)), max_size=2))
    def produce(self, queue_id, poison):
        key = f"k{len(self.queue_of)}"
        for group in poison:
            self.poison[group].add(key)
        self.apply(Produce(key, queue_id))

    def get_pop_result(self, request, fails: bool) -> ListenerResult:
        """Success up to the first poison message of the batch (ackIndex before it), or a failure of all."""
        keys = [m.uniq_key for m in request.messages]
        good = next((index for index, key in enumerate(keys) if key in self.poison[request.group]), len(keys))
        if fails or good == 0:
            return LATER
        self.consumed[request.group].update(keys[:good])
        return SUCCESS if good == len(keys) else ListenerResult(ConsumeStatus.CONSUME_SUCCESS, good - 1)

    def get_result(self, request, fails: bool) -> ListenerResult:
        if fails or request.messages[0].uniq_key in self.poison[GROUP]:
            return LATER
        self.consumed[GROUP].update(m.uniq_key for m in request.messages)
        return SUCCESS

    @precondition(lambda self: self.system.requests)
    @rule(data=st.data(), fails=st.booleans())
    def complete_push(self, data, fails):
        request_id = data.draw(st.sampled_from(sorted(self.system.requests)))
        request = self.system.requests[request_id]
        self.apply(CompleteConsume(request_id, self.get_result(request, fails)))

    @precondition(lambda self: self.system.pop_requests)
    @rule(data=st.data(), fails=st.booleans())
    def complete_pop(self, data, fails):
        """A POP listener returns, at least 1 ms after its pop (PO-11)."""
        request = self.system.pop_requests[data.draw(st.sampled_from(sorted(self.system.pop_requests)))]
        if request.started_at >= self.system.now:
            self.apply(Advance(self.system.now + 1))
        if request.request_id in self.system.pop_requests:
            self.apply(CompletePop(request.request_id, self.get_pop_result(request, fails)))

    @rule(elapsed=st.integers(1, 40_000))
    def wait(self, elapsed):
        self.apply(Advance(self.system.now + elapsed))

    @rule(client_id=st.sampled_from(sorted(POP_CLIENTS)))
    def start_pop_consumer(self, client_id):
        self.apply(AddPopConsumer(self.get_template(client_id)))

    @rule(client_id=st.sampled_from(sorted(POP_CLIENTS)))
    def crash_pop_consumer(self, client_id):
        self.apply(RemovePopConsumer(client_id))

    @rule(members=st.sampled_from([("c1",), ("c2",), ("c1", "c2")]))
    def set_members(self, members):
        self.members = members
        self.apply(SetMembers(members))

    @precondition(lambda self: len(self.members) > 1)
    @rule(data=st.data())
    def crash_push_consumer(self, data):
        client_id = data.draw(st.sampled_from(self.members))
        self.members = tuple(m for m in self.members if m != client_id)
        self.apply(Crash(client_id))

    @rule(graceful=st.booleans())
    def restart_broker(self, graceful):
        self.apply(RestartBroker(graceful))
        self.crashed = self.crashed or not graceful

    @invariant()
    def pop_cost_stays_in_flight(self):
        """The POP side keeps only what is in flight: unfinished checkpoints (each in the revive order, whose top
        is pending), one listener invocation per POP consumer; and every pending checkpoint has a revive run on the
        timers by its due time (IV-01)."""
        system = getattr(self, "system", None)
        if system is None:
            return
        assert all(not ck.is_done for ck in system.pop.checkpoints.values())
        entries = {key for key, _ in get_heap_items(system.pop.due)}
        assert {(ck.revive_time, slot) for slot, ck in system.pop.checkpoints.items()} <= entries
        assert get_first_due(system.pop) == min(entries, default=None)
        assert len(system.pop_requests) <= len(system.pop_consumers)
        if system.pop.checkpoints:
            due = get_next_revive_time(get_pop_broker(system))
            assert system.revive_at is not None and system.revive_at <= max(due, system.now + 1)

    def drain(self) -> None:
        """Quiescence: every POP group has a consumer and the 4.x group an instance; listeners fail only poison."""
        for client_id in ("p1", "r1", "f1"):
            if client_id not in self.system.pop_consumers:
                self.apply(AddPopConsumer(self.get_template(client_id)))
        if not self.members:
            self.members = ("c1",)
            self.apply(SetMembers(self.members))
        self.system, _, _ = drain(self.system, lambda request: CompleteConsume(
            request.request_id, self.get_result(request, False)), observe=self.observe,
            pop_listener=lambda request: CompletePop(request.request_id, self.get_pop_result(request, False)))

    def teardown(self):
        """PG-01 for every group; PG-02 through the proxy, IV-08 and PC-02 on the broker's POP path."""
        if not hasattr(self, "system"):
            return
        self.drain()
        stored = list(self.system.broker.store.get_messages())
        for group in GROUPS:
            dead = [m.uniq_key for m in stored if m.topic == get_dlq_topic(group)]
            missing = set(self.queue_of) - self.consumed[group] - set(dead)
            assert missing == self.given_up[group] - self.consumed[group], (group, sorted(missing))
            if group in (GR, GF):
                self.check_dead_letters(group, dead)
        assert not any(m.topic == get_dlq_topic(GP) for m in stored)
        record_rules(["PG-01", "IV-08"] + (["PC-02"] if self.given_up[GP] else []))

    def check_dead_letters(self, group: str, dead: list) -> None:
        """[PG-02] A message is dead-lettered only after it was delivered with every reconsumeTimes below
        maxAttempts, and a poison one always is; without a broker crash, once."""
        for key in dead:
            assert self.attempts[(group, key)] >= set(range(self.max_attempts)), (group, key)
        assert self.poison[group] <= set(dead), (group, sorted(self.poison[group] - set(dead)))
        if not self.crashed:
            assert len(dead) == len(set(dead)), (group, dead)
        if dead:
            event("PG-02")


TestSharedBroker = SharedBroker.TestCase


def test_remoting_give_up_is_a_counted_loss():
    """PC-02, PG-01 through the system: a remoting POP consumer whose listener always fails gives the message up at
    maxReconsumeTimes, delays it by its age until it is four hours old, then acks it — the one loss PG-01 counts for
    the broker's POP path — and nothing reaches a DLQ; the group's other message is consumed."""
    config = Config(profile="5.3.3", retry_max_times=1, max_reconsume_times=1)
    system = create_system(config, (), pop_groups={GP: POP_GROUPS[GP]})
    system, _ = step(system, AddPopConsumer(PopConsumer("p1", GP, 0, False, 2, 60_000, max_reconsume_times=1)))
    for key in ("k0", "k1"):
        system, _ = step(system, Produce(key, 0))
    seen, consumed = [], set()

    def fail_k0(request):
        keys = [m.uniq_key for m in request.messages]
        consumed.update(key for key in keys if key != "k0")
        return CompletePop(request.request_id, SUCCESS if "k0" not in keys else LATER)

    system, _, _ = drain(system, pop_listener=fail_k0, observe=seen.extend)
    settled = [o for o in seen if isinstance(o, PopSettled) and o.uniq_key == "k0"]
    dropped = [o for o in settled if o.give_up and o.kind == "ack"]
    assert len(dropped) == 1 and dropped[0].code == "SUCCESS" and dropped[0].time > 4 * 3600 * 1000
    assert consumed == {"k1"} and not any(m.topic.startswith("%DLQ%") for m in system.broker.store.get_messages())


@pytest.mark.parametrize("other_start", [False, True])
def test_a_restarted_pop_consumer_is_a_new_incarnation_whose_predecessors_timer_is_stale(other_start):
    """A POP consumer removed and added again is a new incarnation (numbered by the cluster's one counter, which
    4.x instances also draw from): the pop its predecessor had pending is stale, so the new instance pops once, one
    batch, not twice."""
    system = create_system(Config(profile="5.3.3"), ("c1",), pop_groups={GP: PopGroupConfig()})
    template = PopConsumer("p1", GP, 0, False, 1, 30_000)
    system, _ = step(system, AddPopConsumer(template))
    if other_start:  # a 4.x instance starts between the two incarnations
        system, _ = step(system, SetMembers(("c1", "c2")))
    system, _ = step(system, RemovePopConsumer("p1"))
    system, _ = step(system, AddPopConsumer(template))
    delivered = []
    for ev in [Produce("a"), Produce("b"), Advance(system.now + 1)]:
        system, seen = step(system, ev)
        delivered += [o for o in seen if isinstance(o, PopDelivered) and o.client_id == "p1"]
    assert len(delivered) == 1 and len(delivered[0].messages) == 1


@pytest.mark.parametrize("via_proxy", [False, True])
def test_a_pop_consumer_with_a_tag_subscription_is_delivered_only_its_tags(via_proxy):
    """A POP consumer subscribed to tag a pops with that filter (PopMessageRequestHeader's exp, the proxy's
    FilterExpression): the broker delivers the message tagged a and passes over the one tagged b (PO-05)."""
    system = create_system(Config(profile="5.3.3"), ("c1",), pop_groups={GP: PopGroupConfig()})
    system, _ = step(system, AddPopConsumer(PopConsumer("p1", GP, 0, via_proxy, 2, 30_000, tags=frozenset({"a"}))))
    delivered = []
    for ev in [Produce("x", tags="b"), Produce("y", tags="a"), Advance(system.now + 1_000)]:
        system, seen = step(system, ev)
        delivered += [m.uniq_key for o in seen if isinstance(o, PopDelivered) for m in o.messages]
    assert delivered == ["y"]


def test_a_pop_that_found_nothing_is_answered_when_a_message_is_stored():
    """The broker holds a pop that found nothing (PopLongPollingService) and answers it as soon as a message is
    stored, not when the client's poll would come again: the message is delivered at the time it was stored."""
    system = create_system(Config(profile="5.3.3"), ("c1",), pop_groups={GP: PopGroupConfig()})
    system, _ = step(system, AddPopConsumer(PopConsumer("p1", GP, 0, False, 1, 30_000)))
    system, seen = step(system, Advance(system.now + 1_000))
    assert not [o for o in seen if isinstance(o, PopDelivered)]
    stored_at = system.now
    delivered = []
    for ev in [Produce("m"), Advance(stored_at)]:
        system, seen = step(system, ev)
        delivered += [o for o in seen if isinstance(o, PopDelivered)]
    assert [(o.client_id, o.group, [m.uniq_key for m in o.messages], o.time) for o in delivered] == [
        ("p1", GP, ["m"], stored_at)]
    assert delivered[0].request_id in system.pop_requests and "PO-03" in delivered[0].rules
    # answered, the pop is no longer held: a message stored while the listener runs waits for the next pop
    for ev in [Produce("n"), Advance(stored_at + 1)]:
        system, seen = step(system, ev)
        assert not [o for o in seen if isinstance(o, PopDelivered)]
    system, seen = step(system, CompletePop(delivered[0].request_id))
    system, seen = step(system, Advance(system.now))
    assert [m.uniq_key for o in seen if isinstance(o, PopDelivered) for m in o.messages] == ["n"]


@pytest.mark.parametrize(("status", "ack_index", "kinds"), [
    (ConsumeStatus.CONSUME_SUCCESS, 1, ["ack", "ack", "change"]),
    (ConsumeStatus.CONSUME_SUCCESS, 5, ["ack", "ack", "ack"]),
    (ConsumeStatus.RECONSUME_LATER, 5, ["change", "change", "change"]),
])
def test_a_simple_consumer_acks_up_to_ack_index_and_changes_the_rest_to_its_retry_delay(status, ack_index, kinds):
    """A SimpleConsumer through the proxy acks (AckMessage) the messages up to ackIndex on success and changes the
    invisible duration of every other one to its retry delay (ChangeInvisibleDuration); the remoting consumer's
    actions go to the broker as ACK_MESSAGE and CHANGE_MESSAGE_INVISIBLETIME."""
    handles = tuple(Handle(0, 1_000, 30_000, 0, "0", "broker-a", 0, i) for i in range(3))
    request = PopConsumeRequest(7, "p1", 1, GP, tuple(Message(TOPIC) for _ in handles), handles, 1_000)
    proxy = PopConsumer("p1", GP, 1, True, 3, 30_000, retry_delay=4_000)
    actions = compute_actions(proxy, request, ListenerResult(status, ack_index), 2_000)
    assert actions == tuple(PopAction(kind, h, 4_000 if kind == "change" else 0)
                            for kind, h in zip(kinds, handles, strict=True))
    remoting = evolve(proxy, via_proxy=False)
    for action in actions:
        wire = {True: compute_settle_request(proxy, action), False: compute_settle_request(remoting, action)}
        if action.kind == "ack":
            assert wire == {True: ProxyAckRequest(GP, TOPIC, action.handle),
                            False: compute_ack_request(GP, TOPIC, action.handle)}
        else:
            assert wire == {True: ProxyChangeRequest(GP, TOPIC, action.handle, 4_000),
                            False: compute_change_request(GP, TOPIC, action.handle, 4_000)}
    assert compute_settle_request(proxy, PopAction("none", handles[0])) is None


@pytest.mark.parametrize(("status", "max_times", "kind", "code", "visible_in"), [
    (ConsumeStatus.CONSUME_SUCCESS, 0, "ack", "SUCCESS", None),
    (ConsumeStatus.RECONSUME_LATER, 0, "none", None, None),  # at maxReconsumeTimes, younger than 10 s: nothing sent
    (ConsumeStatus.RECONSUME_LATER, 16, "change", "SUCCESS", 10_000),  # popDelayLevel[reconsumeTimes 0]: 10 s
])
def test_a_settled_pop_reports_what_was_sent_and_no_visible_time_unless_changed(status, max_times, kind, code,
                                                                               visible_in):
    """PC-01, PC-02: the remoting POP consumer settles each message with what it sent and the broker's code; only a
    change that succeeded makes the message visible again at a known time (now + its invisible time)."""
    system = create_system(Config(profile="5.3.3"), ("c1",), pop_groups={GP: PopGroupConfig()})
    consumer = PopConsumer("p1", GP, 0, False, 1, 30_000, max_reconsume_times=max_times)
    system, _ = step(system, AddPopConsumer(consumer))
    system, _ = step(system, Produce("m"))
    system, seen = step(system, Advance(system.now + 1))
    (delivered,) = [o for o in seen if isinstance(o, PopDelivered)]
    system, seen = step(system, CompletePop(delivered.request_id, ListenerResult(status)))
    settled = [o for o in seen if isinstance(o, PopSettled)]
    visible_at = None if visible_in is None else system.now + visible_in
    assert [(o.client_id, o.uniq_key, o.kind, o.code, o.visible_at) for o in settled] == [
        ("p1", "m", kind, code, visible_at)]
    assert bool(settled[0].rules) == (kind != "none")
