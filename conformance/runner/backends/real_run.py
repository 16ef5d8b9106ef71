"""The real backend of a conformance run: a client's workload against the session's RocketMQ broker, seen through
the `Backend` protocol of conformance/runner/run.py, so that the same verdicts judge it as on the model-backed server.

What the verdicts need and where it comes from on the real broker:

- the client's requests with their response codes: a :class:`RecordingProxy` between client and broker;
- what each send-back stored (`StoredCopy`): read back over the wire after the run — the copies parked in
  SCHEDULE_TOPIC_XXXX for this run's retry topic and the copies in its %DLQ% topic, matched in store order, per
  message key, to the successful send-backs (``rpc``) and direct sends to %RETRY% (``fallback``) the proxy saw;
- whether a delayed copy is still pending: a parked copy younger than the 1 s delay table plus slack;
- the final read (`read_final`): conformance/runner/backends/broker_read.py, directly from the broker.
- the workload's faults: the proxy injects them request by request with the model-backed server's own
  `FaultScript` (conformance/runner/faults.py), so the same workload, faults included, runs on both backends.

- the fault schedule's actions (`set_writeable`, `kill_broker`, `restart_broker`, `stop_namesrv`, `start_namesrv`):
  RocketMQ's own processes and brokerPermission, the proxy's endpoint closed while a process is down; `close()`
  starts again whatever a run left stopped.

Not available on the real broker: the model-backed server's findings (unsupported requests; the real broker answers
them itself, so there are none).
"""

from __future__ import annotations

import contextlib
import time

from conformance.codec.codes import CONSUMER_SEND_MSG_BACK
from conformance.codec.message import StoredMessage, decode_properties
from conformance.history.records import BrokerRead, FaultEvent, RunSettings, StoredCopy, WireRequest
from conformance.history.workload import Workload
from conformance.runner.backends import admin
from conformance.runner.backends.broker_client import BrokerClient
from conformance.runner.backends.broker_read import (
    SCHEDULE_QUEUES,
    SCHEDULE_TOPIC,
    read_broker,
    read_queue,
    read_settled,
)
from conformance.runner.backends.recording_proxy import RecordingProxy
from conformance.runner.backends.route import wait_for_route
from conformance.runner.faults import FAULT_ANSWERS, FaultScript

SEND_MESSAGES = (10, 310)
REGISTER_LIMIT_S = 30.0  # a restarted broker registers at its start; a forced registration waits up to 6 s
MATCH_WINDOW = 8  # sends stored out of their arrival order: at most this far apart
PENDING_MS = 1500  # every level of the settings table is 1 s; a parked copy younger than this may still move


def get_retry_sends(requests: list[WireRequest], group: str) -> list[tuple[float, str, int, str | None]]:
    """(time, path, offset named, the key the request names or None) of each successful send-back and direct send
    to %RETRY%<group>, in arrival order."""
    found = []
    for request in requests:
        if request.response_code != 0:
            continue
        if request.code == CONSUMER_SEND_MSG_BACK:
            offset, named = int(request.fields.get("offset", -1)), request.fields.get("originMsgId")
            found.append((request.time_ms, "rpc", offset, named))
        elif is_retry_topic_send(request, group):
            found.append((request.time_ms, "fallback", -1, get_sent_key(request)))
    return found


def is_retry_topic_send(request: WireRequest, group: str) -> bool:
    """A client's direct send (SEND_MESSAGE, V2) to %RETRY%<group>: a fallback or an orderly give-up."""
    return request.code in SEND_MESSAGES and request.fields.get("topic", request.fields.get("b", "")) == \
        f"%RETRY%{group}"


def get_sent_key(request: WireRequest) -> str | None:
    """The UNIQ_KEY in a send's properties."""
    return decode_properties(request.fields.get("properties", request.fields.get("i", "")) or "").get("UNIQ_KEY")


