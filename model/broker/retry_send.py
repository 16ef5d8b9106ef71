"""The broker's side of a producer send to %RETRY%<group>: handleRetryAndDLQ (spec/02-send-back.md, RS-01 to
RS-13).

Two client paths produce such a message instead of asking the broker with CONSUMER_SEND_MSG_BACK (their builders are
model/client/retry_message.py). The broker decides between the retry topic and the dead-letter queue from the
request header alone (SMP 4.9.8 L344-387; SMP 5.x L180-240).
"""

from __future__ import annotations

from model.broker.locks import is_lock_all_expired
from model.broker.send_back import check_random_int, compute_max_reconsume_times, get_or_create_dlq_topic
from model.broker.state import PERM_READ, PERM_WRITE, Broker, SubscriptionGroupConfig, get_or_create_topic, is_writeable
from model.broker.store import put_message
from model.values.config import Config
from model.values.errors import IllegalTransition
from model.values.message import (
    PROPERTY_DELAY_TIME_LEVEL,
    PROPERTY_WAIT_STORE_MSG_OK,
    RETRY_GROUP_TOPIC_PREFIX,
    Message,
    MessageQueue,
    get_dlq_topic,
    is_retry_topic,
    remove_property,
)
from model.values.profiles import Profile
from model.values.records import evolve
from model.values.wire import ResponseCode, SendResult

# 5.x handleRetryAndDLQ writes this DELAY into the request's properties so the DLQ copy is never parked.
DELAY_STORE_IMMEDIATELY = "-1"
SEND_EVENT = "SEND_MESSAGE"


def is_retry_send_dead_letter(profile: Profile, reconsume_times: int, max_reconsume_times: int,
                              group_locked: bool) -> bool:
    """[RS-03] 4.9 redirects to the DLQ iff reconsumeTimes >= max, 5.0.0+ iff reconsumeTimes > max;
    [RS-04] 5.1.1+ also whenever the group holds an unexpired queue lock (an orderly group)."""
    if profile.retry_send_dlq_when_group_locked and group_locked:
        return True
    if profile.retry_send_dlq_strictly_greater:
        return reconsume_times > max_reconsume_times
    return reconsume_times >= max_reconsume_times


def refuse(broker: Broker, code: ResponseCode, remark: str, rules: tuple[str, ...]) -> tuple[Broker, SendResult]:
    return broker, SendResult(code, remark, None, rules)


def on_send_retry_message(broker: Broker, config: Config, message: Message, reconsume_times: int | None,
                          max_reconsume_times: int | None, now: int, random_int: int) -> tuple[Broker, SendResult]:
    """[RS-01] A producer send to %RETRY%<group> is refused, stored as a delayed retry, or redirected to the DLQ.

    `reconsume_times` and `max_reconsume_times` are the request header (compute_send_header); `random_int` in
    [0, 99999999) stands for the producer's choice of queue.
    """
    check_random_int(random_int, SEND_EVENT)
    if not is_retry_topic(message.topic):
        raise IllegalTransition("broker", SEND_EVENT, f"{message.topic!r} is not a %RETRY% topic")
    group_name = message.topic[len(RETRY_GROUP_TOPIC_PREFIX):]
    group = broker.groups.get(group_name)
    if group is None:
        return refuse(broker, ResponseCode.SUBSCRIPTION_GROUP_NOT_EXIST,
                      f"subscription group not exist, {group_name}", ("RS-01",))
    # The consumer's heartbeat creates the retry topic this way (ClientManageProcessor 4.9.8 L95-99).
    broker, topic = get_or_create_topic(broker, message.topic, group.retry_queue_nums, PERM_WRITE | PERM_READ)
    rules = ("SB-05",)
    if not (is_writeable(broker.perm) and is_writeable(topic.perm)):
        return refuse(broker, ResponseCode.NO_PERMISSION, f"no writeable route to {message.topic}", (*rules, "RS-07"))
    if topic.write_queue_nums <= 0:
        return refuse(broker, ResponseCode.SYSTEM_ERROR, f"no route info of {message.topic}", (*rules, "RS-07"))
    queue = MessageQueue(message.topic, random_int % topic.write_queue_nums)
    header = (reconsume_times, max_reconsume_times)
    return process_retry_send(broker, config, message, group, queue, header, now, rules)


