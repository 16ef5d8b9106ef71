"""What one 5.x run recorded (conformance/runner/pop_run.py makes it, conformance/checker/pop_verdicts.py reads it):
the consumer's deliveries and the answers of its acks and changes, the group's settings as the proxy hands them to a
gRPC consumer, the faults, and the final read of the broker's retry topic and %DLQ%<group>. Times are the harness's
monotonic clock in ms, as in records.py.
"""

from __future__ import annotations

from attrs import frozen

from conformance.history.records import Delivery, FaultEvent


@frozen
class GroupSettings:
    """The group's settings as the proxy answers a consumer's telemetry Settings (RP-03): maxAttempts, the backoff
    policy (customized durations, or exponential (initial, max, multiplier)), FIFO."""

    max_attempts: int
    customized_ms: tuple[int, ...] = ()
    exponential: tuple[int, int, float] | None = None
    fifo: bool = False


@frozen
class PopFinal:
    """The broker after the consumer stopped: every copy in the group's POP retry topic (%RETRY%<group>_<topic>), in
    %DLQ%<group> and in the group's 4.x retry topic (%RETRY%<group>: a pulling consumer's send-backs), as (key,
    reconsumeTimes); `dropped` the keys whose checkpoint the broker's revive service dropped, by its own log (a
    restart of RocketMQ 5.3.3's proxy in local mode: PG-01)."""

    retry: tuple[tuple[str, int], ...] = ()
    dead: tuple[tuple[str, int], ...] = ()
    sent_back: tuple[tuple[str, int], ...] = ()
    dropped: tuple[str, ...] = ()

    def get_dead_keys(self) -> list[str]:
        return [key for key, _times in self.dead]


@frozen
class Settled:
    """A SimpleConsumer's ack or change of one delivery as the client answered it (`code` "OK" or the proxy's code
    name), when; `invisible_ms` a change's duration."""

    number: int
    time_ms: float
    action: str
    code: str
    invisible_ms: int = 0


@frozen
class PopRun:
    """One 5.x run: who ran (client, with its `api`), the workload, the group, its settings, the deliveries, the
    settlements, the start-up errors the adapter marked (a receive before the settings reached the proxy), the calls
    it retried itself (a receive while the proxy restarted) and the other errors, the faults, the final read;
    `sent_ms` when the messages were sent, `ended_ms` when the run stopped waiting; `long_polling_ms` the proxy's
    longest receive hold there."""

    client: dict
    workload: object
    group: str
    topic: str
    settings: GroupSettings
    deliveries: tuple[Delivery, ...]
    settlements: tuple[Settled, ...] = ()
    startup_errors: tuple[str, ...] = ()
    retried_errors: tuple[str, ...] = ()
    errors: tuple[str, ...] = ()
    faults: tuple[FaultEvent, ...] = ()
    final: PopFinal | None = None
    sent_ms: float = 0.0
    ended_ms: float = 0.0
    backend: str = "rocketmq-5.3.3"
    # The proxy's longest hold of a receive (grpcClientConsumerMaxLongPollingTimeoutMillis) in the run's deployment.
    long_polling_ms: int = 20_000

    def get_deliveries(self, key: str) -> list[Delivery]:
        return [d for d in self.deliveries if d.uniq_key == key]

    def get_answer(self, delivery: Delivery) -> str:
        """The workload's answer to this delivery (the script's word, e.g. LATE_ACK, not the protocol status)."""
        return self.workload.get_answer(delivery.uniq_key, delivery.seen_before)

    def get_settled(self, delivery: Delivery) -> Settled | None:
        return next((s for s in self.settlements if s.number == delivery.number), None)
