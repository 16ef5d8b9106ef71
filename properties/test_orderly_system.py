"""OrderlyConsumption: an orderly CLUSTERING group on the whole system (model/system.py) — producers, pulls, lockAll,
rebalance, crashes, the broker's delay timer — with the listener's outcomes chosen by Hypothesis (spec/12-orderly.md).

The oracle knows only what a user of a real cluster sees: the messages the listener gets, what it answered, the
broker's stored messages, committed offsets and lock table. Its expectations come from reference §3, not from the
model: order (OR-13), exclusivity (OR-14), the local retry counter and its loss with the ProcessQueue (OR-07,
OR-11), the retry bound (OR-15) and commit correctness (OR-05, OR-06, OR-16).
"""

from __future__ import annotations

from attrs import evolve
from hypothesis import event
from hypothesis import strategies as st
from hypothesis.stateful import RuleBasedStateMachine, invariant, precondition, rule

from model.cluster import GROUP, Advance, CompleteConsume, Crash, ListenerInvoked, Produce, SetMembers
from model.orderly import OrderlyResult, OrderlyStatus
from model.orderly_service import OrderlyProcessed
from model.queue_locks import get_lock_owner
from model.system import create_system, step
from properties.suite import get_suite_config

CLIENTS = ("c1", "c2", "c3")
MAX_RECONSUME_TIMES = 2
FINISHING = (OrderlyStatus.SUCCESS, OrderlyStatus.COMMIT)


def is_commit_expected(status: OrderlyStatus, auto_commit: bool, given_up: bool) -> bool:
    """Reference §3 processConsumeResult, batch of one: autoCommit commits SUCCESS, COMMIT, ROLLBACK and a given-up
    SUSPEND; without it only COMMIT commits."""
    if status is OrderlyStatus.SUSPEND:
        return given_up and auto_commit
    return auto_commit or status is OrderlyStatus.COMMIT


