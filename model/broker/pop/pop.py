"""POP_MESSAGE (PopMessageProcessor, spec/14-pop.md): read a queue from the group's offset, move the offset, and
store a checkpoint per queue that answered, so that the revive service brings back what is not acked."""

from __future__ import annotations

from typing import NamedTuple

from model.broker.consumer_offsets import commit_offset, query_offset
from model.broker.pop.config import MAX_POP_MSG_NUMS
from model.broker.pop.fifo import (
    compute_judged_order_info,
    compute_order_count,
    compute_pop_order_info,
    compute_queue_order_count,
    is_count_carried,
    is_order_blocked,
)
from model.broker.pop.state import Checkpoint, PopBroker, get_pop_group, put_checkpoint, set_broker, set_pop
from model.broker.pull_handler import get_broker_pull
from model.broker.state import is_readable
from model.values.message import MessageQueue, java_string_hash
from model.values.pop_names import get_pop_retry_topic, get_retry_flag
from model.values.pop_wire import POP_ORDER_REVIVE_QUEUE, Handle, PopRequest
from model.values.records import evolve

PROPERTY_POP_CK = "POP_CK"



class PopAnswer(NamedTuple):
    """The response: its code, the messages (each under its original topic, with POP_CK), their handles and their
    attempt counts (per message: the offset's and the queue's, FF-03; zeros for a pop that is not orderly) in the
    same order, the messages the tag filter passed over (PO-05), the rules the pop took, and the per-offset entries
    of orderCountInfo as the broker writes them: (retry flag, queue id, offset, count) for each count the queue's
    order info holds — of offsets the pop did not return when it repeated the attempt id (FF-06)."""

    code: str
    messages: tuple = ()
    handles: tuple = ()
    order_counts: tuple = ()
    skipped: tuple = ()
    rules: tuple[str, ...] = ()
    offset_counts: tuple = ()


def get_pop_refusal(state: PopBroker, request: PopRequest) -> str | None:
    """[PO-01] The checks before any read, in PopMessageProcessor's order; None when the pop goes on."""
    broker = state.broker
    if not is_readable(broker.perm):
        return "NO_PERMISSION"
    if request.max_msg_nums > MAX_POP_MSG_NUMS:
        return "INVALID_PARAMETER"
    topic = broker.topics.get(request.topic)
    if topic is None:
        return "TOPIC_NOT_EXIST"
    if not is_readable(topic.perm):
        return "NO_PERMISSION"
    if request.queue_id >= topic.read_queue_nums:
        return "INVALID_PARAMETER"
    if request.group not in broker.groups:
        return "SUBSCRIPTION_GROUP_NOT_EXIST"
    if not get_pop_group(state, request.group).consume_enable:
        return "NO_PERMISSION"
    return None


def get_retry_topics(state: PopBroker, request: PopRequest, random_q: int) -> tuple[bool, str]:
    """[PO-02] Whether this pop reads the retry topic first (random_q < popFromRetryProbability), and which retry
    topic it reads: v2 when enabled, but v1 on even draws while retrieveMessageFromPopRetryTopicV1 (IV-03)."""
    config = state.pop_config
    use_v1 = config.enable_retry_topic_v2 and config.retrieve_message_from_pop_retry_topic_v1 and random_q % 2 == 0
    v2 = config.enable_retry_topic_v2 and not use_v1
    return random_q < config.pop_from_retry_probability, get_pop_retry_topic(request.topic, request.group, v2)


