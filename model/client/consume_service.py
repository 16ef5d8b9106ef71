"""The consume-service seam: what a consume mode provides to the pull loop, rebalance and the system's timers.

The client's pull loop (model/client/pull.py) hands the messages of a FOUND pull to the consume service of
`config.consume_mode` (chosen in model/client/consume_mode.py); the system step routes `CompleteConsume` events and
every `ServiceTimer` to that service too. A service is a `ConsumeService` value of pure functions:

- `start(cluster, client_id) -> cluster` — schedule the service's periodic timers for a (re)started instance
  (concurrently: cleanExpiredMsg every consumeTimeout; orderly: lockAll every 20 s).
- `allows_pull(cluster, client_id, mq, pq) -> (delay_ms | None, rules)` — the mode-specific part of flow control,
  checked after the count/size thresholds (concurrently: the span check; orderly: the queue must be locked).
- `submit(cluster, client_id, mq, messages, dispatch_to_consume) -> (cluster, observations)` — after putMessage.
- `complete(cluster, CompleteConsume) -> (cluster, observations)` — a listener invocation returned.
- `on_timer(cluster, ServiceTimer) -> (cluster, observations)`.

The two services are model/client/concurrently.py and model/client/orderly_service.py; the helpers they share
(start a listener invocation, update the offset store, send a message back) are in model/client/consume_common.py.
"""

from __future__ import annotations

from collections.abc import Callable

from attrs import frozen


@frozen
class ConsumeService:
    name: str
    start: Callable
    allows_pull: Callable
    submit: Callable
    complete: Callable
    on_timer: Callable
    # Rebalance hooks (orderly): `lock_queue(cluster, client_id, mq) -> (cluster, granted)` before a queue is added,
    # `remove_queue(cluster, client_id, mq) -> (cluster, observations)` instead of the plain drop.
    lock_queue: Callable | None = None
    remove_queue: Callable | None = None
    # `prepare_pull(cluster, client_id, mq) -> (cluster, observations)` once flow control let a pull through
    # (orderly: the first pull after the lock re-reads the offset store).
    prepare_pull: Callable = lambda cluster, _client_id, _mq: (cluster, [])
