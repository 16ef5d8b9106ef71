"""The two client-side builders of a message sent to %RETRY%<group> (spec/02-send-back.md): the concurrently
consumer's fallback when CONSUMER_SEND_MSG_BACK fails (DMPCI.sendMessageBack, §1.5) and the orderly consumer giving
up on a message (CMOS.sendMessageBack, §3). The broker's handling is model/broker/retry_send.py."""

from __future__ import annotations

from collections.abc import Mapping

from model.values.config import Config, get_max_reconsume_times
from model.values.delay_levels import DEFAULT_RETRY_LEVEL_BASE
from model.values.message import (
    PROPERTY_DELAY_TIME_LEVEL,
    PROPERTY_MAX_RECONSUME_TIMES,
    PROPERTY_ORIGIN_MESSAGE_ID,
    PROPERTY_RECONSUME_TIME,
    PROPERTY_RETRY_TOPIC,
    Message,
    compute_origin_message_id,
    get_client_msg_id,
    get_retry_topic,
    remove_property,
)
from model.values.records import evolve

PROPERTY_TRANSACTION_PREPARED = "TRAN_MSG"


def compute_send_header(message: Message, config: Config) -> tuple[Message, int | None, int | None]:
    """[RS-11] The producer copies RECONSUME_TIME and MAX_RECONSUME_TIMES of a %RETRY% message into the header.

    Returns the message as its first attempt sends it — the properties were encoded before the producer cleared
    the two from the message, so they still carry both — and the header values (None when absent; the max is also
    None for a client older than 3.4.9, whose header the broker ignores).
    """
    reconsume = message.get_property(PROPERTY_RECONSUME_TIME)
    max_times = message.get_property(PROPERTY_MAX_RECONSUME_TIMES)
    max_header = int(max_times) if max_times is not None and config.client_version_at_least_3_4_9 else None
    return message, None if reconsume is None else int(reconsume), max_header


def compute_producer_retry(message: Message) -> tuple[Message, int, None]:
    """[RS-14] The producer's retry of a refused %RETRY% send carries neither RECONSUME_TIME nor
    MAX_RECONSUME_TIMES: the first attempt cleared both from the message, so the header says reconsumeTimes 0 and
    no maximum (the group's retryMaxTimes applies).

    Returns the message the retry sends and its header values.
    """
    properties = remove_property(remove_property(message.properties, PROPERTY_RECONSUME_TIME),
                                 PROPERTY_MAX_RECONSUME_TIMES)
    return evolve(message, properties=properties), 0, None


def compute_retry_properties(msg: Message, reconsume_time: int, max_times: int, keeps_origin: bool) -> Mapping:
    """The properties both client builders give the new message; DELAY is always 3 + reconsumeTimes.

    `keeps_origin` False is the property-order bug (#4050, #9481): the whole map is replaced after
    ORIGIN_MESSAGE_ID was set, so only an ORIGIN_MESSAGE_ID the consumed message already had survives.
    """
    properties = msg.properties
    if keeps_origin:
        properties = properties.set(PROPERTY_ORIGIN_MESSAGE_ID, compute_origin_message_id(msg, get_client_msg_id(msg)))
    return remove_property(properties.update({
        PROPERTY_RETRY_TOPIC: msg.topic,
        PROPERTY_RECONSUME_TIME: str(reconsume_time),
        PROPERTY_MAX_RECONSUME_TIMES: str(max_times),
        PROPERTY_DELAY_TIME_LEVEL: str(DEFAULT_RETRY_LEVEL_BASE + msg.reconsume_times),
    }), PROPERTY_TRANSACTION_PREPARED)


def build_retry_message(msg: Message, group: str, config: Config, reconsume_time: int,
                        keeps_origin: bool) -> tuple[Message, int | None, int | None]:
    properties = compute_retry_properties(msg, reconsume_time, get_max_reconsume_times(config), keeps_origin)
    message = Message(topic=get_retry_topic(group), body=msg.body, tags=msg.tags, properties=properties,
                      flag=msg.flag)
    return compute_send_header(message, config)


def compute_fallback_retry_message(msg: Message, group: str, config: Config) -> tuple[Message, int | None, int | None]:
    """[RS-08] The concurrently client's fallback when CONSUMER_SEND_MSG_BACK fails: RECONSUME_TIME r + 1, DELAY 3 + r.

    `msg` is the message as the listener saw it (topic already reset to the original topic). The requested delay
    level is not an input: the fallback ignores it, -1 included (#3731). [RS-09] A first failure's
    ORIGIN_MESSAGE_ID is lost unless `profile.fallback_keeps_origin_message_id` (#9481, develop only).
    Returns (message to send, header reconsumeTimes, header maxReconsumeTimes).
    """
    keeps_origin = config.profile.fallback_keeps_origin_message_id
    return build_retry_message(msg, group, config, msg.reconsume_times + 1, keeps_origin)


def compute_orderly_retry_message(msg: Message, group: str, config: Config) -> tuple[Message, int | None, int | None]:
    """[RS-10] The orderly client's give-up send: RECONSUME_TIME r (<= 5.1.0) or r + 1 (5.1.1+), DELAY 3 + r.

    ORIGIN_MESSAGE_ID of a first failure survives only with `profile.orderly_send_keeps_origin_message_id` (#4050).
    [RS-12] Sent for r = max, it reaches the DLQ except under 5.0.0-5.1.0, where the broker wants r > max (#6163).
    Returns (message to send, header reconsumeTimes, header maxReconsumeTimes).
    """
    profile = config.profile
    reconsume_time = msg.reconsume_times + (1 if profile.orderly_send_reconsume_time_plus_one else 0)
    return build_retry_message(msg, group, config, reconsume_time, profile.orderly_send_keeps_origin_message_id)