def on_broker_send_retry_message(broker: Broker, config: Config, message: Message, reconsume_times: int | None,
                                 max_reconsume_times: int | None, now: int) -> tuple[Broker, SendResult]:
    """[RS-07] A SEND_MESSAGE to %RETRY%<group> as the broker alone answers it, without the producer's route: 4.9.8's
    broker checks no permission (msgCheck refuses only ordered topics; handleRetryAndDLQ checks none), stores at the
    request's queue id and refuses only a queue id outside the topic's queues (SYSTEM_ERROR)."""
    group_name = message.topic[len(RETRY_GROUP_TOPIC_PREFIX):]
    group = broker.groups.get(group_name)
    if group is None:
        return refuse(broker, ResponseCode.SUBSCRIPTION_GROUP_NOT_EXIST,
                      f"subscription group not exist, {group_name}", ("RS-01",))
    broker, topic = get_or_create_topic(broker, message.topic, group.retry_queue_nums, PERM_WRITE | PERM_READ)
    if not 0 <= message.queue_id < max(topic.write_queue_nums, topic.read_queue_nums):
        return refuse(broker, ResponseCode.SYSTEM_ERROR, f"request queueId[{message.queue_id}] is illegal",
                      ("SB-05", "RS-07"))
    queue = MessageQueue(message.topic, message.queue_id)
    header = (reconsume_times, max_reconsume_times)
    return process_retry_send(broker, config, message, group, queue, header, now, ("SB-05",))


def on_send_message(broker: Broker, config: Config, message: Message, header: tuple[int | None, int | None],
                    now: int, random_int: int) -> tuple[Broker, SendResult]:
    """[RS-07] SEND_MESSAGE: a %RETRY% send is on_send_retry_message's; any other is the broker's msgCheck, which
    stores it where it was sent even on a read-only broker (only ordered topics are refused, and the model has
    none), unless the topic does not exist or the queue id is beyond its queues.

    `header` is the request's (reconsumeTimes, maxReconsumeTimes)."""
    if is_retry_topic(message.topic):
        return on_send_retry_message(broker, config, message, header[0], header[1], now, random_int)
    topic = broker.topics.get(message.topic)
    if topic is None:
        return refuse(broker, ResponseCode.TOPIC_NOT_EXIST, f"topic[{message.topic}] not exist", ("RS-07",))
    if message.queue_id >= max(topic.write_queue_nums, topic.read_queue_nums):
        return refuse(broker, ResponseCode.SYSTEM_ERROR, f"request queueId[{message.queue_id}] is illegal",
                      ("RS-07",))
    # The same SendMessageProcessor path as a %RETRY% send: WAIT left out of the stored string (RS-06's note).
    store, stored = put_message(broker.store, message, now, config.delay_levels,
                                stored_properties=remove_property(message.properties, PROPERTY_WAIT_STORE_MSG_OK))
    return evolve(broker, store=store), SendResult(ResponseCode.SUCCESS, "", stored, ("ST-06",))


def process_retry_send(broker: Broker, config: Config, message: Message, group: SubscriptionGroupConfig,
                       queue: MessageQueue, header: tuple[int | None, int | None], now: int,
                       rules: tuple[str, ...]) -> tuple[Broker, SendResult]:
    """[RS-02] handleRetryAndDLQ: the header's reconsumeTimes (0 if absent) is stored; DLQ per RS-03/RS-04."""
    reconsume_times = 0 if header[0] is None else header[0]
    max_times = compute_max_reconsume_times(group, header[1])
    group_locked = not is_lock_all_expired(broker, group.group_name, now)
    rules += ("RS-02", "SB-09", "RS-03")
    if is_retry_send_dead_letter(config.profile, reconsume_times, max_times, group_locked):
        broker, _dlq = get_or_create_dlq_topic(broker, group.group_name, config.profile)
        destination = MessageQueue(get_dlq_topic(group.group_name), 0)
        if config.profile.retry_send_dlq_stored_immediately:
            message = message.put_property(PROPERTY_DELAY_TIME_LEVEL, DELAY_STORE_IMMEDIATELY)
        # Otherwise (4.9) the DELAY=0 the broker sets is lost with the replaced property map: the client's
        # DELAY = 3 + r survives and the DLQ copy is parked in SCHEDULE_TOPIC_XXXX first.
        locked_rule = ("RS-04",) if group_locked and config.profile.retry_send_dlq_when_group_locked else ()
        rules += (*locked_rule, "RS-05", "SB-10")
    else:
        destination = queue
        rules += ("RS-06",)
    message = evolve(message, topic=destination.topic, queue_id=destination.queue_id,
                     reconsume_times=reconsume_times, born_timestamp=now)
    # A send's stored properties string leaves WAIT out (SMP 4.9.8 L303-L312); a parked message's string is
    # rebuilt from the map by the store, so it keeps WAIT (put_record ignores stored_properties for it).
    stored_properties = remove_property(message.properties, PROPERTY_WAIT_STORE_MSG_OK)
    store, stored = put_message(broker.store, message, now, config.delay_levels, stored_properties=stored_properties)
    return evolve(broker, store=store), SendResult(ResponseCode.SUCCESS, "", stored, rules)
