"""The requests a POP differential example is made of (RocketMQ 5.x server-side retry), as values, and the
Hypothesis strategy that draws a sequence of them (differential/test_pop_backends_agree.py).

A step names groups by role, so that the same sequence runs on both backends under fresh names
(differential/pop_example.py): ``g16`` retryMaxTimes 16 and the default retry policy, ``g1`` retryMaxTimes 1 and a
customized policy, ``gx`` retryMaxTimes 2 and an exponential one, ``fifo`` an orderly group with retryMaxTimes 1 (it
consumes the FIFO topic). Both topics have one queue, and the example sets the broker's popFromRetryProbability to
0, so that what a pop or a receive returns is decided, not drawn (PO-02's draw is the one thing left out). A step
that names a message (`ref`) takes the ref-th message delivered so far to its group (modulo their number), and
`version` 0 its first handle or -1 its newest (a changed handle replaces none: both stay usable, PO-09). A sequence
is a few sends, then two or three rounds: a delivery (POP, orderly POP or receive), up to three requests of the same
group, and a wait across the revive of whatever was left invisible for a short time.
"""

from __future__ import annotations

import attrs
from hypothesis import strategies as st

GROUPS = ("g16", "g1", "gx")
FIFO_GROUP = "fifo"
# Roles -> (retryMaxTimes, groupRetryPolicy as UPDATE_AND_CREATE_SUBSCRIPTIONGROUP's JSON, orderly).
GROUP_SETTINGS = {
    "g16": (16, None, False),
    "g1": (1, {"type": "CUSTOMIZED", "customizedRetryPolicy": {"next": [1000, 2000, 3000]}}, False),
    "gx": (2, {"type": "EXPONENTIAL", "exponentialRetryPolicy": {"initial": 2000, "max": 60000, "multiplier": 3}},
           False),
    "fifo": (1, None, True),
}
SHORT_MS, LONG_MS = 1_000, 60_000  # invisible times: one that a wait outlives, one that no example does
TAGS = ("a", "b")


@attrs.frozen
class Send:
    fifo: bool  # the FIFO topic, else the normal one
    tag: str


@attrs.frozen
class Pop:
    """POP_MESSAGE over remoting (never orderly: see PopOrder)."""

    group: str
    max_nums: int
    invisible_ms: int
    exp: str  # "*" or a tag


@attrs.frozen
class PopOrder:
    """An orderly POP_MESSAGE of the FIFO topic's queue by the FIFO group, with an attempt id."""

    max_nums: int
    invisible_ms: int
    attempt: str


@attrs.frozen
class Ack:
    group: str
    ref: int
    version: int


@attrs.frozen
class Change:
    group: str
    ref: int
    version: int
    invisible_ms: int


@attrs.frozen
class Receive:
    """ReceiveMessage over gRPC: the normal topic, or (group "fifo") the FIFO one."""

    group: str
    batch: int
    invisible_ms: int
    exp: str


@attrs.frozen
class GrpcAck:
    group: str
    ref: int
    version: int


@attrs.frozen
class GrpcChange:
    group: str
    ref: int
    version: int
    invisible_ms: int


@attrs.frozen
class Forward:
    group: str
    ref: int


@attrs.frozen
class QueryOffset:
    group: str
    fifo: bool


@attrs.frozen
class Settings:
    """A gRPC consumer's telemetry settings for the group (RP-03)."""

    group: str


@attrs.frozen
class Wait:
    """Time passes until every short invisible time so far has run out and each backend's revive is done (bounded
    by the revive service's own intervals, differential/pop_probe.py); then the retry and DLQ topics are read."""


Step = Send | Pop | PopOrder | Ack | Change | Receive | GrpcAck | GrpcChange | Forward | QueryOffset | Settings | Wait

groups = st.sampled_from(GROUPS)
all_groups = st.sampled_from((*GROUPS, FIFO_GROUP))
invisible = st.sampled_from((SHORT_MS, SHORT_MS, LONG_MS))
refs, versions = st.integers(0, 3), st.sampled_from((0, -1, -1))
exps = st.sampled_from(("*", "*", "a"))

deliveries = st.one_of(st.builds(Pop, groups, st.integers(1, 3), invisible, exps),
                       st.builds(PopOrder, st.integers(1, 2), invisible, st.sampled_from(("a1", "a2"))),
                       st.builds(Receive, all_groups, st.integers(1, 3), invisible, exps))


def get_group(delivery: Pop | PopOrder | Receive) -> str:
    return FIFO_GROUP if isinstance(delivery, PopOrder) else delivery.group


def get_follow_ups(group: str) -> st.SearchStrategy:
    """The requests a consumer of `group` sends after a delivery: acks, changes, a forward, a read, or a send."""
    same = st.just(group)
    choices = [st.builds(Ack, same, refs, versions), st.builds(GrpcAck, same, refs, versions),
               st.builds(GrpcChange, same, refs, versions, invisible), st.builds(QueryOffset, same, st.booleans()),
               st.builds(Settings, same), st.builds(Send, st.booleans(), st.sampled_from(TAGS))]
    if group != FIFO_GROUP:
        choices += [st.builds(Change, same, refs, versions, invisible), st.builds(Forward, same, refs)]
    return st.one_of(choices)


# A round: a delivery and up to three requests of its group, then time passes across the revive of what they left
# invisible for a short time.
rounds = deliveries.flatmap(lambda first: st.lists(get_follow_ups(get_group(first)), max_size=3).map(
    lambda more: [first, *more, Wait()]))
sends = st.lists(st.builds(Send, st.booleans(), st.sampled_from(TAGS)), min_size=1, max_size=3)
# A few messages first, so that most steps find something to pop, receive, ack or change; then two or three rounds
# (the last Wait is the final read every sequence ends with).
sequences = st.builds(lambda first, later: first + [step for round_ in later for step in round_][:-1], sends,
                      st.lists(rounds, min_size=2, max_size=3))
