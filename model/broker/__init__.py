"""The broker half (spec chapters 02-04, and the broker's side of 07, 10 and 12): its state, the store, the delay
timer, send-back and retry sends, the pull lookup, consumer offsets and queue locks. Functions of a `Broker` value;
imports only model.values, so a server can put it behind a real network (conformance/runner/server/), and a client
reaches it only through the wire's requests (model/broker/server.py answers them)."""

# A bare Broker answers `model.values.wire.exchange` once its server is loaded: with the package, always.
from model.broker import server  # noqa: F401
