"""A workload's faults, request by request, as both backends inject them: the model-backed server
(conformance/runner/server/handlers.py, through `Faults.script`) and the recording proxy in front of a real broker
(conformance/runner/backends/recording_proxy.py). One `FaultScript` decides which request a fault hits, records each
fault it injects as a `FaultEvent`, and `make_fault_answer` is the answer both give to it.
"""

from __future__ import annotations

import itertools
from collections.abc import Callable

from conformance.codec.codes import RequestCode, ResponseCode
from conformance.codec.headers import decode_send_header
from conformance.codec.message import decode_properties
from conformance.codec.remoting import RemotingCommand, make_response
from conformance.history.records import FaultEvent
from conformance.history.workload import Workload

# The answer to a request a fault hits, by kind (history/workload.py's FAULT_KINDS); None: never answered (the client
# times out). "fallback_first_refused" answers the send-back; the fallback send it refuses is "broker_not_writeable".
FAULT_ANSWERS: dict[str, int | None] = {
    "send_back_error": ResponseCode.SYSTEM_ERROR,
    "send_back_timeout": None,
    "broker_not_writeable": ResponseCode.NO_PERMISSION,
    "fallback_first_refused": ResponseCode.SYSTEM_ERROR,
    "pull_error": ResponseCode.SYSTEM_ERROR,
}
SEND_CODES = (RequestCode.SEND_MESSAGE, RequestCode.SEND_MESSAGE_V2)

# The message key (UNIQ_KEY) of a commit-log offset, None for an offset the backend does not know.
KeyOfOffset = Callable[[int], str | None]


def make_fault_answer(request: RemotingCommand, kind: str) -> RemotingCommand | None:
    """The response to `request` hit by the fault `kind`, its remark naming the fault; None: leave it unanswered."""
    code = FAULT_ANSWERS[kind]
    return None if code is None else make_response(request, code, f"injected fault: {kind}")


class FaultScript:
    """The workload's faults, request by request (called on the serving loop), and the faults it injected (`events`).

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
        self.events: list[FaultEvent] = []

    def decide(self, request: RemotingCommand, key_of_offset: KeyOfOffset, now_ms: float) -> str | None:
        """The fault kind that hits `request` (None: none), recorded as a FaultEvent at `now_ms` (the backend's
        clock: `time.monotonic()` ms)."""
        kind, target = self.get_fault(request, key_of_offset)
        if kind is not None:
            self.events.append(FaultEvent(kind, now_ms, None, target))
        return kind

    def get_fault(self, request: RemotingCommand, key_of_offset: KeyOfOffset) -> tuple[str | None, str]:
        """(kind, target) of the fault that hits `request`: target "<key>#<delivery>" for a send-back, else the
        request code."""
        if request.code == RequestCode.PULL_MESSAGE:
            number = next(self.pulls)
            hit = any(f.kind == "pull_error" and f.delivery == number for f in self.workload.faults)
            return ("pull_error" if hit else None), str(int(request.code))
        if request.code in SEND_CODES:
            return self.get_fallback_fault_kind(request), str(int(request.code))
        if request.code != RequestCode.CONSUMER_SEND_MSG_BACK:
            return None, ""
        key = key_of_offset(int(request.header("offset", "-1")))
        if key is None:
            return None, ""
        delivery = self.send_backs.get(key, 0)
        self.send_backs[key] = delivery + 1
        fault = self.workload.get_send_back_fault(key, delivery)
        kind = None if fault is None else fault.kind
        (self.read_only_keys.add if kind == "broker_not_writeable" else self.read_only_keys.discard)(key)
        (self.refuse_once_keys.add if kind == "fallback_first_refused" else self.refuse_once_keys.discard)(key)
        return kind, f"{key}#{delivery}"

    def get_fallback_fault_kind(self, request: RemotingCommand) -> str | None:
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
