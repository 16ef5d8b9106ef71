"""The whole cluster (spec/11-guarantees.md): its state, the events from outside, the step function, the
scheduler of timers over the virtual clock, the drain to quiescence, and the network that routes the clients'
requests to the broker. The top layer: imports broker, client and values; nothing of the model imports it."""

# A System answers `model.values.wire.exchange` once its router is loaded: with the package, always.
from model.system import route  # noqa: F401
