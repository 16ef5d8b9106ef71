"""The requests a differential example is made of, as values, and the Hypothesis strategy that draws a sequence.

A step names the example's topic and groups by role (``q0``: retryQueueNums 0; ``q1``: 1 retry queue and
retryMaxTimes 2; ``q3``: 3 retry queues and retryMaxTimes 16; ``unknown``: a group no backend knows), so the same
sequence runs on both backends under fresh names (:class:`differential.example.Names`).
"""

from __future__ import annotations

import attrs
from hypothesis import strategies as st

QUEUES = 2  # queues of the example's topic
GROUPS = ("q0", "q1", "q3", "unknown")
# Roles -> (retryMaxTimes, retryQueueNums); `unknown` is never created.
GROUP_SETTINGS = {"q0": (16, 0), "q1": (2, 1), "q3": (16, 3)}
LEVELS = 18  # the differential delay table: 18 levels of 1 s, so that 3 + reconsumeTimes and the clamp are RocketMQ's


@attrs.frozen
class Send:
    queue_id: int
    delay: int | None  # DELAY property
    reconsume_times: int | None  # header field
    max_reconsume_times: int | None  # header field


@attrs.frozen
class SendRetry:
    """A producer send straight to %RETRY%<group> (RS rules), as the client's fallback builds it."""

    group: str
    reconsume_times: int
    max_reconsume_times: int | None
    delay: int | None


@attrs.frozen
class SendBack:
    message: int  # index into the messages the example stored; -1: an offset where nothing is stored
    group: str
    delay_level: int
    max_reconsume_times: int | None
    origin_msg_id: str  # "none" | "own" | "bogus"


@attrs.frozen
class Pull:
    topic: str  # "topic" | "retry:<group>" | "dlq:<group>"
    queue_id: int
    offset: int


@attrs.frozen
class QueryOffset:
    group: str
    queue_id: int


@attrs.frozen
class UpdateOffset:
    group: str
    queue_id: int
    offset: int


@attrs.frozen
class Lock:
    group: str
    client: str
    queue_ids: tuple[int, ...]
    unlock: bool


@attrs.frozen
class QueueOffsets:
    topic: str
    queue_id: int


@attrs.frozen
class Permission:
    """brokerPermission for the following steps (4 read-only, 2 write-only, 6 both); restored to 6 afterwards."""

    perm: int


Step = Send | SendRetry | SendBack | Pull | QueryOffset | UpdateOffset | Lock | QueueOffsets | Permission

groups = st.sampled_from(GROUPS)
created_groups = st.sampled_from(("q0", "q1", "q3"))
queue_ids = st.integers(0, QUEUES - 1)
delays = st.one_of(st.none(), st.sampled_from((0, 1, 2, LEVELS, LEVELS + 1, 40)))
topics = st.one_of(st.just("topic"), st.builds("retry:{}".format, created_groups), st.builds("dlq:{}".format, groups))

sends = st.builds(Send, queue_ids, delays, st.one_of(st.none(), st.integers(0, 4)),
                  st.one_of(st.none(), st.integers(0, 3)))
send_retries = st.builds(SendRetry, groups, st.integers(0, 4), st.one_of(st.none(), st.integers(0, 3)),
                         st.one_of(st.none(), st.sampled_from((1, 3, 4))))
send_backs = st.builds(
    SendBack, st.integers(-1, 5), groups, st.sampled_from((-2, -1, 0, 1, 2, LEVELS, LEVELS + 1, 40)),
    st.one_of(st.none(), st.integers(0, 4), st.just(16)), st.sampled_from(("none", "own", "bogus")))
steps = st.one_of(
    sends, sends, send_backs, send_backs, send_backs, send_retries,
    st.builds(Pull, topics, queue_ids, st.sampled_from((0, 1, 5))),
    st.builds(QueryOffset, groups, queue_ids),
    st.builds(UpdateOffset, groups, queue_ids, st.sampled_from((0, 1, 3, 2, 100))),
    st.builds(Lock, groups, st.sampled_from(("c1", "c2")), st.lists(queue_ids, min_size=1, max_size=2, unique=True)
              .map(tuple), st.booleans()),
    st.builds(QueueOffsets, topics, queue_ids),
    st.builds(Permission, st.sampled_from((4, 2, 6))),
)
sequences = st.lists(steps, min_size=1, max_size=12)
