"""The broker's CONSUMER_SEND_MSG_BACK handler: a failed message becomes a delayed retry or a dead letter.

spec/02-send-back.md, rules SB-01 to SB-14. The branches run in the order of SMP 4.9.8 `asyncConsumerSendMsgBack`
(L116-263); ASMP 5.x `consumerSendMsgBack` takes the same branches in the same order, so only the profile flags
of the DLQ branch differ between versions.
"""

from __future__ import annotations

from model.broker.state import (
    PERM_READ,
    PERM_WRITE,
    Broker,
    SubscriptionGroupConfig,
    TopicConfig,
    get_or_create_topic,
    is_writeable,
)
from model.broker.store import put_message
from model.values.config import Config
from model.values.delay_levels import DEFAULT_RETRY_LEVEL_BASE
from model.values.errors import IllegalTransition
from model.values.message import (
    PROPERTY_DELAY_TIME_LEVEL,
    PROPERTY_ORIGIN_MESSAGE_ID,
    PROPERTY_RETRY_TOPIC,
    PROPERTY_WAIT_STORE_MSG_OK,
    Message,
    MessageQueue,
    compute_origin_message_id,
    get_dlq_topic,
    get_retry_topic,
)
from model.values.profiles import Profile
from model.values.records import evolve, new_tuple
from model.values.wire import (
    RANDOM_BOUND,
    RESPONSE_SUCCESS,
    ResponseCode,
    SendBackRequest,
    SendBackResult,
    compute_send_back_request,  # noqa: F401 (the client builds the header; spec/02-send-back.md cites it here)
)

DLQ_NUMS_PER_GROUP = 1


def check_random_int(random_int: int, event: str) -> None:
    if not 0 <= random_int < RANDOM_BOUND:
        raise IllegalTransition("broker", event, f"random_int={random_int} is outside [0, {RANDOM_BOUND})")


def compute_max_reconsume_times(group: SubscriptionGroupConfig, header_max: int | None) -> int:
    """[SB-09] The header's maxReconsumeTimes (a client >= 3.4.9 always sends one) wins over retryMaxTimes."""
    return group.retry_max_times if header_max is None else header_max


def is_send_back_dead_letter(reconsume_times: int, max_reconsume_times: int, delay_level: int) -> bool:
    """[SB-04] The stored reconsumeTimes reached the maximum, or the client asked for the DLQ (level < 0)."""
    return reconsume_times >= max_reconsume_times or delay_level < 0


def compute_retry_delay_level(delay_level: int, reconsume_times: int) -> int:
    """[SB-12] Level 0 means "the broker decides": 3 + reconsumeTimes; a positive level is kept (the store clamps)."""
    return DEFAULT_RETRY_LEVEL_BASE + reconsume_times if delay_level == 0 else delay_level


def get_or_create_dlq_topic(broker: Broker, group: str, profile: Profile) -> tuple[Broker, TopicConfig]:
    """[SB-10] The DLQ topic has one queue and is created readable (4.9.2+) or write-only (<= 4.9.1)."""
    perm = PERM_WRITE | PERM_READ if profile.dlq_topic_readable else PERM_WRITE
    return get_or_create_topic(broker, get_dlq_topic(group), DLQ_NUMS_PER_GROUP, perm)


def compute_send_back_message(looked_up: Message, destination: MessageQueue, delay_level: int | None) -> Message:
    """[SB-13] The new message: body, flag, tags, born time and properties of the looked-up one, reconsumeTimes + 1.

    [SB-08] RETRY_TOPIC is set only if absent, so it names the original topic across every retry.
    `delay_level` None leaves the looked-up DELAY as it is (the DLQ branch before 4.9.2, SB-11).
    """
    changes = {PROPERTY_WAIT_STORE_MSG_OK: "false",
               PROPERTY_ORIGIN_MESSAGE_ID: compute_origin_message_id(looked_up, looked_up.msg_id)}
    if PROPERTY_RETRY_TOPIC not in looked_up.properties:
        changes[PROPERTY_RETRY_TOPIC] = looked_up.topic
    if delay_level is not None:
        changes[PROPERTY_DELAY_TIME_LEVEL] = str(delay_level)
    return new_tuple(Message, (destination.topic, looked_up.body, looked_up.tags, looked_up.properties.update(changes),
                               destination.queue_id, -1, -1, "", looked_up.reconsume_times + 1, looked_up.flag,
                               looked_up.born_timestamp, 0))