def on_pop(state: PopBroker, request: PopRequest, now: int, random_q: int) -> tuple[PopBroker, PopAnswer]:
    """[PO-01] Handle POP_MESSAGE at time `now` (the pop time); `random_q` in [0, 100) is the broker's draw that
    picks retry-first (PO-02) and the first queue of an all-queue pop."""
    refusal = get_pop_refusal(state, request)
    if refusal is not None:
        return state, PopAnswer(refusal, rules=("PO-01",))
    retry_first, retry_topic = get_retry_topics(state, request, random_q)
    answer = PopAnswer("SUCCESS", rules=("PO-02",))
    if retry_first and not request.order:
        state, answer = process_pop_topic(state, request, retry_topic, now, random_q, answer)
    if request.queue_id < 0:
        state, answer = process_pop_topic(state, request, request.topic, now, random_q, answer)
    else:
        state, answer = process_pop_queue(state, request, MessageQueue(request.topic, request.queue_id), now, answer)
    if not retry_first and len(answer.messages) < request.max_msg_nums and not request.order:
        state, answer = process_pop_topic(state, request, retry_topic, now, random_q, answer)
    if not request.order:  # ckMessageNumber: only a pop that is not orderly draws a revive queue
        state = set_pop(state, ck_number=state.pop.ck_number + 1)
    return state, answer._replace(code="SUCCESS" if answer.messages else "POLLING_TIMEOUT")


def process_pop_topic(state: PopBroker, request: PopRequest, topic: str, now: int, random_q: int,
                      answer: PopAnswer) -> tuple[PopBroker, PopAnswer]:
    """popMsgFromTopic: every read queue of `topic` (none if it does not exist), from queue random_q % n on."""
    config = state.broker.topics.get(topic)
    for index in range(config.read_queue_nums if config else 0):
        queue = MessageQueue(topic, (random_q + index) % config.read_queue_nums)
        state, answer = process_pop_queue(state, request, queue, now, answer)
    return state, answer


def get_pop_offset(state: PopBroker, group: str, queue: MessageQueue) -> tuple[PopBroker, int]:
    """[PO-03] The group's committed offset; without one, 0 — a retry topic starts at its minimum and a normal
    topic whose first message is still in memory at 0 (initPopOffsetByCheckMsgInMem; the model's store keeps every
    message) — committed at once."""
    offset = query_offset(state.broker, group, queue.topic, queue.queue_id)
    if offset >= 0:
        return state, offset
    return set_broker(state, commit_offset(state.broker, group, queue.topic, queue.queue_id, 0)), 0


def process_pop_queue(state: PopBroker, request: PopRequest, queue: MessageQueue, now: int,
                      answer: PopAnswer) -> tuple[PopBroker, PopAnswer]:
    """[PO-03] popMsgFromQueue: read from the group's offset up to the messages still wanted, then record the pop:
    a checkpoint and the offset moved past what was read (PO-04), or for an orderly pop the order info (FF-02)."""
    state, offset = get_pop_offset(state, request.group, queue)
    wanted = request.max_msg_nums - len(answer.messages)
    if request.order:
        state, blocked = process_order_check(state, request, queue, now)
        if blocked:
            return state, answer._replace(rules=answer.rules + ("FF-01",))
    if wanted <= 0:
        return state, answer
    codes = None if request.tags is None else frozenset(map(java_string_hash, request.tags))  # a retry topic too
    status, found, next_offset = get_broker_pull(state.broker, queue, offset, 0, codes, wanted)
    skipped = tuple(message for message in iter_queue(state, queue, offset, next_offset)
                    if message.queue_offset not in {m.queue_offset for m in found})
    if not found:
        if next_offset > offset:  # addCkMock / the orderly commit: filtered messages are passed over
            state = set_broker(state, commit_offset(state.broker, request.group, *queue, next_offset))
            return state, answer._replace(skipped=answer.skipped + skipped, rules=answer.rules + ("PO-05",))
        return state, answer
    if request.order:
        return record_order_pop(state, request, queue, offset, found, now, answer, skipped)
    return record_checkpoint(state, request, queue, offset, next_offset, found, now, answer, skipped)


def process_order_check(state: PopBroker, request: PopRequest, queue: MessageQueue,
                        now: int) -> tuple[PopBroker, bool]:
    """[FF-01] checkBlock: whether the queue's order info blocks this orderly pop, and the order info as needBlock
    leaves it (with this pop's invisible time when it had none, whatever the verdict)."""
    key = (queue.topic, request.group, queue.queue_id)
    info = state.pop.order_infos.get(key)
    judged = compute_judged_order_info(info, request.attempt_id, request.invisible_time)
    if judged is not info:
        state = set_pop(state, order_infos=state.pop.order_infos.set(key, judged))
    return state, is_order_blocked(judged, request.attempt_id, now)


