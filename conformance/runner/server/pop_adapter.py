"""The model-backed server's 5.x half: POP, ack, changeInvisibleTime and revive on the broker's side, and the local
proxy's receive, ack, changeInvisibleDuration and forward to the DLQ (model/broker/pop/, model/proxy/), over the
same broker state as the 4.x requests (BrokerAdapter.broker).

Wire values in, wire values out. The model counts time from the server's start; the wire carries wall-clock
milliseconds, as a real broker's ``System.currentTimeMillis()``: every pop time in a handle, a response header or
the ``1ST_POP_TIME`` property is the model's time plus ``epoch_ms`` (BrokerAdapter's), and a handle read from the
wire is taken back by the same amount.
"""

from __future__ import annotations

import attrs
import immutables

from conformance.codec.message import StoredMessage
from conformance.runner.server.broker_adapter import BrokerAdapter, get_subscribed_tags
from conformance.runner.server.renewals import Renewals
from conformance.runner.settings import BrokerSettings
from model.broker.pop.ack import AckRequest, ChangeRequest, on_ack, on_change_invisible_time
from model.broker.pop.assignment import compute_assignment
from model.broker.pop.config import PopConfig
from model.broker.pop.handle import Handle
from model.broker.pop.pop import PROPERTY_POP_CK, PopRequest, on_pop
from model.broker.pop.restart import on_broker_restart, on_persist
from model.broker.pop.retry_policy import (
    CustomizedRetryPolicy,
    ExponentialRetryPolicy,
    GroupRetryPolicy,
    GroupRetryPolicyType,
)
from model.broker.pop.revive import get_next_revive_time, on_revive
from model.broker.pop.state import PopBroker, PopGroupConfig, PopState
from model.broker.send_back import RANDOM_BOUND
from model.proxy.clients import (
    ClientSettings,
    ProxyClients,
    compute_heartbeat_code,
    compute_receive_code,
    compute_send_queue,
    on_client_settings,
    on_client_termination,
    on_proxy_restart,
)
from model.proxy.consumer import on_change_invisible_duration, on_proxy_ack
from model.proxy.dlq import on_forward_to_dlq, process_follow_up
from model.proxy.receive import ReceiveRequest, on_receive
from model.proxy.renew import is_renewing
from model.proxy.settings import ConsumerSettings, ProxyConfig, compute_consumer_settings

# The broker configuration keys UPDATE_BROKER_CONFIG may change at run time, as PopConfig fields.
POP_CONFIG_KEYS = {"enableRetryTopicV2": "enable_retry_topic_v2",
                   "retrieveMessageFromPopRetryTopicV1": "retrieve_message_from_pop_retry_topic_v1",
                   "popFromRetryProbability": "pop_from_retry_probability"}


@attrs.frozen
class PopResult:
    """What POP_MESSAGE answers: the code's name, the messages as the wire carries them (a retry copy under the
    asked topic with the broker's POP_CK, FIFO counts per offset) and the response header's fields."""

    code: str
    messages: tuple[StoredMessage, ...] = ()
    header: dict = attrs.field(factory=dict)


@attrs.frozen
class Received:
    """What a ReceiveMessage answers: the code's name and each message with its receipt handle."""

    code: str
    messages: tuple[tuple[StoredMessage, str], ...] = ()


def parse_policy(policy: dict | None) -> GroupRetryPolicy:
    """SubscriptionGroupConfig.groupRetryPolicy as JSON (absent: the customized default)."""
    if not policy:
        return GroupRetryPolicy()
    exponential, customized = policy.get("exponentialRetryPolicy"), policy.get("customizedRetryPolicy")
    return GroupRetryPolicy(
        GroupRetryPolicyType(policy.get("type", "CUSTOMIZED")),
        ExponentialRetryPolicy(int(exponential.get("initial", 5000)), int(exponential.get("max", 7_200_000)),
                               int(exponential.get("multiplier", 2))) if exponential else None,
        CustomizedRetryPolicy(tuple(int(n) for n in customized["next"])) if customized and customized.get("next")
        else None)


