"""The requests a client sends the broker and the broker's answers, as values (RocketMQ's RemotingCommand codes and
headers, as far as the model needs them), and `exchange`, which hands a request to whatever answers it.

A client step never calls the broker half: it builds a request, exchanges it with its peer, and reads the answer.
The peer is the cluster state the client was given (model/system routes the request to its broker, through the
network it models) or, in a pure step taken alone, a bare `Broker` (model/broker/server.py answers it). Besides the
wire's own fields, an answer carries what the model observes and the wire hides (the message as stored, the rules).
"""

from __future__ import annotations

import enum
from collections.abc import Callable
from typing import NamedTuple

from model.values.config import Config, get_max_reconsume_times
from model.values.errors import IllegalTransition
from model.values.message import Message, MessageQueue, get_client_msg_id
from model.values.records import record

RANDOM_BOUND = 99_999_999  # ThreadLocalRandom.nextInt(99999999): the broker's draw is in [0, RANDOM_BOUND)


class ResponseCode(enum.Enum):
    """The RemotingCommand codes the broker answers with (ResponseCode.java values)."""

    SUCCESS = 0
    SYSTEM_ERROR = 1
    NO_PERMISSION = 16
    TOPIC_NOT_EXIST = 17
    SUBSCRIPTION_GROUP_NOT_EXIST = 26


# Read once: an enum member read through its class is a Python-level lookup on CPython 3.11 (EnumType.__getattr__).
RESPONSE_SUCCESS = ResponseCode.SUCCESS


class Context(NamedTuple):
    """What a bare broker cannot know of an exchange: the instant, the configuration both ends share, and the
    broker's random draw in [0, RANDOM_BOUND). A cluster answers with its own clock, configuration and draw.

    A named tuple: one is built per exchange that needs it (benchmarks/NOTES.md says why hot values are)."""

    config: Config | None = None
    now: int = 0
    random_int: int = 0


# The function that answers for each kind of peer, by the peer's type: model/broker/server.py enters Broker's,
# model/system/route.py System's. A dict read per exchange (functools.singledispatch would add a weak-key lookup).
ANSWERERS: dict[type, Callable] = {}


def answers_for(peer_type: type) -> Callable[[Callable], Callable]:
    """Enter the decorated function as the one that answers requests sent to a peer of `peer_type`."""
    def enter(answerer: Callable) -> Callable:
        ANSWERERS[peer_type] = answerer
        return answerer
    return enter


def exchange(peer, request, context: Context | None = None) -> tuple[object, object]:
    """Send `request` to `peer` and wait for the answer: (the peer after it answered, the answer)."""
    answerer = ANSWERERS.get(type(peer))
    if answerer is None:
        raise IllegalTransition(type(peer).__name__, type(request).__name__, "nothing answers requests for this peer")
    return answerer(peer, request, context)


# PULL_MESSAGE


@record
class PullMessage:
    """PULL_MESSAGE of one queue from `offset`: `codes` are the subscription's tags hash codes the broker filters
    by (None: every message), `batch_size` the header's maxMsgNums (pullBatchSize)."""

    group: str
    queue: MessageQueue
    offset: int
    codes: frozenset | None
    batch_size: int


@record
class PullResult:
    """The answer to a pull: FOUND, NO_NEW_MSG, NO_MATCHED_MSG or OFFSET_ILLEGAL, the messages, nextBeginOffset."""

    status: str
    messages: list
    next_begin_offset: int


# Consumer offsets: UPDATE_CONSUMER_OFFSET, QUERY_CONSUMER_OFFSET, GET_MAX_OFFSET; the route


@record
class UpdateConsumerOffset:
    """UPDATE_CONSUMER_OFFSET of one queue. `oneway`: sent one-way by a persist, so the network may hold it; a
    commit riding a pull (PL-07), or a held one arriving, is not held. `lifetime` (the model's, not the wire's):
    the sending instance's incarnation and the queue's ProcessQueue generation."""

    client_id: str
    group: str
    queue: MessageQueue
    offset: int
    lifetime: tuple[int, int] = (0, 0)
    oneway: bool = False


@record
class CommitResult:
    """The answer to an offset commit: the offset the broker held before it (-1: none), or None when the network
    holds the commit (it has not arrived)."""

    previous: int | None


@record
class QueryConsumerOffset:
    """QUERY_CONSUMER_OFFSET: the group's committed offset of a queue."""

    group: str
    queue: MessageQueue


@record
class GetMaxOffset:
    """GET_MAX_OFFSET: the queue's max offset (where its next message will be stored)."""

    queue: MessageQueue


@record
class OffsetResult:
    """The answer to an offset query: the offset, or None (QUERY_NOT_FOUND)."""

    offset: int | None


@record
class GetRoute:
    """The topic's route (GET_ROUTEINFO_BY_TOPIC, asked of the name server): how many queues it can be read from."""

    topic: str


@record
class RouteResult:
    """The route's read queue count (0: no route)."""

    read_queue_nums: int


# CONSUMER_SEND_MSG_BACK and SEND_MESSAGE


@record
class SendBackRequest:
    """ConsumerSendMsgBackRequestHeader. `offset` is the commit-log offset of the consumed message;
    `max_reconsume_times` is None for a client older than 3.4.9 (the broker then ignores the field)."""

    group: str
    origin_topic: str
    offset: int
    delay_level: int
    origin_msg_id: str
    max_reconsume_times: int | None


def compute_send_back_request(message: Message, group: str, config: Config, delay_level: int) -> SendBackRequest:
    """The header MQClientAPIImpl.consumerSendMessageBack builds for a consumed message: maxReconsumeTimes is the
    consumer's getMaxReconsumeTimes(); a client older than 3.4.9 sends none [SB-09]."""
    max_times = get_max_reconsume_times(config) if config.client_version_at_least_3_4_9 else None
    return SendBackRequest(group, message.topic, message.commit_log_offset, delay_level,
                           get_client_msg_id(message), max_times)


@record
class SendBackResult:
    """The response to a send-back: its code and remark, the message as stored (None when nothing was stored), the
    rules taken."""

    code: ResponseCode
    remark: str
    stored: Message | None
    rules: tuple[str, ...]


@record
class SendMessage:
    """SEND_MESSAGE of `message`, with the header's reconsumeTimes and maxReconsumeTimes (None when absent)."""

    message: Message
    reconsume_times: int | None
    max_reconsume_times: int | None


@record
class SendResult:
    """The broker's answer to a producer send: code, remark, the message as stored (or None), the rules taken."""

    code: ResponseCode
    remark: str
    stored: Message | None
    rules: tuple[str, ...]


# LOCK_BATCH_MQ and UNLOCK_BATCH_MQ


@record
class LockBatchRequest:
    """LOCK_BATCH_MQ: lease these queues of the group to the client."""

    group: str
    client_id: str
    queues: tuple[MessageQueue, ...]


@record
class LockBatchResult:
    """The queues the broker leased to the caller."""

    granted: frozenset


@record
class UnlockBatchRequest:
    """UNLOCK_BATCH_MQ: give the client's leases on these queues back (the answer is None)."""

    group: str
    client_id: str
    queues: tuple[MessageQueue, ...]
