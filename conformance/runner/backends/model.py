"""The model-backed backend of a conformance run: conformance/runner/server/ (every decision the model's broker half's)
in a background thread, seen through the `Backend` protocol of conformance/runner/run.py.

It applies the run's settings as the broker's (group, retryMaxTimes, delay table, queues), injects the
workload's faults request by request (conformance/runner/faults.py's FaultScript, which records each as a
FaultEvent) and reports the wire trace, what each send-back stored and the faults on the client driver's clock
(`time.monotonic()` in ms).
"""

from __future__ import annotations

import contextlib
import time

from conformance.history.records import BrokerRead, FaultEvent, RunSettings, StoredCopy, WireRequest
from conformance.history.workload import Workload
from conformance.runner.backends import admin
from conformance.runner.backends.broker_client import BrokerClient
from conformance.runner.backends.broker_read import read_broker, read_settled
from conformance.runner.faults import FaultScript
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


def get_key_of_offset(server):
    """The model's store as a KeyOfOffset: the key of the message stored at a commit-log offset."""
    def key_of_offset(offset: int) -> str | None:
        message = server.adapter.broker.store.look_message_by_offset(offset)
        return None if message is None else message.uniq_key
    return key_of_offset


class ModelBackend:
    """One model-backed server for one workload (fresh ports, fresh state)."""

    name = "model"

    def __init__(self, runner, settings: RunSettings, workload: Workload):
        self.runner, self.server, self.settings, self.workload = runner, runner.server, settings, workload
        self.started_ms = time.monotonic() * 1000 - self.server.now()
        self.script = FaultScript(workload)
        self.server.faults.script = lambda server, request: self.script.decide(
            request, get_key_of_offset(server), self.started_ms + server.now())
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
        answers = {(e.connection, e.command.opaque): e.command.code for e in entries if e.direction == "out"}
        connections: dict[int, int] = {}
        requests = []
        for entry in entries:
            if entry.direction != "in" or entry.command.is_response or entry.peer in self.own_peers:
                continue
            connection = connections.setdefault(entry.connection, len(connections))
            command = entry.command
            requests.append(WireRequest(self.started_ms + entry.at, command.code, dict(command.ext_fields or {}),
                                        command.flag, answers.get((entry.connection, command.opaque)), connection))
        return requests

    def set_writeable(self, writeable: bool) -> None:
        """Fault: the broker read-only (brokerPermission 4) or read-write (6) again; the route shows it at once."""
        self.runner.call(self.server.set_broker_perm, admin.PERM_READ_WRITE if writeable else admin.PERM_READ)

    def kill_broker(self) -> None:
        """Fault: the broker killed (kill -9): its port closed, its connections dropped, the state only a 4.9.8 broker's
        memory held lost (Server.kill_broker); the name server's routes show no broker until the restart."""
        self.runner.run(self.server.kill_broker)

    def restart_broker(self) -> None:
        """The killed broker listening again on the same port, with its store (Server.restart_broker)."""
        self.runner.run(self.server.restart_broker)

    def stop_namesrv(self) -> None:
        """Fault: the name server stopped: its port closed, its connections dropped."""
        self.runner.run(self.server.stop_namesrv)

    def start_namesrv(self) -> None:
        """The name server listening again on the same port; routes answer at once."""
        self.runner.run(self.server.start_namesrv)

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

    def get_faults(self) -> list[FaultEvent]:
        """Every fault the server injected, in order, on the client driver's clock."""
        return self.runner.call(lambda: list(self.script.events))

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