def match_copies(sends: list[tuple], copies: list[StoredMessage]) -> list[tuple[tuple, StoredMessage]]:
    """Each send paired with the copy it stored: the first unmatched copy (store order) of the key the send names
    among the next MATCH_WINDOW, else the first unmatched one. The broker handles the requests of one connection on
    several threads, so sends arriving together may be stored in another order (a Java client sent m1, m0 and m2
    back in one ms; the broker stored m0's copy first)."""
    left, pairs = list(copies), []
    for send in sends:
        if not left:
            break
        named = send[3]
        index = next((i for i, copy in enumerate(left[:MATCH_WINDOW]) if get_key(copy) == named), 0)
        pairs.append((send, left.pop(index)))
    return pairs


def get_unanswered_sends(requests: list[WireRequest], group: str) -> list[tuple[float, str, int, str | None]]:
    """(time, "fallback", -1, key) of each direct send to %RETRY%<group> the proxy saw no answer to: the client
    closed its connection first (a restart), or a fault held the answer. The broker stores before it answers, so such
    a send may have stored a copy."""
    return [(request.time_ms, "fallback", -1, get_sent_key(request)) for request in requests
            if request.response_code is None and is_retry_topic_send(request, group)]


def match_unanswered(sends: list[tuple], copies: list[StoredMessage], pairs: list) -> list[tuple[tuple, StoredMessage]]:
    """Each unanswered send paired with a copy of the key it names that no answered send took (`pairs`); a send with
    none stored nothing. Seen: a Java client shutting down sent m2's fallback after its send-back, the proxy recorded
    no answer, and the copy it stored was delivered; left unpaired, the checker judged the reference SY-09."""
    taken = {id(copy) for _send, copy in pairs}
    left, found = [copy for copy in copies if id(copy) not in taken], []
    for send in sends:
        index = next((i for i, copy in enumerate(left) if get_key(copy) == send[3]), None)
        if index is not None:
            found.append((send, left.pop(index)))
    return found


def get_key(copy: StoredMessage) -> str:
    return copy.properties.get("UNIQ_KEY", "")


