"""PG-01's rest for a POP group that never read: with nothing produced there is nothing to pop, so the POP side is
at rest although no offset was ever committed for the group (the broker keeps none until a pop or an ack commits
one: ConsumerOffsetManager.queryOffset answers -1, rocketmq-all-5.3.3
broker/src/main/java/org/apache/rocketmq/broker/offset/ConsumerOffsetManager.java L240-L260)."""

from __future__ import annotations

from model.broker.pop.state import PopGroupConfig
from model.system.drain import drain
from model.system.pop_route import is_pop_quiescent
from model.system.step import create_system
from model.values.config import Config


def test_a_pop_cluster_with_nothing_produced_is_at_rest():
    """Two POP groups, no consumer, no message: at rest, and a drain processes no event."""
    system = create_system(Config(profile="5.3.3"), (), pop_groups={"GP": PopGroupConfig(), "GQ": PopGroupConfig()})
    assert is_pop_quiescent(system)
    assert drain(system)[2] == 0
