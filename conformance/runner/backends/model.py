"""The model-backed backend of a conformance run: conformance/runner/server/ (every decision the model's broker half's)
in a background thread, seen through the `Backend` protocol of conformance/runner/run.py.

It applies the run's settings as the broker's (group, retryMaxTimes, delay table, queues), injects the
workload's faults request by request (FaultScript) and reports the wire trace and what each send-back stored on the
client driver's clock (`time.monotonic()` in ms).
"""

from __future__ import annotations

import contextlib
import itertools
import time

from conformance.codec.codes import RequestCode
from conformance.codec.headers import decode_send_header
from conformance.codec.message import decode_properties
from conformance.history.records import BrokerRead, RunSettings, StoredCopy, WireRequest
from conformance.history.workload import Workload
from conformance.runner.backends.broker_client import BrokerClient
from conformance.runner.backends.broker_read import read_broker, read_settled
from conformance.runner.server.runner import run_server
from conformance.runner.settings import BrokerSettings, Faults
from model.broker.delay_timer import get_level_offset
from model.values.message import SCHEDULE_TOPIC


def get_destination(copy) -> str:
    """Where a stored copy is bound: a parked retry's REAL_TOPIC, else its own topic (a DLQ copy keeps the
    REAL_TOPIC property of the retry it came from, so the property alone would misfile it)."""
    return copy.get_property("REAL_TOPIC") if copy.topic == SCHEDULE_TOPIC else copy.topic


def is_delivery_pending(broker) -> bool:
    """A level's schedule queue holds a copy its deliver task has not passed yet."""
    queues = broker.store.schedule_queues
    return any(len(queue) > get_level_offset(broker.schedule, level) for level, queue in enumerate(queues, start=1))


class FaultScript:
    """The workload's faults, request by request (called on the server's loop).

    A send-back fault hits the CONSUMER_SEND_MSG_BACK that follows delivery `delivery` of message `key`: the
    message is found by the header's commit-log offset and the delivery is the number of send-backs of that key
    before this one (every delivery of a message but its last fails and is sent back). The stored copy's
    reconsumeTimes would not do: when the send-back and its fallback both fail, a 4.9.8 client retries locally
    with reconsumeTimes + 1 and sends back the same commit-log offset again, whose copy still says 0 (CC-07).
    A pull fault hits the `delivery`-th PULL_MESSAGE.
    """

    def __init__(self, workload: Workload):
        self.workload = workload
        self.pulls = itertools.count()
        self.send_backs: dict[str, int] = {}
        # Keys whose last send-back the broker refused as not writeable: their fallback sends are refused too.
        self.read_only_keys: set[str] = set()
        # Keys whose next fallback send is refused once (its producer retry is stored).
        self.refuse_once_keys: set[str] = set()

    def __call__(self, server, request) -> str | None:
        if request.code == RequestCode.PULL_MESSAGE:
            number = next(self.pulls)
            return "pull_error" if any(f.kind == "pull_error" and f.delivery == number
                                       for f in self.workload.faults) else None
        if request.code in (RequestCode.SEND_MESSAGE, RequestCode.SEND_MESSAGE_V2):
            return self.get_fallback_fault_kind(request)
        if request.code != RequestCode.CONSUMER_SEND_MSG_BACK:
            return None
        message = server.adapter.broker.store.look_message_by_offset(int(request.header("offset", "-1")))
        if message is None:
            return None
        key = message.uniq_key
        delivery = self.send_backs.get(key, 0)
        self.send_backs[key] = delivery + 1
        fault = self.workload.get_send_back_fault(key, delivery)
        kind = None if fault is None else fault.kind
        (self.read_only_keys.add if kind == "broker_not_writeable" else self.read_only_keys.discard)(key)
        (self.refuse_once_keys.add if kind == "fallback_first_refused" else self.refuse_once_keys.discard)(key)
        return kind

    def get_fallback_fault_kind(self, request) -> str | None:
        """A broker that is not writeable refuses the client's own sends to %RETRY% of a message whose send-back
        it refused as well (the Java client's fallback and its producer's retries of it); after a
        "fallback_first_refused" send-back it refuses only the first of them, as NO_PERMISSION."""
        fields = decode_send_header(request.ext_fields or {}, request.code == RequestCode.SEND_MESSAGE_V2)
        if not fields.get("topic", "").startswith("%RETRY%"):
            return None
        key = decode_properties(fields.get("properties") or "").get("UNIQ_KEY", "")
        if key in self.refuse_once_keys:
            self.refuse_once_keys.discard(key)
            return "broker_not_writeable"
        return "broker_not_writeable" if key in self.read_only_keys else None