def iter_queue(state: PopBroker, queue: MessageQueue, start: int, stop: int):
    store = state.broker.store
    return (store.get_message(queue.topic, queue.queue_id, offset) for offset in range(start, stop))


def record_checkpoint(state: PopBroker, request: PopRequest, queue: MessageQueue, offset: int, next_offset: int,
                      found: list, now: int, answer: PopAnswer, skipped: tuple) -> tuple[PopBroker, PopAnswer]:
    """[PO-04] appendCheckPoint: one checkpoint (start offset, popped offsets, pop time, invisible time) written
    before the answer, and the group's offset committed to the next begin offset (buffer merge off)."""
    revive_queue_id = state.pop.ck_number % state.pop_config.revive_queue_num
    ck = Checkpoint(queue.topic, request.group, queue.queue_id, offset, now, request.invisible_time,
                    tuple(m.queue_offset for m in found), revive_queue_id)
    state = put_checkpoint(state, ck.key, ck)
    state = set_broker(state, commit_offset(state.broker, request.group, *queue, next_offset))
    handles = tuple(Handle(offset, now, request.invisible_time, revive_queue_id, get_retry_flag(queue.topic),
                           state.pop_config.broker_name, queue.queue_id, m.queue_offset, m.commit_log_offset)
                    for m in found)
    return state, add_popped(answer, request, found, handles, skipped, ("PO-03", "PO-04", "PO-06"))


def record_order_pop(state: PopBroker, request: PopRequest, queue: MessageQueue, offset: int, found: list,
                     now: int, answer: PopAnswer, skipped: tuple) -> tuple[PopBroker, PopAnswer]:
    """[FF-02] An orderly pop writes no checkpoint: it records the order info and commits the offset it started
    from, so nothing behind the popped messages is read until they are acked; the answer carries each offset's
    attempt count (FF-03), counts of other offsets when it repeated the attempt id (FF-06)."""
    key = (queue.topic, request.group, queue.queue_id)
    offsets, previous = tuple(m.queue_offset for m in found), state.pop.order_infos.get(key)
    info = compute_pop_order_info(previous, request.attempt_id, now, request.invisible_time, offsets)
    carried = ("FF-06",) if is_count_carried(previous, request.attempt_id, offsets) else ()
    state = set_pop(state, order_infos=state.pop.order_infos.set(key, info))
    state = set_broker(state, commit_offset(state.broker, request.group, *queue, offset))
    counts = tuple((compute_order_count(info, m.queue_offset), compute_queue_order_count(info)) for m in found)
    handles = tuple(Handle(offset, now, request.invisible_time, POP_ORDER_REVIVE_QUEUE, get_retry_flag(queue.topic),
                           state.pop_config.broker_name, queue.queue_id, m.queue_offset, m.commit_log_offset)
                    for m in found)
    answer = add_popped(answer, request, found, handles, skipped, ("FF-02", "FF-03", "PO-06") + carried)
    entries = tuple((get_retry_flag(queue.topic), queue.queue_id, o, c) for o, c in sorted(info.consumed.items()))
    return state, answer._replace(order_counts=answer.order_counts[:-len(counts)] + counts,
                                  offset_counts=answer.offset_counts + entries)


def add_popped(answer: PopAnswer, request: PopRequest, found: list, handles: tuple, skipped: tuple,
               rules: tuple[str, ...]) -> PopAnswer:
    """[PO-06] The answer gains the messages under the request's topic (a retry copy is recoded to its original
    topic), each with its handle as POP_CK."""
    views = tuple(evolve(m, topic=request.topic).put_property(PROPERTY_POP_CK, h.encode())
                  for m, h in zip(found, handles, strict=True))
    return answer._replace(messages=answer.messages + views, handles=answer.handles + handles,
                           order_counts=answer.order_counts + ((0, 0),) * len(views), skipped=answer.skipped + skipped,
                           rules=answer.rules + rules)
