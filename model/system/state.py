"""The state of the whole modelled cluster — one broker, one consumer group of push-consumer instances, POP consumers
of other groups (5.x), the virtual clock and its timers (spec/11-guarantees.md).

`System` is a value. `model.system.step.step(system, event)` returns the next value and the observations. Timed
behaviour (pull loops, 5 s resubmissions, offset persistence, cleanExpiredMsg) sits in `System.timers`, a persistent
heap keyed by (virtual ms, sequence); the broker's delay timer is derived from the broker's own state.

The clients' fields are those model/client/cluster.py names (a client step changes only them); `broker` is the
broker half's, and `oneway` and `hold_oneway` the network's (model/system/route.py)."""

from __future__ import annotations

from typing import Any

import immutables
from attrs import field

from model.broker.pop.config import PopConfig
from model.broker.pop.state import PopState
from model.broker.state import Broker
from model.values.config import Config
from model.values.fifo import Fifo
from model.values.records import bounded_repr, record


@record  # copied several times per event: model.values.records.evolve copies its __dict__
class System:
    __repr__ = bounded_repr  # [SY-12] a failure report never prints the whole state

    config: Config
    broker: Broker
    now: int = 0
    consumers: immutables.Map = field(factory=immutables.Map)
    members: tuple[str, ...] = ()
    timers: Any = None
    timer_seq: int = 0
    requests: immutables.Map = field(factory=immutables.Map)
    next_request_id: int = 1
    parked: immutables.Map = field(factory=immutables.Map)
    # Pulls held back by the count, size or span check: (client, queue) -> (first check, incarnation, token).
    flow_parked: immutables.Map = field(factory=immutables.Map)
    # One-way offset commits held in the network (UpdateConsumerOffset requests), while `hold_oneway` (SY-02).
    oneway: Fifo = field(factory=Fifo)
    hold_oneway: bool = False
    pending_resubmits: int = 0
    topic_queue_nums: int = 2
    # The subscription's tag strings (None = "*") and their String.hashCode values, as the broker filters.
    subscription: frozenset | None = None
    subscription_codes: frozenset = frozenset()
    incarnations: int = 0
    # Instances whose lock requests currently fail (LockRequestsFail).
    lock_faults: frozenset = frozenset()
    # Request kind ("send_back", "send", "pull") -> the error code the broker answers it with (RefuseRequests).
    refusals: immutables.Map = field(factory=immutables.Map)
    # The 5.x side (model/system/pop_route.py): the broker's POP settings (None: a 4.x cluster without POP), its
    # POP state, the revive service's next run; the POP consumers' fields (model/client/cluster.py).
    pop_config: PopConfig | None = None
    pop: PopState = field(factory=PopState)
    revive_at: int | None = None
    pop_consumers: immutables.Map = field(factory=immutables.Map)
    pop_requests: immutables.Map = field(factory=immutables.Map)
    pop_parked: frozenset = frozenset()
