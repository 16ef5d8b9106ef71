"""The fault script both backends inject a workload's faults with (conformance/runner/faults.py) meets a send-back
fault where the model's prediction does: at the CONSUMER_SEND_MSG_BACK that follows the named delivery of the
message, also when the client retried locally; each fault it injects is a FaultEvent naming its target.

A 4.9.8 Java client whose send-back and fallback send both fail (broker not writeable) retries the message locally
5 s later with reconsumeTimes + 1 and sends back the same commit-log offset again (CC-07,
ConsumeMessageConcurrentlyService 4.9.8 L282-L292, L323-L336). A fault at delivery 0 must not hit that second send-back.
"""

from conformance.codec.codes import RequestCode as Rq
from conformance.codec.headers import encode_send_header_v2
from conformance.codec.message import encode_properties
from conformance.codec.remoting import RemotingCommand
from conformance.history.records import FaultEvent
from conformance.history.workload import Fault, MessageSpec, Workload
from conformance.runner.faults import FaultScript

KEYS = {164: "m0", 300: "m1"}  # the message key by commit-log offset, as a backend knows it


def call(script: FaultScript, request: RemotingCommand, now_ms: float = 0.0) -> str | None:
    return script.decide(request, KEYS.get, now_ms)


def send_back(offset: int) -> RemotingCommand:
    return RemotingCommand(Rq.CONSUMER_SEND_MSG_BACK, 1, ext_fields={"offset": str(offset), "group": "G"})


def fallback_send(key: str, topic: str = "%RETRY%G") -> RemotingCommand:
    fields = {"producerGroup": "CLIENT_INNER_PRODUCER", "topic": topic, "defaultTopic": "TBW102",
              "defaultTopicQueueNums": 4, "queueId": 0, "sysFlag": 0, "bornTimestamp": 1, "flag": 0,
              "properties": encode_properties({"UNIQ_KEY": key, "RECONSUME_TIME": "1"}), "reconsumeTimes": 1,
              "unitMode": False, "batch": False}
    return RemotingCommand(Rq.SEND_MESSAGE_V2, 2, ext_fields=encode_send_header_v2(fields))


def workload(*faults: Fault) -> Workload:
    return Workload((MessageSpec("m0", script=("EXCEPTION",) * 3), MessageSpec("m1", script=("EXCEPTION",))),
                    faults)


def test_a_local_retry_is_the_next_delivery_not_the_same_one():
    script = FaultScript(workload(Fault("broker_not_writeable", "m0", 0)))
    assert call(script, send_back(164)) == "broker_not_writeable"
    assert call(script, fallback_send("m0")) == "broker_not_writeable"
    # Delivery 1, the local retry: the same offset, whose stored copy still says reconsumeTimes 0.
    assert call(script, send_back(164)) is None
    assert call(script, fallback_send("m0")) is None


def test_a_fault_names_its_message_and_delivery():
    script = FaultScript(workload(Fault("send_back_error", "m0", 1), Fault("send_back_timeout", "m1", 0)))
    assert [call(script, send_back(164)) for _ in range(3)] == [None, "send_back_error", None]
    assert call(script, send_back(300), 7.5) == "send_back_timeout"
    assert call(script, send_back(999)) is None  # an offset the store does not hold
    assert call(script, fallback_send("m0", topic="TopicTest")) is None  # not a send to %RETRY%
    assert script.events == [FaultEvent("send_back_error", 0.0, None, "m0#1"),
                             FaultEvent("send_back_timeout", 7.5, None, "m1#0")]


def test_a_pull_fault_hits_the_numbered_pull():
    script = FaultScript(workload(Fault("pull_error", "m0", 2)))
    pull = RemotingCommand(Rq.PULL_MESSAGE, 3)
    assert [call(script, pull, float(n)) for n in range(4)] == [None, None, "pull_error", None]
    assert script.events == [FaultEvent("pull_error", 2.0, None, str(int(Rq.PULL_MESSAGE)))]


def test_a_first_refused_fallback_refuses_only_the_first_attempt():
    """RS-14's fault: the send-back answers an error, the fallback's first attempt is refused, the producer's retry
    of it is stored; the next delivery's send-back is not faulted."""
    script = FaultScript(workload(Fault("fallback_first_refused", "m0", 0)))
    assert call(script, send_back(164)) == "fallback_first_refused"
    assert call(script, fallback_send("m0")) == "broker_not_writeable"
    assert call(script, fallback_send("m0")) is None
    assert call(script, send_back(164)) is None
    assert call(script, fallback_send("m0")) is None
