"""What one run recorded: the values of a history. The runner (conformance/runner/) makes them; the checker
(conformance/checker/) reads only them.

Every time is on one monotonic clock in ms, the harness's: `time.monotonic()` as the client driver records a
delivery and the backend records a request.
"""

from __future__ import annotations

from attrs import frozen

from conformance.codec.codes import ResponseCode
from model.values.config import Config

SUCCESS = ResponseCode.SUCCESS


@frozen
class RunSettings:
    """The broker settings a run applies (the model as Config, the server the same table) and its names."""

    group: str = "please_rename_unique_group_name"
    topic: str = "TopicTest"
    retry_max_times: int = 16
    message_delay_level: str = " ".join(["1s"] * 18)
    topic_queue_nums: int = 2
    # The modelled client's maxReconsumeTimes (-1: the 4.9.8 default, 16 concurrently).
    max_reconsume_times: int = -1

    def get_config(self, mode: str, model: str = "clustering") -> Config:
        """The 4.9.8 consumer against a broker with these settings."""
        return Config(consume_mode=mode, message_model=model, retry_max_times=self.retry_max_times,
                      max_reconsume_times=self.max_reconsume_times, message_delay_level=self.message_delay_level)


@frozen
class Delivery:
    """One message handed to the listener: its protocol record, when (harness ms), the answer given."""

    number: int
    time_ms: float
    message: dict
    status: str
    seen_before: int

    @property
    def uniq_key(self) -> str:
        return self.message["properties"].get("UNIQ_KEY", self.message["msgId"])

    @property
    def reconsume_times(self) -> int:
        return self.message["reconsumeTimes"]


@frozen
class WireRequest:
    """One request of the client as the server saw it; `connection` numbers the client's TCP connections (a
    restarted client opens new ones); `response_code` None: no response (a timeout fault, a one-way request)."""

    time_ms: float
    code: int
    fields: dict
    flag: int = 0
    response_code: int | None = SUCCESS
    connection: int = 0


@frozen
class StoredCopy:
    """What the model-backed broker stored for one send-back: the copy's key, reconsumeTimes, real topic and delay
    level, and the commit-log offset the request named; `path` "fallback" for a client's own send to %RETRY% after
    a failed send-back (no offset named: -1)."""

    time_ms: float
    source_offset: int
    key: str
    reconsume_times: int
    topic: str
    delay_level: int
    path: str = "rpc"


@frozen
class FaultEvent:
    """One fault as the runner injected it: its kind (history/workload.py's FAULT_KINDS, or a broker, name-server
    or client fault of the schedule), when it began and — for a fault that lasts (read-only, a process down) — when
    it ended (None: it lasted to the run's end, or happened at once); `target` what it hit (the message key and
    delivery of a send-back fault, the request code, "" for a process)."""

    kind: str
    time_ms: float
    end_ms: float | None = None
    target: str = ""


@frozen
class QueueRead:
    """One queue as the final read of the broker found it: the group's committed consumer offset (-1: none), the
    queue's max offset, and every message in it from the committed offset on (StoredCopy-like records: key,
    reconsumeTimes, queue offset)."""

    topic: str
    queue_id: int
    committed: int
    max_offset: int
    pending: tuple[tuple[str, int, int], ...] = ()


@frozen
class BrokerRead:
    """The broker at quiescence, read after the client stopped: per queue of the topic and of %RETRY%<group> the
    group's committed offset and what is still there to consume; every copy in %DLQ%<group> as (key,
    reconsumeTimes); copies still parked for a delay (key, reconsumeTimes)."""

    queues: tuple[QueueRead, ...] = ()
    dead: tuple[tuple[str, int], ...] = ()
    delayed: tuple[tuple[str, int], ...] = ()

    def get_pending_keys(self) -> set[str]:
        """Keys with a copy the group could still consume: past its committed offset, or parked for a delay."""
        return {key for queue in self.queues for key, _times, _offset in queue.pending} | \
            {key for key, _times in self.delayed}


@frozen
class Run:
    """One run's history: who ran (client), what it was given (workload, settings), what its listener did
    (deliveries), every request on the wire with its answer, the copies the broker stored for retries, every fault
    injected, and the final read of the broker (None where the backend could not be read)."""

    client: dict
    workload: object
    settings: object
    deliveries: tuple
    requests: tuple[WireRequest, ...] = ()
    stored: tuple[StoredCopy, ...] = ()
    # The backend's name server address (host:port), closed once the run is over.
    namesrv: str = ""
    # What the server noticed that is no rule's: {"kind": "unsupported-request" | "bad-frame" | "handler-error" |
    # "timer-stuck", ...} (conformance/runner/server/core.py).
    findings: tuple[dict, ...] = ()
    faults: tuple[FaultEvent, ...] = ()
    final: BrokerRead | None = None
    # When the run stopped waiting (the client was stopped then), on the harness's clock.
    ended_ms: float = 0.0
    # The backend it ran against: "model" (the model-backed server) or "rocketmq-4.9.8" (RocketMQ's own broker).
    backend: str = ""

    def get_requests(self, code: int) -> list[WireRequest]:
        return [r for r in self.requests if r.code == code]
