"""Chapter 02 as a state machine: messages of the suite configuration fail again and again through both paths.

Each step sends back (SB) or falls back (RS-08) any message the broker stored so far, originals and copies alike.
"""

from __future__ import annotations

from hypothesis import strategies as st
from hypothesis.stateful import Bundle, RuleBasedStateMachine, initialize, invariant, multiple, rule

from model.broker.retry_send import on_send_retry_message
from model.broker.send_back import ResponseCode, compute_send_back_request, on_consumer_send_msg_back
from model.broker.state import create_broker
from model.broker.store import put_message
from model.client.retry_message import compute_fallback_retry_message
from model.values.message import create_message
from model.values.records import evolve
from properties.coverage import record_rules
from properties.send_back_strategies import GROUP, RANDOM_INTS
from properties.suite import get_suite_config


def get_listener_view(message):
    """What the listener sees (resetRetryAndNamespace): the original topic of a retry."""
    return evolve(message, topic=message.get_property("RETRY_TOPIC", message.topic))


class SendBack(RuleBasedStateMachine):
    messages = Bundle("messages")

    @initialize()
    def start(self):
        self.config = get_suite_config()
        self.broker = create_broker(self.config, GROUP, {"T": 4})
        self.now = 0
        self.bodies = {}  # UNIQ_KEY -> body of the original
        self.last_physical_offset = 0

    @rule(target=messages, key=st.integers(0, 1000))
    def produce(self, key):
        message = create_message("T", f"U{key}", body=f"body {key}".encode())
        store, stored = put_message(self.broker.store, message, self.now, self.config.delay_levels)
        self.broker = evolve(self.broker, store=store)
        self.bodies[stored.uniq_key] = stored.body
        return stored

    @rule(target=messages, message=messages, delay_level=st.sampled_from([0, 0, 0, -1, 1, 25]),
          random_int=RANDOM_INTS, elapsed=st.integers(0, 60_000))
    def consume_fails(self, message, delay_level, random_int, elapsed):
        """SB-04, SB-12, SB-13: a send-back stores a copy with reconsumeTimes + 1."""
        self.now += elapsed
        request = compute_send_back_request(get_listener_view(message), GROUP, self.config, delay_level)
        self.broker, result = on_consumer_send_msg_back(self.broker, self.config, request, self.now, random_int)
        record_rules(result.rules)
        assert result.code is ResponseCode.SUCCESS
        if result.stored is None:  # SB-03: a group without retry queues drops the message
            return multiple()
        assert result.stored.reconsume_times == message.reconsume_times + 1
        return result.stored

    @rule(target=messages, message=messages, random_int=RANDOM_INTS)
    def send_back_fails_and_falls_back(self, message, random_int):
        """RS-08: the fallback producer send stores a copy of the same message."""
        built, reconsume, max_times = compute_fallback_retry_message(get_listener_view(message), GROUP, self.config)
        self.broker, result = on_send_retry_message(self.broker, self.config, built, reconsume, max_times, self.now,
                                                    random_int)
        record_rules(result.rules)
        assert result.code is ResponseCode.SUCCESS
        assert result.stored.reconsume_times == message.reconsume_times + 1
        return result.stored

    @invariant()
    def commit_log_only_grows(self):
        offset = self.broker.store.next_physical_offset
        assert offset >= self.last_physical_offset
        self.last_physical_offset = offset

    @invariant()
    def every_copy_is_the_same_message(self):
        """Copies keep the producer's UNIQ_KEY and body: a consumer can always recognise a retry."""
        for stored in self.broker.store.get_messages():
            assert stored.body == self.bodies[stored.uniq_key]


TestSendBack = SendBack.TestCase