@attrs.define
class PopAdapter:
    """The POP state beside the broker adapter's `broker`; each request composes the model's PopBroker from both
    and splits the new state back."""

    brokers: BrokerAdapter
    pop: PopState = attrs.field(factory=PopState)
    pop_config: PopConfig = attrs.field(factory=PopConfig)
    proxy: ProxyConfig = attrs.field(factory=ProxyConfig)
    flush_at: int = 0
    clients: ProxyClients = attrs.field(factory=ProxyClients)
    fifo_topics: frozenset = frozenset()
    sends: int = 0  # gRPC sends so far (their round robin)
    renewals: Renewals | None = None  # the proxy's auto-renew (PD-07), made with the proxy's config

    def __attrs_post_init__(self) -> None:
        if self.renewals is None:
            self.renewals = Renewals(self.proxy, is_renewing(self.brokers.config.profile))

    @property
    def epoch_ms(self) -> int:
        return self.brokers.epoch_ms

    def state(self) -> PopBroker:
        return PopBroker(self.brokers.broker, self.pop, self.brokers.config, self.pop_config)

    def keep(self, state: PopBroker) -> None:
        self.brokers.broker, self.pop = state.broker, state.pop

    def draw(self, bound: int = 100) -> int:
        return self.brokers.rng.randrange(bound)

    def set_group(self, group: str, consume_enable: bool, orderly: bool, policy: dict | None) -> None:
        config = PopGroupConfig(consume_enable, orderly, parse_policy(policy))
        self.pop = attrs.evolve(self.pop, groups=self.pop.groups.set(group, config))

    def set_broker_config(self, keys: dict[str, str]) -> None:
        changes = {}
        for key, value in keys.items():
            field = POP_CONFIG_KEYS[key]
            changes[field] = value.strip().lower() == "true" if value.strip().lower() in ("true", "false") \
                else int(value)
        self.pop_config = attrs.evolve(self.pop_config, **changes)

    def get_broker_config(self) -> dict[str, object]:
        config = self.pop_config
        return {"reviveInterval": config.revive_interval, "reviveQueueNum": config.revive_queue_num,
                "popFromRetryProbability": config.pop_from_retry_probability, "enablePopBufferMerge": "false",
                "enableRetryTopicV2": str(config.enable_retry_topic_v2).lower(),
                "retrieveMessageFromPopRetryTopicV1": str(config.retrieve_message_from_pop_retry_topic_v1).lower()}

    # --- handles and messages on the wire ------------------------------------------------------------------------

    def to_wire_handle(self, handle: Handle, with_commit_log_offset: bool = False) -> str:
        """ExtraInfoUtil's POP_CK (8 fields), or the proxy's ReceiptHandle (a 9th: the commit-log offset)."""
        fields = handle._replace(pop_time=handle.pop_time + self.epoch_ms)
        return " ".join(map(str, fields[:9] if with_commit_log_offset else fields[:8]))

    def to_model_handle(self, text: str) -> Handle:
        """A handle read from the wire (8 or 9 fields); ValueError when it is not one."""
        parts = text.split(" ")
        if len(parts) not in (8, 9):
            raise ValueError(f"receipt handle {text!r} has {len(parts)} fields (valid: 8 or 9)")
        return Handle(int(parts[0]), int(parts[1]) - self.epoch_ms, int(parts[2]), int(parts[3]), parts[4], parts[5],
                      int(parts[6]), int(parts[7]), int(parts[8]) if len(parts) == 9 else -1)

    def to_wire_message(self, message, handle: Handle | None) -> StoredMessage:
        """The model's message view as the wire carries it: POP_CK only where the broker sets one (a copy popped
        from a retry topic: `handle`)."""
        message = message._replace(properties=message.properties.delete(PROPERTY_POP_CK)) \
            if PROPERTY_POP_CK in message.properties else message
        wire = self.brokers.to_wire(message)
        properties = dict(wire.properties)
        if handle is not None:
            properties[PROPERTY_POP_CK] = self.to_wire_handle(handle)
        return attrs.evolve(wire, properties=properties)

    # --- the broker: POP_MESSAGE, ACK_MESSAGE, CHANGE_MESSAGE_INVISIBLETIME, the revive service ------------------

    def pop_messages(self, group: str, topic: str, queue_id: int, max_nums: int, invisible_time: int, exp: str,
                     order: bool, attempt_id: str | None, now: int) -> PopResult:
        request = PopRequest(group, topic, queue_id, max_nums, invisible_time, order, attempt_id,
                             get_subscribed_tags(exp))
        state, answer = on_pop(self.state(), request, now, self.draw())
        self.keep(state)
        messages = tuple(self.to_wire_message(m, h if h.retry_flag != "0" else None)
                         for m, h in zip(answer.messages, answer.handles, strict=True))
        header = {"popTime": now + self.epoch_ms, "invisibleTime": request.invisible_time, "restNum": 0,
                  "reviveQid": answer.handles[0].revive_queue_id if answer.handles else 0,
                  **get_offset_infos(answer.handles, answer.order_counts, answer.offset_counts, request.order)}
        return PopResult(answer.code, messages, header)

    def ack(self, group: str, topic: str, queue_id: int, offset: int, handle: str, now: int) -> str:
        state, answer = on_ack(self.state(), AckRequest(group, topic, queue_id, offset, self.to_model_handle(handle)),
                               now)
        self.keep(state)
        return answer.code

    def change(self, group: str, topic: str, queue_id: int, offset: int, handle: str, invisible_time: int,
               now: int) -> tuple[str, dict]:
        """(code, the response header: popTime, invisibleTime, reviveQid — 0 each, the Java fields' default, where
        the broker sets none: FF-04's orderly change below the committed offset)."""
        request = ChangeRequest(group, topic, queue_id, offset, self.to_model_handle(handle), invisible_time)
        state, answer = on_change_invisible_time(self.state(), request, now)
        self.keep(state)
        if answer.code != "SUCCESS":
            return answer.code, {}
        if answer.pop_time is None:
            return answer.code, {"popTime": 0, "invisibleTime": 0, "reviveQid": 0}
        return answer.code, {"popTime": answer.pop_time + self.epoch_ms, "invisibleTime": answer.invisible_time,
                             "reviveQid": answer.revive_queue_id}

    def next_due(self) -> int | None:
        """When the revive service next finds a due checkpoint, the next offset persist (PO-10) or, while the proxy
        holds auto-renewed messages, its next renew scan (PD-07), in model time."""
        dues = (get_next_revive_time(self.state()), self.flush_at, self.renewals.next_due())
        return min(due for due in dues if due is not None)

    def run_due(self, now: int) -> tuple[str, ...]:
        """The proxy's renew scan, the revive service and the offset persist at `now`; the topics that received
        revived copies."""
        state = self.state()
        if self.renewals.next_due() is not None and now >= self.renewals.scan_at:
            state = self.renewals.scan(state, self.clients, now)
        state, answer = on_revive(state, now)
        if now >= self.flush_at:
            state = on_persist(state)
            self.flush_at = now + self.pop_config.flush_consumer_offset_interval
        self.keep(state)
        return tuple(sorted({m.get_property("REAL_TOPIC") or m.topic for m in answer.stored}))

    # --- the proxy: ReceiveMessage, AckMessage, ChangeInvisibleDuration, ForwardMessageToDeadLetterQueue --------

    def get_settings(self, group: str) -> ConsumerSettings:
        return compute_consumer_settings(self.state(), group)

    def set_topic_fifo(self, topic: str, fifo: bool) -> None:
        self.fifo_topics = self.fifo_topics | {topic} if fifo else self.fifo_topics - {topic}

    def on_settings(self, client_id: str, client_type: str, group: str | None) -> ConsumerSettings | None:
        """A client's settings from its telemetry stream: kept; the group's settings for a consumer, else None."""
        self.clients = on_client_settings(self.clients, client_id, ClientSettings(client_type, group))
        return None if group is None else self.get_settings(group)

    def heartbeat(self, client_id: str) -> str:
        return compute_heartbeat_code(self.clients, client_id)

    def terminate(self, client_id: str) -> str:
        self.clients, code = on_client_termination(self.clients, client_id)
        return code

    def get_send_queue(self, topic: str, message_group: str | None) -> int:
        config = self.brokers.broker.topics.get(topic)
        self.sends += 1
        return compute_send_queue(message_group, config.write_queue_nums if config else 1, self.sends - 1)

    def assign(self, topic: str, queue_count: int | None, client_ids: tuple[str, ...], client_id: str,
               strategy: str) -> tuple[str, tuple[int, ...] | None]:
        """QUERY_ASSIGNMENT: (the mode's name, the queue ids assigned, None where the broker has none)."""
        answer = compute_assignment(topic, queue_count, client_ids, client_id, strategy, self.pop_config)
        return answer.mode.value, answer.queue_ids

    def restart(self, now: int) -> None:
        """The broker and its local proxy stopped gracefully at `now` and started again: the proxy first makes
        what it held for its clients visible again after 1 s (clearAllHandle, PD-07), the broker persists
        (PO-10), the proxy forgets every client's settings (RP-03)."""
        self.keep(on_broker_restart(self.renewals.clear(self.state(), now), graceful=True))
        self.clients = on_proxy_restart(self.clients)

    def crash(self) -> None:
        """The broker with its local proxy killed and started again: the broker's POP progress falls back to its
        last persist (PO-10), the proxy forgets every client's settings (RP-03) and what it held (PD-07)."""
        self.keep(on_broker_restart(self.state(), graceful=False))
        self.clients = on_proxy_restart(self.clients)
        self.renewals.held.clear()

    def receive(self, group: str, topic: str, batch: int, invisible_time: int, exp: str, attempt_id: str | None,
                now: int, client_id: str | None = None, auto_renew: bool = False) -> tuple[Received, bool]:
        """(the answer, whether the broker's pop found anything: a receive whose messages the filter all took is
        answered at once, without long polling). The filter's acks and forwards are sent right after. A receive
        of a `client_id` whose settings the proxy lacks fails first (None: a caller that names no client)."""
        refused = None if client_id is None else compute_receive_code(self.clients, client_id)
        if refused is not None:
            return Received(refused), True
        request = ReceiveRequest(group, topic, batch, invisible_time, get_subscribed_tags(exp), attempt_id,
                                 auto_renew)
        state, answer = on_receive(self.state(), request, now, self.draw(), self.proxy)
        pending = list(answer.follow_ups)
        while pending:
            state, more = process_follow_up(state, pending.pop(0), now, self.draw(RANDOM_BOUND))
            pending.extend(more)
        self.keep(state)
        if auto_renew and self.proxy.enable_proxy_auto_renew and client_id is not None:
            self.renewals.add(client_id, group, topic, zip(answer.messages, answer.handles, strict=True), now)
        messages = tuple((self.to_wire_message(m, None), self.to_wire_handle(h, True))
                         for m, h in zip(answer.messages, answer.handles, strict=True))
        return Received(answer.code, messages), bool(answer.follow_ups)

    def get_handle(self, group: str, handle: str, client_id: str | None, message_id: str | None) -> Handle:
        """The handle the proxy acts on for a client's ack, change or forward: the one it renewed last, if it holds
        the message for that client (PD-07), else the client's."""
        model_handle = self.to_model_handle(handle)
        if client_id is None or message_id is None:
            return model_handle
        return self.renewals.take(client_id, group, message_id, model_handle)

    def proxy_ack(self, group: str, topic: str, handle: str, now: int, client_id: str | None = None,
                  message_id: str | None = None) -> str:
        state, answer = on_proxy_ack(self.state(), group, topic, self.get_handle(group, handle, client_id, message_id),
                                     now)
        self.keep(state)
        return answer.code

    def proxy_change(self, group: str, topic: str, handle: str, invisible_time: int, now: int,
                     client_id: str | None = None, message_id: str | None = None) -> tuple[str, str]:
        state, answer = on_change_invisible_duration(self.state(), group, topic,
                                                     self.get_handle(group, handle, client_id, message_id),
                                                     invisible_time, now, self.proxy)
        self.keep(state)
        return answer.code, "" if answer.handle is None else self.to_wire_handle(answer.handle, True)

    def forward_to_dlq(self, group: str, topic: str, handle: str, message_id: str, now: int,
                       client_id: str | None = None) -> str:
        """The send-back's code name (its ack, on SUCCESS, is sent right after)."""
        model_handle = self.get_handle(group, handle, client_id, message_id)
        if model_handle.commit_log_offset < 0:
            return "INVALID_RECEIPT_HANDLE"
        state, answer = on_forward_to_dlq(self.state(), group, topic, model_handle, message_id, now,
                                          self.draw(RANDOM_BOUND))
        if answer.follow_up is not None:
            state, _ = process_follow_up(state, answer.follow_up, now, 0)
        self.keep(state)
        return answer.result.code.name


