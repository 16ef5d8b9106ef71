"""The client's per-queue message cache, `ProcessQueue`, as an immutable value (spec/05-process-queue.md).

Every function takes a `ProcessQueue` and returns a new one; the cached messages live in persistent sorted maps,
so an event costs O(k log n) for k messages touched, whatever the number n of messages cached.
"""

from __future__ import annotations

from collections.abc import Iterable

from attrs import field

from model.values.errors import IllegalTransition
from model.values.message import PROPERTY_CONSUME_START_TIMESTAMP, Message
from model.values.outcome import Outcome
from model.values.records import evolve, record
from model.values.sorted_map import EMPTY, SortedMap

REBALANCE_LOCK_MAX_LIVE_TIME = 30_000
REBALANCE_LOCK_INTERVAL = 20_000
PULL_MAX_IDLE_TIME = 120_000
CLEAN_EXPIRED_MAX_LOOKS = 16
MIB = 1024 * 1024


@record  # copied several times per event: model.values.records.evolve copies its __dict__
class ProcessQueue:
    """[PQ-01] The cache of one message queue: `msg_tree_map` (queue offset → message) and, for an orderly
    consumer, `consuming_msg_orderly_tree_map` (taken but not yet committed), with RocketMQ's counters and flags.

    `msg_count` and `msg_size` are counters kept beside the maps, as in Java, not derived from them.
    """

    msg_tree_map: SortedMap = field(default=EMPTY, repr=False)
    consuming_msg_orderly_tree_map: SortedMap = field(default=EMPTY, repr=False)
    msg_count: int = 0
    msg_size: int = 0
    queue_offset_max: int = 0
    consuming: bool = False
    dropped: bool = False
    locked: bool = False
    last_lock_timestamp: int = 0
    last_pull_timestamp: int = 0
    last_consume_timestamp: int = 0


def create_process_queue(now: int = 0) -> ProcessQueue:
    """A new, empty, unlocked queue whose timestamps are `now` (Java initialises them to the creation time)."""
    return ProcessQueue(last_lock_timestamp=now, last_pull_timestamp=now, last_consume_timestamp=now)


def put_message(pq: ProcessQueue, msgs: Iterable[Message]) -> Outcome:
    """[PQ-01] Cache pulled messages by queue offset; returns (pq, dispatch_to_consume).

    Only offsets not yet in the tree are counted (count + 1, size + body length) [PQ-01]; a duplicate replaces
    the cached object silently. `queue_offset_max` becomes the offset of the last *newly inserted* message, not
    the maximum [PQ-02]. The caller must dispatch iff the tree is non-empty and the queue was not already
    consuming, which sets `consuming` [PQ-03].
    """
    msgs = tuple(msgs)
    tree, added, size, offset_max = pq.msg_tree_map, 0, pq.msg_size, pq.queue_offset_max
    highest, seen = (tree.last_key() if tree else None), set()
    for msg in msgs:
        offset = msg.queue_offset
        if offset not in seen and (highest is None or offset > highest or offset not in tree):
            seen.add(offset)
            added += 1
            offset_max = offset
            size += len(msg.body)
    # One run: a pulled batch copies each tree node it lands in once, not once per message.
    tree = tree.update([(msg.queue_offset, msg) for msg in msgs])
    dispatch = bool(tree) and not pq.consuming
    pq = evolve(pq, msg_tree_map=tree, msg_count=pq.msg_count + added, msg_size=size,
                queue_offset_max=offset_max, consuming=pq.consuming or dispatch)
    return Outcome(pq, dispatch, ("PQ-01", "PQ-02", "PQ-03"))


def remove_message(pq: ProcessQueue, msgs: Iterable[Message], now: int) -> Outcome:
    """[PQ-04] Drop consumed messages; returns (pq, offset): -1 if the tree was empty on entry,
    `queue_offset_max + 1` if this call emptied it, else the smallest offset still cached."""
    return Outcome(*compute_removal(pq, msgs, now), ("PQ-04",))


def compute_removal(pq: ProcessQueue, msgs: Iterable[Message], now: int) -> tuple[ProcessQueue, int]:
    """[PQ-04] remove_message as a plain (pq, offset) pair, for the consume path that runs it at every completion
    (an Outcome costs a Python-level constructor and an instance dict)."""
    tree, count, size = pq.msg_tree_map, pq.msg_count, pq.msg_size
    if not tree.size:
        return evolve(pq, last_consume_timestamp=now), -1
    for msg in msgs:
        smaller = tree.discard(msg.queue_offset)
        if smaller is not tree:
            count -= 1
            # Java subtracts the body of the message passed in, not of the cached one.
            size -= len(msg.body)
        tree = smaller
    if count == 0:
        size = 0
    offset = tree.first_key() if tree.size else pq.queue_offset_max + 1
    return evolve(pq, msg_tree_map=tree, msg_count=count, msg_size=size, last_consume_timestamp=now), offset


def get_max_span(pq: ProcessQueue) -> int:
    """[PQ-05] The offset span of the cached messages: last key − first key, 0 when nothing is cached."""
    tree = pq.msg_tree_map
    return tree.last_key() - tree.first_key() if tree else 0


