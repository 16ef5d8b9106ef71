"""The broker's persistence of POP progress and its restart (BrokerController, spec/14-pop.md): what a crash
loses is what was committed since the last persist."""

from __future__ import annotations

import immutables

from model.broker.pop.state import PopBroker, put_checkpoint, set_broker, set_pop
from model.values.records import evolve


def on_persist(state: PopBroker) -> PopBroker:
    """[PO-10] The scheduled persist (every flushConsumerOffsetInterval, 5 s): the consumer offsets — the revive
    progress among them — and the FIFO order info as they are now; revived checkpoints are then behind the
    persisted revive offset and are forgotten."""
    return set_pop(state, persisted_offsets=state.broker.consumer_offsets, persisted_order_infos=state.pop.order_infos,
                   revived=immutables.Map())


def on_broker_restart(state: PopBroker, *, graceful: bool) -> PopBroker:
    """[PO-10] A restart: a graceful one persists first and loses nothing; a crash brings the consumer offsets and
    the order info back to the last persist, so messages popped since are popped again, and the revive service
    reads the revive topic again from its persisted offset, reviving the checkpoints revived since (with every
    ack stored for them) once more. Stored messages and checkpoints are in the commit log and survive; the count
    that draws revive queues (ckMessageNumber, PO-04) is in memory only and starts at 0 again."""
    if graceful:
        state = on_persist(state)
    broker = evolve(state.broker, consumer_offsets=state.pop.persisted_offsets)
    for key, ck in state.pop.revived.items():
        if not ck.is_done:
            state = put_checkpoint(state, key, ck)
    state = set_pop(state, revived=immutables.Map(), order_infos=state.pop.persisted_order_infos, ck_number=0)
    return set_broker(state, broker)