def refuse(broker: Broker, code: ResponseCode, remark: str, rules: tuple[str, ...]) -> tuple[Broker, SendBackResult]:
    return broker, SendBackResult(code, remark, None, rules)


def on_consumer_send_msg_back(broker: Broker, config: Config, request: SendBackRequest, now: int,
                              random_int: int) -> tuple[Broker, SendBackResult]:
    """[SB-01] Handle CONSUMER_SEND_MSG_BACK: refuse, drop, or store a retry or dead-letter copy (SB-01..SB-14).

    `random_int` is the broker's draw in [0, 99999999) that picks the retry queue.
    """
    check_random_int(random_int, "CONSUMER_SEND_MSG_BACK")
    group = broker.groups.get(request.group)
    if group is None:
        return refuse(broker, ResponseCode.SUBSCRIPTION_GROUP_NOT_EXIST,
                      f"subscription group not exist, {request.group}", ("SB-01",))
    if not is_writeable(broker.perm):
        return refuse(broker, ResponseCode.NO_PERMISSION, "the broker sending message is forbidden", ("SB-02",))
    if group.retry_queue_nums <= 0:
        return refuse(broker, ResponseCode.SUCCESS, "", ("SB-03",))
    retry_topic = get_retry_topic(request.group)
    retry_queue = new_tuple(MessageQueue, (retry_topic, random_int % group.retry_queue_nums))
    broker, topic_config = get_or_create_topic(broker, retry_topic, group.retry_queue_nums, PERM_WRITE | PERM_READ)
    rules = ("SB-05",)
    if not is_writeable(topic_config.perm):
        return refuse(broker, ResponseCode.NO_PERMISSION, f"the topic[{retry_topic}] sending message is forbidden",
                      (*rules, "SB-06"))
    looked_up = broker.store.look_message_by_offset(request.offset)
    if looked_up is None:
        return refuse(broker, ResponseCode.SYSTEM_ERROR, f"look message by offset failed, {request.offset}",
                      (*rules, "SB-07"))
    return process_send_back(broker, config, request, looked_up, retry_queue, now, rules)


def process_send_back(broker: Broker, config: Config, request: SendBackRequest, looked_up: Message,
                      retry_queue: MessageQueue, now: int, rules: tuple[str, ...]) -> tuple[Broker, SendBackResult]:
    """[SB-04] Route the looked-up message to the DLQ or to a delayed retry, then store the new copy (SB-14)."""
    group = broker.groups[request.group]
    max_times = compute_max_reconsume_times(group, request.max_reconsume_times)
    rules += ("SB-08", "SB-09")
    if is_send_back_dead_letter(looked_up.reconsume_times, max_times, request.delay_level):
        broker, _dlq = get_or_create_dlq_topic(broker, request.group, config.profile)
        destination = MessageQueue(get_dlq_topic(request.group), 0)
        # #2724: before 4.9.2 the DLQ copy keeps the last retry's DELAY and is parked in SCHEDULE_TOPIC_XXXX first.
        level = 0 if config.profile.dlq_clears_delay_level else None
        rules += ("SB-04", "SB-10", "SB-11")
    else:
        destination = retry_queue
        level = compute_retry_delay_level(request.delay_level, looked_up.reconsume_times)
        rules += ("SB-12",)
    message = compute_send_back_message(looked_up, destination, level)
    store, stored = put_message(broker.store, message, now, config.delay_levels)
    rules += ("SB-13", "SB-14")
    return evolve(broker, store=store), SendBackResult(RESPONSE_SUCCESS, "", stored, rules)