def contains_message(pq: ProcessQueue, msg: Message | None) -> bool:
    """[PQ-10] 5.x `containsMessage`: is the message's offset still in the tree (a taken orderly message is not)."""
    return msg is not None and msg.queue_offset in pq.msg_tree_map


def get_cached_msg_size_in_mib(pq: ProcessQueue) -> int:
    """[PQ-13] fillProcessQueueInfo's cachedMsgSizeInMiB: the size counter in whole MiB, rounded down."""
    return pq.msg_size // MIB


def take_messages(pq: ProcessQueue, n: int, now: int | None = None) -> Outcome:
    """[PQ-06] Orderly: move the up-to-n lowest cached messages into the consuming map; returns
    (pq, messages). Taking none clears `consuming`. `now`, if given, is recorded as the last consume time."""
    taken, tree = pq.msg_tree_map.pop_lowest(n)
    consuming_map = pq.consuming_msg_orderly_tree_map.update(taken)
    pq = evolve(pq, msg_tree_map=tree, consuming_msg_orderly_tree_map=consuming_map,
                consuming=pq.consuming and bool(taken),
                last_consume_timestamp=pq.last_consume_timestamp if now is None else now)
    return Outcome(pq, tuple(msg for _, msg in taken), ("PQ-06",))


def commit(pq: ProcessQueue) -> Outcome:
    """[PQ-07] Orderly: forget the consuming map; returns (pq, last consuming offset + 1).

    The count drops by the map's size (size reset to 0 when the count reaches 0). Committing an empty consuming
    map is illegal: Java's `lastKey()` throws NoSuchElementException there.
    """
    consuming_map = pq.consuming_msg_orderly_tree_map
    if not consuming_map:
        reason = "nothing was taken (Java throws NoSuchElementException)"
        raise IllegalTransition("consuming map empty", "commit", reason)
    count = pq.msg_count - len(consuming_map)
    size = 0 if count == 0 else pq.msg_size - sum(len(msg.body) for msg in consuming_map.values())
    pq = evolve(pq, consuming_msg_orderly_tree_map=EMPTY, msg_count=count, msg_size=size)
    return Outcome(pq, consuming_map.last_key() + 1, ("PQ-07",))


def rollback(pq: ProcessQueue) -> ProcessQueue:
    """[PQ-08] Orderly: put every taken message back into the tree; count and size are unchanged."""
    tree = pq.msg_tree_map.update(pq.consuming_msg_orderly_tree_map.items())
    return evolve(pq, msg_tree_map=tree, consuming_msg_orderly_tree_map=EMPTY)


def make_message_to_consume_again(pq: ProcessQueue, msgs: Iterable[Message]) -> ProcessQueue:
    """[PQ-09] Orderly: move the given messages from the consuming map back into the tree (each is put into the
    tree even if it was not being consumed); count and size are unchanged."""
    tree, consuming_map = pq.msg_tree_map, pq.consuming_msg_orderly_tree_map
    for msg in msgs:
        consuming_map = consuming_map.discard(msg.queue_offset)
        tree = tree.set(msg.queue_offset, msg)
    return evolve(pq, msg_tree_map=tree, consuming_msg_orderly_tree_map=consuming_map)


def is_lock_expired(pq: ProcessQueue, now: int) -> bool:
    """[PQ-11] The client-side lock is stale when more than 30 000 ms passed since it was last renewed."""
    return now - pq.last_lock_timestamp > REBALANCE_LOCK_MAX_LIVE_TIME


def is_pull_expired(pq: ProcessQueue, now: int) -> bool:
    """[PQ-11] The queue is idle when more than 120 000 ms passed since its last pull."""
    return now - pq.last_pull_timestamp > PULL_MAX_IDLE_TIME


def is_consume_expired(msg: Message, now: int, consume_timeout_minutes: int) -> bool:
    """[PQ-12] Expired iff CONSUME_START_TIME is set and more than consumeTimeout minutes (strict) ago."""
    start = msg.get_property(PROPERTY_CONSUME_START_TIMESTAMP)
    return bool(start) and now - int(start) > consume_timeout_minutes * 60_000


def get_expired_head_messages(pq: ProcessQueue, now: int, consume_timeout_minutes: int, *,
                              orderly: bool = False) -> tuple[Message, ...]:
    """[PQ-12] The messages one cleanExpiredMsg run sends back (delay level 3) and removes: the expired messages
    at the head of the tree, at most min(cached, 16), stopping at the first one not expired; none when orderly.

    This assumes every send-back succeeds; RocketMQ keeps a message whose send-back threw and spends the next
    of its 16 looks on that same head again.
    """
    if orderly:
        return ()
    expired: list[Message] = []
    for msg in pq.msg_tree_map.values():
        if len(expired) == CLEAN_EXPIRED_MAX_LOOKS or not is_consume_expired(msg, now, consume_timeout_minutes):
            break
        expired.append(msg)
    return tuple(expired)