class ModelBackend:
    """One model-backed server for one workload (fresh ports, fresh state)."""

    def __init__(self, runner, settings: RunSettings, workload: Workload):
        self.runner, self.server, self.settings, self.workload = runner, runner.server, settings, workload
        self.started_ms = time.monotonic() * 1000 - self.server.now()
        self.server.faults.script = FaultScript(workload)
        self.namesrv, self.broker_addr = self.server.namesrv_addr, self.server.broker_addr
        # The harness's own connections (the final read): their requests are not the client's.
        self.own_peers: set[str] = set()

    def produce(self, key: str, tags: str | None, delay_level: int, queue_id: int) -> None:
        properties = {"UNIQ_KEY": key, **({"TAGS": tags} if tags else {}),
                      **({"DELAY": str(delay_level)} if delay_level else {})}

        def send():
            result = self.server.adapter.send(self.settings.topic, queue_id, key.encode(), properties, 0,
                                              self.server.now(), (None, None), self.server.advance())
            self.server.notify_store_changed()
            return result

        code, remark, _stored, _rules = self.runner.call(send)
        if code != 0:
            raise RuntimeError(f"the model-backed broker refused to store {key}: {code} {remark}")

    def get_requests(self) -> list[WireRequest]:
        """The client's requests in arrival order, each with the code of its response (None: unanswered)."""
        entries = self.runner.call(lambda: list(self.server.trace))
        answers = {(e.peer, e.command.opaque): e.command.code for e in entries if e.direction == "out"}
        connections: dict[str, int] = {}
        requests = []
        for entry in entries:
            if entry.direction != "in" or entry.command.is_response or entry.peer in self.own_peers:
                continue
            connection = connections.setdefault(entry.peer, len(connections))
            command = entry.command
            requests.append(WireRequest(self.started_ms + entry.at, command.code, dict(command.ext_fields or {}),
                                        command.flag, answers.get((entry.peer, command.opaque)), connection))
        return requests

    def get_stored_copies(self) -> list[StoredCopy]:
        """What each send-back stored, and each fallback send to %RETRY% (no offset: it carries the message)."""
        sent_back, retry_sent = self.runner.call(
            lambda: (list(self.server.adapter.sent_back), list(self.server.adapter.retry_sent)))
        copies = [(at, offset, copy, "rpc") for at, offset, copy in sent_back]
        copies += [(at, -1, copy, "fallback") for at, copy in retry_sent]
        return [StoredCopy(self.started_ms + at, offset, copy.uniq_key, copy.reconsume_times,
                           get_destination(copy), copy.delay_time_level, path)
                for at, offset, copy, path in sorted(copies, key=lambda entry: entry[0])]

    def get_findings(self) -> list[dict]:
        return self.runner.call(lambda: list(self.server.findings))

    def read_final(self) -> BrokerRead:
        """The broker as the run left it, read over the wire as on the real broker
        (conformance/runner/backends/broker_read.py); the read's own requests stay out of get_requests."""
        with BrokerClient(self.broker_addr) as client:
            host, port = client.sock.getsockname()[:2]
            self.own_peers.add(f"{host}:{port}")
            return read_settled(lambda: read_broker(client, self.settings.group, self.settings.topic))

    def has_delayed(self) -> bool:
        """Whether a copy waits in SCHEDULE_TOPIC_XXXX (the delay timer's next due time alone would always say
        yes: it also schedules the periodic flush of the delay offsets)."""
        return self.runner.call(lambda: is_delivery_pending(self.server.adapter.broker))


@contextlib.contextmanager
def open_model_backend(settings: RunSettings, workload: Workload):
    """`with open_model_backend(settings, workload) as backend:` a started server, always stopped."""
    broker = BrokerSettings(message_delay_level=settings.message_delay_level, retry_max_times=settings.retry_max_times,
                            topic_queue_nums=settings.topic_queue_nums, groups=(settings.group,))
    with run_server(broker, Faults()) as runner:
        yield ModelBackend(runner, settings, workload)
