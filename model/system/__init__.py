"""The whole cluster (spec/11-guarantees.md): its state, the events from outside, the step function, the
scheduler of timers over the virtual clock, and the drain to quiescence. The top layer: imports broker, client and
values; nothing of the model imports it but for type annotations."""
