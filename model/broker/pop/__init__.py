"""RocketMQ 5.x server-side retry in the broker: POP, its checkpoints, ack, changeInvisibleTime, revive, the FIFO
order info and the group retry policies (spec/14-pop.md to spec/17-fifo.md)."""