def get_offset_infos(handles: tuple, order_counts: tuple, offset_counts: tuple, order: bool) -> dict[str, str]:
    """startOffsetInfo, msgOffsetInfo and (orderly) orderCountInfo: ``mark queueId value`` entries joined by ``;``
    (ExtraInfoUtil.build*Info), one per queue popped, in the order the pop read them; orderCountInfo has an entry
    per count the order info holds (`offset_counts`, FF-06: not only of offsets popped) and one per queue."""
    starts: dict[tuple[str, int], int] = {}
    offsets: dict[tuple[str, int], list[int]] = {}
    counts = [f"{mark} qo{queue_id}%{offset} {count}" for mark, queue_id, offset, count in offset_counts]
    for handle in handles:
        key = (handle.retry_flag, handle.queue_id)
        starts.setdefault(key, handle.start_offset)
        offsets.setdefault(key, []).append(handle.offset)
    queue_counts = {(h.retry_flag, h.queue_id): c for h, (_o, c) in zip(handles, order_counts, strict=True)}
    infos = {"startOffsetInfo": ";".join(f"{m} {q} {s}" for (m, q), s in starts.items()),
             "msgOffsetInfo": ";".join(f"{m} {q} {','.join(map(str, o))}" for (m, q), o in offsets.items())}
    if order and handles:
        counts += [f"{m} {q} {c}" for (m, q), c in queue_counts.items()]
        infos["orderCountInfo"] = ";".join(counts)
    return {k: v for k, v in infos.items() if v}


def create_pop_adapter(brokers: BrokerAdapter, settings: BrokerSettings) -> PopAdapter | None:
    """The POP half of a broker whose profile has server-side retry (None for a 4.x one), with the proxy's
    settings of `settings`."""
    if not brokers.config.profile.server_side_retry:
        return None
    proxy = ProxyConfig(min_invisible_time_mills_for_recv=settings.proxy_min_invisible_ms)
    config = PopConfig(settings.broker_name, default_message_request_mode=settings.message_request_mode)
    return PopAdapter(brokers, PopState(groups=immutables.Map()), config, proxy)


