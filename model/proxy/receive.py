"""ReceiveMessage (ReceiveMessageActivity, ConsumerProcessor.popMessage, spec/16-proxy.md): the proxy pops for a
gRPC consumer and filters what the broker answered before the consumer sees it."""

from __future__ import annotations

import enum
from typing import NamedTuple

from model.broker.pop.pop import PROPERTY_POP_CK, on_pop
from model.broker.pop.revive import PROPERTY_FIRST_POP_TIME
from model.broker.pop.state import PopBroker
from model.proxy.settings import DEFAULT_PROXY_CONFIG, ProxyConfig, compute_consumer_settings
from model.values.pop_wire import PopRequest, ReceiveRequest
from model.values.records import evolve

# A pop that answered without a message the consumer may see: the writer answers MESSAGE_NOT_FOUND.
FOUND_NOTHING = ("SUCCESS", "POLLING_TIMEOUT")



class FilterResult(enum.Enum):
    MATCH = "MATCH"
    NO_MATCH = "NO_MATCH"
    TO_DLQ = "TO_DLQ"


class FollowUp(NamedTuple):
    """A request the proxy sends after answering, without waiting for it: an ack ("ack") or a forward to the DLQ
    ("dlq") of a popped message, with its handle and message id. A proxy crash loses it (PD-03)."""

    kind: str
    group: str
    topic: str
    handle: object
    message_id: str


class ReceiveAnswer(NamedTuple):
    """The answer: its code, the messages the consumer sees (with their handles), the follow-ups the filter
    started, the messages the broker's tag filter passed over, and the rules taken."""

    code: str
    messages: tuple = ()
    handles: tuple = ()
    follow_ups: tuple = ()
    skipped: tuple = ()
    rules: tuple[str, ...] = ()


def get_invisible_time(request: ReceiveRequest, proxy: ProxyConfig) -> int | None:
    """[PD-01] The invisible time the proxy pops with: the proxy's default (60 s) for an auto-renewed receive,
    else the request's, which must lie in [minInvisibleTimeMillsForRecv, maxInvisibleTimeMills] (None: refused)."""
    if proxy.enable_proxy_auto_renew and request.auto_renew:
        return proxy.default_invisible_time_mills
    if not proxy.min_invisible_time_mills_for_recv <= request.invisible_time <= proxy.max_invisible_time_mills:
        return None
    return request.invisible_time


def filter_message(tags: frozenset | None, message, max_attempts: int) -> FilterResult:
    """[PD-02] PopMessageResultFilterImpl: a tag the subscription does not name is NO_MATCH, then reconsumeTimes
    >= maxAttempts is TO_DLQ, else MATCH (so a message that always fails is delivered maxAttempts times, PG-02)."""
    if tags and message.tags not in tags:
        return FilterResult.NO_MATCH
    if message.reconsume_times >= max_attempts:
        return FilterResult.TO_DLQ
    return FilterResult.MATCH


def compute_proxy_view(message, handle, pop_time: int, order_count: int):
    """LocalMessageService.popMessage: the handle with the commit-log offset as POP_CK, a FIFO message's queue
    attempt count as reconsumeTimes (when > 0, FF-03), and 1ST_POP_TIME set to the pop time when absent."""
    view = message.put_property(PROPERTY_POP_CK, handle.encode())
    if order_count > 0:
        view = evolve(view, reconsume_times=order_count)
    if PROPERTY_FIRST_POP_TIME not in view.properties:
        view = view.put_property(PROPERTY_FIRST_POP_TIME, pop_time)
    return view


def on_receive(state: PopBroker, request: ReceiveRequest, now: int, random_q: int,
               proxy: ProxyConfig = DEFAULT_PROXY_CONFIG) -> tuple[PopBroker, ReceiveAnswer]:
    """[PD-01] Pop every queue of the topic for the group (FIFO per the group), then sort each message by the
    filter (PD-02): the consumer gets the matches; the others become follow-ups — an ack, or a forward to the DLQ.
    What a gRPC consumer may rely on from it is PG-01, PG-02, PG-03 and PG-04."""
    invisible = get_invisible_time(request, proxy)
    if invisible is None:
        return state, ReceiveAnswer("ILLEGAL_INVISIBLE_TIME", rules=("PD-01",))
    settings = compute_consumer_settings(state, request.group)
    pop = PopRequest(request.group, request.topic, -1, min(request.batch_size, proxy.max_msg_nums_for_pop_request),
                     invisible, settings.fifo, request.attempt_id, request.tags)
    state, popped = on_pop(state, pop, now, random_q)
    messages, handles, follow_ups = [], [], []
    for message, handle, (_offset_count, queue_count) in zip(popped.messages, popped.handles, popped.order_counts,
                                                              strict=True):
        view = compute_proxy_view(message, handle, now, queue_count)
        verdict = filter_message(request.tags, view, settings.max_attempts)
        if verdict is FilterResult.MATCH:
            messages.append(view)
            handles.append(handle)
        else:
            kind = "ack" if verdict is FilterResult.NO_MATCH else "dlq"
            follow_ups.append(FollowUp(kind, request.group, request.topic, handle, view.uniq_key or view.msg_id))
    code = "SUCCESS" if messages else ("MESSAGE_NOT_FOUND" if popped.code in FOUND_NOTHING else popped.code)
    return state, ReceiveAnswer(code, tuple(messages), tuple(handles), tuple(follow_ups), popped.skipped,
                                popped.rules + ("PD-01", "PD-02"))
