"""The cluster state as the client half reads and writes it (spec/11-guarantees.md).

A client step is a transition of the cluster state: it takes the state and returns the next one, changing only the
fields below. The broker's state is not among them: a step reaches the broker only by exchanging a request of
model/values/wire.py with the state it was given (`exchange(cluster, request)`), which model/system routes to its
broker, through the network it models, and answers. So a client never depends on which broker answers, or on what
else the cluster holds: another kind of client (a POP consumer, model/client/pop_consumer.py) is one more set of
fields beside these.
"""

from __future__ import annotations

from typing import Any, Protocol

import immutables

from model.values.config import Config


class Cluster(Protocol):
    """The fields a client step reads and writes (model/system/state.py's `System` has them, and the broker)."""

    config: Config
    now: int
    # client id -> ConsumerInstance; the live members, sorted; the incarnations started so far.
    consumers: immutables.Map
    members: tuple[str, ...]
    incarnations: int
    # The clients' timer heap, keyed by (virtual ms, sequence), and the last sequence given.
    timers: Any
    timer_seq: int
    # Listener invocations in flight (request id -> ConsumeRequest) and resubmissions pending.
    requests: immutables.Map
    next_request_id: int
    pending_resubmits: int
    # Pulls the broker holds (long polling): (client, queue) -> the requested offset; and pulls held back by the
    # cache checks: (client, queue) -> (first check, incarnation, token).
    parked: immutables.Map
    flow_parked: immutables.Map
    # The subscription: the topic's queue count, its tag strings (None = "*") and their String.hashCode values.
    topic_queue_nums: int
    subscription: frozenset | None
    subscription_codes: frozenset
    # Instances whose lock requests currently fail before they reach the broker (LK-07).
    lock_faults: frozenset
    # The POP consumers (model/client/pop_consumer.py): client id -> PopConsumer, their listener invocations in
    # flight (request id -> PopConsumeRequest; ids from next_request_id), and those whose pop the broker holds.
    pop_consumers: immutables.Map
    pop_requests: immutables.Map
    pop_parked: frozenset