class RealBackend:
    """One workload's view of the session's real broker: fresh topic and group, a recording proxy injecting the
    workload's faults (`script`, the proxy's fault hook)."""

    name = "rocketmq-4.9.8"

    def __init__(self, broker, proxy: RecordingProxy, settings: RunSettings, perm: int = admin.PERM_READ_WRITE,
                 script: FaultScript | None = None):
        self.broker, self.proxy, self.settings, self.script = broker, proxy, settings, script
        self.client = BrokerClient(broker.broker_addr)
        self.namesrv, self.broker_addr = proxy.namesrv_addr, broker.broker_addr
        self.marks = [int(self.client.max_offset(SCHEDULE_TOPIC, q).ext_fields.get("offset", 0))
                      for q in range(SCHEDULE_QUEUES)]
        admin.create_topic(self.client, settings.topic, settings.topic_queue_nums)
        admin.create_group(self.client, settings.group, settings.retry_max_times, 1)
        # As after an earlier heartbeat of the group (the model-backed server's `groups` setting): a client asks for
        # the retry topic's route before its first heartbeat and re-balances only every 20 s.
        admin.create_topic(self.client, f"%RETRY%{settings.group}", 1)
        # The processes a fault stopped (kill_broker, stop_namesrv) and not yet started again; close() starts them.
        self.down: set[str] = set()
        # A real fault: brokerPermission for the whole run (4: read-only), restored by close(); set_writeable
        # changes it during a run.
        self.perm = perm
        admin.update_broker_config(self.client, brokerPermission=perm)

    def produce(self, key: str, tags: str | None, delay_level: int, queue_id: int) -> None:
        properties = {"UNIQ_KEY": key, "WAIT": "true", **({"TAGS": tags} if tags else {}),
                      **({"DELAY": str(delay_level)} if delay_level else {})}
        response = self.client.send(self.settings.topic, queue_id, key.encode(), properties)
        if response.code != 0:
            raise RuntimeError(f"RocketMQ refused to store {key}: {response.code} {response.remark}")

    def get_requests(self) -> list[WireRequest]:
        return self.proxy.get_requests()

    def get_findings(self) -> list[dict]:
        return []

    def get_faults(self) -> list[FaultEvent]:
        """Every fault the proxy injected, in order, on its clock (`time.monotonic()` ms, the requests' clock)."""
        return [] if self.script is None else self.proxy.call(lambda: list(self.script.events))

    def read_copies(self) -> list[StoredMessage]:
        """This run's copies: parked for its retry topic since the run began, and its DLQ's; in store order."""
        retry, dlq = f"%RETRY%{self.settings.group}", f"%DLQ%{self.settings.group}"
        parked = [m for q, mark in enumerate(self.marks)
                  for m in read_queue(self.client, self.settings.group, SCHEDULE_TOPIC, q, mark)
                  if m.properties.get("REAL_TOPIC") in (retry, dlq)]
        # RS-05: a direct send redirected to the DLQ is parked first, then lands there: one copy, counted once.
        twice = {(m.properties.get("UNIQ_KEY"), m.reconsume_times) for m in parked
                 if m.properties.get("REAL_TOPIC") == dlq}
        dead = [m for m in read_queue(self.client, self.settings.group, dlq, 0)
                if (m.properties.get("UNIQ_KEY"), m.reconsume_times) not in twice]
        return sorted(parked + dead, key=lambda m: (m.store_timestamp, m.commit_log_offset))

    def has_delayed(self) -> bool:
        """A copy parked for a delay younger than PENDING_MS (it may still move); False while the broker is killed:
        nothing can be read then, and the fault schedule keeps the run from ending before it is back."""
        if "broker" in self.down:
            return False
        now_ms = time.time() * 1000
        return any(m.topic == SCHEDULE_TOPIC and now_ms - m.store_timestamp < PENDING_MS for m in self.read_copies())

    def get_stored_copies(self) -> list[StoredCopy]:
        """The stored copies matched, in order, to the successful send-backs and fallback sends the proxy saw (the
        time of a copy is its request's, on the proxy's clock)."""
        requests, group = self.get_requests(), self.settings.group
        stored = self.read_copies()
        pairs = match_copies(get_retry_sends(requests, group), stored)
        pairs = sorted(pairs + match_unanswered(get_unanswered_sends(requests, group), stored, pairs),
                       key=lambda pair: pair[0][0])
        copies = []
        for (at, path, offset, _named), copy in pairs:
            destination = copy.properties.get("REAL_TOPIC", copy.topic) if copy.topic == SCHEDULE_TOPIC \
                else copy.topic
            level = int(copy.properties.get("DELAY", "0")) if copy.topic == SCHEDULE_TOPIC else 0
            copies.append(StoredCopy(at, offset,
                                     get_key(copy), copy.reconsume_times, destination, level,
                                     path))
        return copies

    def read_final(self) -> BrokerRead:
        """The broker as the run left it (conformance/runner/backends/broker_read.py), read directly, not through the
        proxy; the schedule queues from the run's marks on (the session's broker serves every run). The run is over:
        a run's brokerPermission is set back first, so that a write-only broker's store is read too."""
        admin.update_broker_config(self.client, brokerPermission=admin.PERM_READ_WRITE)
        return read_settled(lambda: read_broker(self.client, self.settings.group, self.settings.topic, self.marks))

    def set_writeable(self, writeable: bool) -> None:
        """Fault: brokerPermission 4 (read-only) or 6 again. The broker re-registers at once (AdminBrokerProcessor
        4.9.8's updateBrokerConfig calls registerBrokerAll for brokerPermission); returns once the name server's
        route of the run's topic shows the permission."""
        perm = admin.PERM_READ_WRITE if writeable else admin.PERM_READ
        self.perm = perm
        if "broker" in self.down:
            return  # restart_broker applies it
        admin.update_broker_config(self.client, brokerPermission=perm)
        if "namesrv" not in self.down:  # else start_namesrv registers the broker with it
            wait_for_route(self.broker.namesrv_addr, self.settings.topic, lambda perms: set(perms or [0]) == {perm})

    def kill_broker(self) -> None:
        """Fault: the real broker killed (SIGKILL). The proxy first stops listening on its broker port and closes every
        client connection to it, so a client sees what a crash shows it: connections closed, connects refused.
        Returns once the process is gone and the name server has dropped its route. A broker already down (two
        overlapping kills) is left as it is: there is no process to kill, and its route may be back."""
        if "broker" in self.down:
            return
        self.proxy.close_endpoint("broker")
        self.broker.kill_broker()
        self.client.close()
        self.down.add("broker")
        if "namesrv" not in self.down:  # the name server drops the route when the broker's connection closes
            wait_for_route(self.broker.namesrv_addr, self.settings.topic, lambda perms: perms is None)

    def restart_broker(self) -> None:
        """The broker started again on its port and store (recovery after a crash); returns once it answers and its
        route is registered again (it registers at its start), then the proxy listens on its broker port again.
        A broker already up (the end of the second of two overlapping kills) is left as it is: a second start would
        leave a process no one stops."""
        if "broker" not in self.down:
            return
        self.broker.start_broker()
        self.client = BrokerClient(self.broker.broker_addr)
        self.down.discard("broker")
        if self.perm != admin.PERM_READ_WRITE:  # a read-only broker restarts from broker.conf, read-write
            admin.update_broker_config(self.client, brokerPermission=self.perm)
        if "namesrv" not in self.down:
            wait_for_route(self.broker.namesrv_addr, self.settings.topic, bool, REGISTER_LIMIT_S)
        self.proxy.open_endpoint("broker")

    def stop_namesrv(self) -> None:
        """Fault: the name server stopped (SIGTERM); the proxy closes its name-server port and connections too.
        One already stopped (two overlapping outages) is left as it is."""
        if "namesrv" in self.down:
            return
        self.proxy.close_endpoint("namesrv")
        self.broker.stop_namesrv()
        self.down.add("namesrv")

    def start_namesrv(self) -> None:
        """The name server started again on its port. A 4.9.8 broker registers every 30 s; instead of waiting, the
        harness makes it register now: UPDATE_BROKER_CONFIG with its own brokerPermission (registerBrokerAll, forced).
        Returns once the route of the run's topic answers, with the proxy listening again. One already running (the
        end of the second of two overlapping outages) is left as it is."""
        if "namesrv" not in self.down:
            return
        self.broker.start_namesrv()
        self.down.discard("namesrv")
        if "broker" not in self.down:
            perm = admin.get_broker_config(self.client)["brokerPermission"]
            admin.update_broker_config(self.client, brokerPermission=perm)
            wait_for_route(self.broker.namesrv_addr, self.settings.topic, bool, REGISTER_LIMIT_S)
        self.proxy.open_endpoint("namesrv")

    def close(self) -> None:
        """The session's broker as the run found it: name server and broker running, read-write."""
        try:
            if "namesrv" in self.down:
                self.start_namesrv()
            if "broker" in self.down:
                self.restart_broker()
            admin.update_broker_config(self.client, brokerPermission=admin.PERM_READ_WRITE)
        finally:
            self.client.close()


@contextlib.contextmanager
def open_real_backend(broker, settings: RunSettings, workload: Workload, perm: int = admin.PERM_READ_WRITE):
    """`with open_real_backend(broker, settings, workload) as backend:` a proxy in front of `broker` (a running
    :class:`~conformance.runner.backends.rocketmq.RocketMQ`) with brokerPermission `perm` during the run, always stopped
    and restored. The proxy injects the workload's faults as the model-backed server does: every kind of
    FAULT_KINDS is one request answered (or left unanswered) in the broker's stead, which the proxy can do; a kind
    it has no answer for (none of FAULT_KINDS) is refused with ValueError."""
    unknown = [f.kind for f in workload.faults if f.kind not in FAULT_ANSWERS]
    if unknown:
        raise ValueError(f"the recording proxy cannot inject {unknown}: no answer for them in FAULT_ANSWERS")
    script = FaultScript(workload)
    with RecordingProxy(broker.namesrv_addr, broker.broker_addr, script.decide) as proxy:
        backend = RealBackend(broker, proxy, settings, perm, script)
        try:
            yield backend
        finally:
            backend.close()
