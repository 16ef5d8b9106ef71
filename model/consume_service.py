"""The consume-service seam: the one place where `config.consume_mode` chooses how pulled messages are consumed.

The system (model/system.py) owns pulling, offset stores, rebalance, crash and the clock. After a FOUND pull it
hands the new messages to the consume service of `config.consume_mode`; it routes `CompleteConsume` events and
every `ServiceTimer` to that service too. A service is a `ConsumeService` value of five pure functions:

- `start(system, client_id) -> system` — schedule the service's periodic timers for a (re)started instance
  (concurrently: cleanExpiredMsg every consumeTimeout; orderly: lockAll every 20 s).
- `allows_pull(system, client_id, mq, pq) -> (delay_ms | None, rules)` — the mode-specific part of flow control,
  checked after the count/size thresholds (concurrently: the span check; orderly: the queue must be locked).
- `submit(system, client_id, mq, messages, dispatch_to_consume) -> (system, observations)` — after putMessage.
- `complete(system, CompleteConsume) -> (system, observations)` — a listener invocation returned.
- `on_timer(system, ServiceTimer) -> (system, observations)`.

To plug in ORDERLY: write `model/orderly.py` defining `ORDERLY_SERVICE = ConsumeService(...)` (the orderly
`ListenerResult` statuses may be its own enum; per-queue consume locks and suspensions go into
`ConsumerInstance.service_state`), and add it to `get_consume_service` below. Helpers the services share (start a
listener invocation, update the offset store, send a message back) are in model/consume_common.py.
"""

from __future__ import annotations

from collections.abc import Callable

from attrs import frozen

from model.config import Config, ConsumeMode


@frozen
class ConsumeService:
    name: str
    start: Callable
    allows_pull: Callable
    submit: Callable
    complete: Callable
    on_timer: Callable
    # Rebalance hooks (orderly): `lock_queue(system, client_id, mq) -> (system, granted)` before a queue is added,
    # `remove_queue(system, client_id, mq) -> (system, observations)` instead of the plain drop.
    lock_queue: Callable | None = None
    remove_queue: Callable | None = None
    # `prepare_pull(system, client_id, mq) -> (system, observations)` once flow control let a pull through
    # (orderly: the first pull after the lock re-reads the offset store).
    prepare_pull: Callable = lambda system, _client_id, _mq: (system, [])


# (mode, service) pairs, compared by identity: an enum member's hash is a Python-level call, and every event asks.
_SERVICES: list[tuple[ConsumeMode, ConsumeService]] = []


def get_consume_service(config: Config) -> ConsumeService:
    """[CC-01] The consume service is chosen once, by `config.consume_mode`."""
    mode = config.consume_mode
    for known, service in _SERVICES:
        if known is mode:
            return service
    # Imported here: the services import this module (and are looked up once per mode, then from _SERVICES).
    if mode is ConsumeMode.ORDERLY:
        from model.orderly_service import ORDERLY_SERVICE as service
    else:
        from model.concurrently import CONCURRENTLY_SERVICE as service
    _SERVICES.append((mode, service))
    return service