class OrderlyConsumption(RuleBasedStateMachine):
    def __init__(self):
        super().__init__()
        config = evolve(get_suite_config(), consume_mode="orderly", message_model="clustering",
                        max_reconsume_times=MAX_RECONSUME_TIMES, consume_message_batch_max_size=1)
        self.system = create_system(config, ("c1", "c2"))
        self.produced = 0
        self.finished: set = set()  # (mq, offset) the listener succeeded on, or that was given up
        self.expected_r: dict = {}  # (client, incarnation, generation, mq, offset) -> reconsumeTimes it must show
        self.given_up: set = set()  # the same keys: given up, never to be delivered again by that ProcessQueue
        self.running: dict = {}  # request id -> (key, message, excused)

    # ------------------------------------------------------------------ driving the system

    def apply(self, event_, answers=None):
        self.system, observations = step(self.system, event_)
        for observation in observations:
            for rule_id in observation.rules:
                event(rule_id)
            if isinstance(observation, ListenerInvoked):
                self.check_invocation(observation)
            elif isinstance(observation, OrderlyProcessed):
                self.check_processed(observation, answers)
        self.excuse_lost_leases()

    def get_stored_reconsume_times(self, mq, offset) -> int:
        return self.system.broker.store.get_message(mq.topic, mq.queue_id, offset).reconsume_times

    def check_invocation(self, invoked: ListenerInvoked):
        request = self.system.requests[invoked.request_id]
        (msg,) = invoked.messages
        mq, offset = invoked.queue, msg.queue_offset
        key = (request.client_id, request.incarnation, request.generation, mq, offset)
        overlapping = [r for r, (k, _m, excused) in self.running.items()
                       if k[3] == mq and k[0] != request.client_id and self.is_live(k) and not excused]
        assert not overlapping, f"OR-14: {request.client_id} runs {mq} while requests {overlapping} still run"
        unfinished = [o for o in range(offset) if (mq, o) not in self.finished]
        assert not unfinished, f"OR-13: {mq} offset {offset} overtook unfinished {unfinished}"
        assert key not in self.given_up, f"OR-08: {mq} offset {offset} delivered again after its give-up"
        expected = self.expected_r.get(key, self.get_stored_reconsume_times(mq, offset))
        assert msg.reconsume_times == expected, (
            f"OR-07/OR-11: {mq}@{offset} shows reconsumeTimes {msg.reconsume_times}, expected {expected}")
        self.running[invoked.request_id] = (key, msg, False)

    def check_processed(self, processed: OrderlyProcessed, answers):
        key, msg, _excused = self.running.pop(processed.request_id)
        result, send_fails = answers
        mq = key[3]
        # Under autoCommit a ROLLBACK is treated as SUCCESS (OR-05): the message is done with, as the listener's
        # author must know.
        if result.status in FINISHING or (result.status is OrderlyStatus.ROLLBACK and result.auto_commit):
            self.finished.add((mq, msg.queue_offset))
        if processed.discarded:
            return
        if processed.status is OrderlyStatus.SUSPEND:
            if msg.reconsume_times >= MAX_RECONSUME_TIMES and not send_fails:
                # OR-08: given up — the send went out, and the message is done with as far as this queue goes.
                assert len(processed.sent) == 1, "OR-08: a message at the maximum was not sent to %RETRY%"
                self.finished.add((mq, msg.queue_offset))
                self.given_up.add(key)
            else:
                self.expected_r[key] = msg.reconsume_times + 1
        assert (processed.commit_offset >= 0) == is_commit_expected(processed.status, result.auto_commit,
                                                                   key in self.given_up), (
            f"OR-05/OR-06: {result} committed {processed.commit_offset}")
        if processed.commit_offset >= 0:
            skipped = [o for o in range(processed.commit_offset) if (mq, o) not in self.finished]
            assert not skipped, f"OR-16: commit to {processed.commit_offset} skips unfinished {skipped}"

    def is_live(self, key) -> bool:
        consumer = self.system.consumers.get(key[0])
        return consumer is not None and consumer.incarnation == key[1]

    def excuse_lost_leases(self):
        """A running listener whose instance no longer holds the queue's broker lease may overlap (OR-14)."""
        for request_id, (key, msg, excused) in list(self.running.items()):
            owner = get_lock_owner(self.system.broker, GROUP, key[3], self.system.now)
            if not excused and owner != key[0]:
                self.running[request_id] = (key, msg, True)

    # ------------------------------------------------------------------ rules

    @rule(queue_id=st.integers(0, 1))
    def produce(self, queue_id):
        self.apply(Produce(f"m{self.produced}", queue_id=queue_id))
        self.produced += 1

    @precondition(lambda self: self.system.requests)
    @rule(data=st.data(), status=st.sampled_from(list(OrderlyStatus)), auto_commit=st.booleans(),
          send_fails=st.booleans())
    def listener_returns(self, data, status, auto_commit, send_fails):
        request_id = data.draw(st.sampled_from(sorted(self.system.requests)))
        result = OrderlyResult(status, auto_commit)
        self.apply(CompleteConsume(request_id, result, fallback_fails=send_fails), (result, send_fails))

    @rule(ms=st.sampled_from([10, 1_000, 3_000, 20_000, 31_000, 61_000]))
    def clock_advances(self, ms):
        self.apply(Advance(self.system.now + ms))

    @rule(members=st.sets(st.sampled_from(CLIENTS), min_size=1))
    def group_changes(self, members):
        self.apply(SetMembers(tuple(sorted(members))))

    @precondition(lambda self: len(self.system.consumers) > 1)
    @rule(client=st.sampled_from(CLIENTS))
    def instance_crashes(self, client):
        self.apply(Crash(client))

    # ------------------------------------------------------------------ invariants

    @invariant()
    def committed_offsets_skip_nothing(self):
        """[OR-16] Everything below a queue's committed offset (client memory or broker) was finished."""
        for consumer in self.system.consumers.values():
            for mq, entry in consumer.offset_store.offsets.items():
                assert all((mq, o) in self.finished for o in range(entry.value)), f"OR-16: {mq} at {entry.value}"
        for (group, topic, queue_id), offset in self.system.broker.consumer_offsets.items():
            mq = next(mq for mq in self.all_queues() if (mq.topic, mq.queue_id) == (topic, queue_id))
            assert group != GROUP or all((mq, o) in self.finished for o in range(offset)), f"OR-16: {mq}"

    def all_queues(self):
        from model.rebalance import get_subscribed_queues

        return get_subscribed_queues(self.system)


TestOrderlyConsumption = OrderlyConsumption.TestCase
