"""PG-01's rest for a POP group that never read: one stored message keeps the POP side busy until the group reads
it; with nothing produced there is nothing to pop, so the POP side is at rest although no offset was ever committed
for the group (the broker keeps none until a pop or an ack commits one: ConsumerOffsetManager.queryOffset answers
-1, rocketmq-all-5.3.3 broker/src/main/java/org/apache/rocketmq/broker/offset/ConsumerOffsetManager.java
L240-L260)."""

from __future__ import annotations

from model.broker.pop.state import PopGroupConfig
from model.system.drain import drain
from model.system.events import Produce
from model.system.pop_route import is_pop_quiescent
from model.system.step import create_system, step
from model.values.config import Config


def test_a_pop_cluster_with_nothing_produced_is_at_rest():
    """Two POP groups, no consumer, no message: at rest, and a drain processes no event."""
    system = create_system(Config(profile="5.3.3"), (), pop_groups={"GP": PopGroupConfig(), "GQ": PopGroupConfig()})
    assert is_pop_quiescent(system)
    assert drain(system)[2] == 0


def test_one_message_no_pop_group_read_keeps_the_pop_side_busy():
    """One message in queue 0 and a POP group with no consumer yet: not at rest (its offset for the queue is none,
    not 1), in queue 1 too."""
    system = create_system(Config(profile="5.3.3"), (), pop_groups={"GP": PopGroupConfig()})
    for queue_id in (0, 1):
        assert not is_pop_quiescent(step(system, Produce("m0", queue_id=queue_id))[0])
