"""Each real client's documented timers, as values, and what they bound: how long after a fault (injected, or seen
on the wire) the client may take to be back, so the runner knows how long to wait and the checker how late a retry
may be (spec/11-guarantees.md, SY-06 and SY-10, states the same table).

A `Disturbance` is one thing that may hold a client up — a fault the backend recorded (`FaultEvent`) or a sign of
one on the wire: a send-back unanswered or refused, a failed fallback send to %RETRY%, a pull refused
SUBSCRIPTION_NOT_EXIST (the broker unregistered the consumer; it is back with the client's next heartbeat) or
otherwise failed — with the time by which the client's timers say it is back (`end_ms`).
"""

from __future__ import annotations

from collections.abc import Iterable

from attrs import frozen

from conformance.codec.codes import CONSUMER_SEND_MSG_BACK, GET_ROUTEINFO_BY_TOPIC, PULL_MESSAGE, ResponseCode
from conformance.codec.headers import SEND_FIELDS
from conformance.history.records import FaultEvent, WireRequest

JAVA_BASE = "https://github.com/apache/rocketmq/blob/rocketmq-all-4.9.8/client/src/main/java/org/apache/rocketmq/client"
CPP_BASE = "https://github.com/apache/rocketmq-client-cpp/blob/1.2.3/src"
ONS_BASE = "https://github.com/ali-sdk/ali-ons/blob/v3.12.0/lib"
GO_BASE = "https://github.com/apache/rocketmq-client-go/blob/v2.1.2"

# Slack on every bound: the broker's 100 ms delay tick, a pull round trip and the adapter's, on a loaded 2-core
# machine (what SY-06 allowed before the bounds knew any timer).
SLACK_MS = 3000.0


@frozen
class Timer:
    """One timer of a client: its value in ms (None: the client has no such timer) and the upstream source line."""

    value_ms: float | None
    source: str

    @property
    def ms(self) -> float:
        """The value, 0 for a timer the client does not have (it never waits on it)."""
        return self.value_ms or 0.0


@frozen
class ClientTimers:
    """The timers of one client (name, version, as its adapter reports them) that bound its recovery from a fault."""

    name: str
    version: str
    pull_backoff: Timer  # the next pull of a queue after a failed one
    heartbeat: Timer  # period of HEART_BEAT (what re-registers an unregistered consumer)
    route_refresh: Timer  # period of the topic route query
    offset_persist: Timer  # period of UPDATE_CONSUMER_OFFSET
    rebalance: Timer  # period of the rebalance
    local_retry: Timer  # a message consumed again locally after its send-back and fallback both failed
    orderly_suspend: Timer  # an orderly queue consumed again after a failed answer
    send_back_timeout: Timer  # CONSUMER_SEND_MSG_BACK's RPC timeout
    fallback_send: Timer  # the fallback send to %RETRY% (producer timeout) after a failed send-back
    pull_timeout: Timer  # a pull whose reply was lost fails this long after it was sent
    start_rebalance: Timer  # a started instance's first rebalance (and so its first pulls), from its start


JAVA = ClientTimers(
    "rocketmq-client-java", "4.9.8",
    Timer(1000, f"{JAVA_BASE}/ClientConfig.java#L58-L58"),
    Timer(30000, f"{JAVA_BASE}/ClientConfig.java#L53-L53"),
    Timer(30000, f"{JAVA_BASE}/ClientConfig.java#L49-L49"),
    Timer(5000, f"{JAVA_BASE}/ClientConfig.java#L57-L57"),
    Timer(20000, f"{JAVA_BASE}/impl/consumer/RebalanceService.java#L25-L27"),
    Timer(5000, f"{JAVA_BASE}/impl/consumer/ConsumeMessageConcurrentlyService.java#L323-L336"),
    Timer(1000, f"{JAVA_BASE}/consumer/DefaultMQPushConsumer.java#L251-L251"),
    Timer(5000, f"{JAVA_BASE}/impl/consumer/DefaultMQPushConsumerImpl.java#L527-L528"),
    Timer(3000, f"{JAVA_BASE}/producer/DefaultMQProducer.java#L100-L100"),
    # 30 s, found by the response-table scan (every 1 s) only 1 s after it expired.
    Timer(32000, f"{JAVA_BASE}/impl/consumer/DefaultMQPushConsumerImpl.java#L101-L102"),
    Timer(0, f"{JAVA_BASE}/impl/consumer/DefaultMQPushConsumerImpl.java#L666-L667"),
)
CPP = ClientTimers(
    "rocketmq-client-cpp", "1.2.3",
    Timer(0, f"{CPP_BASE}/consumer/DefaultMQPushConsumer.cpp#L169-L177"),
    Timer(30000, f"{CPP_BASE}/MQClientFactory.cpp#L766-L772"),
    Timer(30000, f"{CPP_BASE}/MQClientFactory.cpp#L85-L110"),
    Timer(5000, f"{CPP_BASE}/MQClientFactory.cpp#L736-L749"),
    Timer(10000, f"{CPP_BASE}/MQClientFactory.cpp#L837-L845"),
    Timer(None, f"{CPP_BASE}/consumer/DefaultMQPushConsumer.cpp#L247-L254"),  # a failed send-back is dropped
    Timer(100, f"{CPP_BASE}/consumer/ConsumeMessageOrderlyService.cpp#L192-L197"),
    Timer(3000, f"{CPP_BASE}/consumer/DefaultMQPushConsumer.cpp#L247-L254"),
    Timer(None, f"{CPP_BASE}/consumer/DefaultMQPushConsumer.cpp#L247-L254"),  # no fallback send
    # The transport a timed-out send-back closes fails no pull in flight on it: each waits for this timer.
    Timer(30000, f"{CPP_BASE}/consumer/DefaultMQPushConsumer.cpp#L198-L205"),
    Timer(0, f"{CPP_BASE}/consumer/DefaultMQPushConsumer.cpp#L377-L377"),
)
ALI_ONS = ClientTimers(
    "ali-ons", "3.12.0",
    Timer(3000, f"{ONS_BASE}/consumer/mq_push_consumer.js#L31-L31"),
    Timer(30000, f"{ONS_BASE}/client_config.js#L10-L10"),
    Timer(30000, f"{ONS_BASE}/client_config.js#L9-L9"),
    Timer(5000, f"{ONS_BASE}/client_config.js#L11-L11"),
    Timer(10000, f"{ONS_BASE}/client_config.js#L12-L12"),
    Timer(5000, f"{ONS_BASE}/consumer/mq_push_consumer.js#L311-L311"),
    Timer(None, f"{ONS_BASE}/consumer/mq_push_consumer.js#L31-L34"),  # no orderly listener
    Timer(3000, f"{ONS_BASE}/consumer/mq_push_consumer.js#L778-L778"),
    # Two attempts of sendMsgTimeout 3000 (a new one starts only while less than 4 s have passed).
    Timer(6000, f"{ONS_BASE}/producer/mq_producer.js#L198-L199"),
    Timer(30000, f"{ONS_BASE}/consumer/mq_push_consumer.js#L33-L33"),
    Timer(0, f"{ONS_BASE}/mq_client.js#L75-L75"),
)
GO = ClientTimers(
    "rocketmq-client-go", "2.1.2",
    Timer(3000, f"{GO_BASE}/consumer/consumer.go#L44-L44"),
    Timer(30000, f"{GO_BASE}/internal/client.go#L50-L50"),
    Timer(30000, f"{GO_BASE}/internal/client.go#L47-L47"),
    # The first persist 10 s after the start, then every 5 s.
    Timer(5000, f"{GO_BASE}/internal/client.go#L503-L510"),
    Timer(20000, f"{GO_BASE}/internal/client.go#L56-L56"),
    # A failed send-back: reconsumeTimes + 1, the same goroutine sleeps 5 s and consumes it again (no fallback send).
    Timer(5000, f"{GO_BASE}/consumer/push_consumer.go#L1200-L1205"),
    # The orderly context's SuspendCurrentQueueTimeMillis is -1 unless the listener sets it: a sleep of nothing.
    Timer(0, f"{GO_BASE}/consumer/push_consumer.go#L1327-L1331"),
    Timer(3000, f"{GO_BASE}/consumer/push_consumer.go#L922-L922"),
    Timer(None, f"{GO_BASE}/consumer/push_consumer.go#L1184-L1192"),  # no fallback send
    Timer(30000, f"{GO_BASE}/internal/client.go#L778-L778"),
    # Orderly: the rebalance locks a new queue before its process queue exists, so the lock marks nothing and the
    # first pull waits the 3 s error back-off, by when the lock tick (1 s after the start) has marked the queue.
    Timer(3000, f"{GO_BASE}/consumer/consumer.go#L714-L728"),
)
CLIENTS = {(c.name, c.version): c for c in (JAVA, CPP, ALI_ONS, GO)}
REFERENCE = JAVA


def get_client_timers(client: dict) -> ClientTimers:
    """The timers of the client the adapter named ({"name", "version"}): its own version's, else another version
    of the same client's, else the reference's (RocketMQ's Java client 4.9.8)."""
    name = client.get("name", "")
    found = CLIENTS.get((name, client.get("version", "")))
    return found or next((c for c in CLIENTS.values() if c.name == name), REFERENCE)


def get_recovery_ms(timers: ClientTimers, cause: str) -> float:
    """How long after `cause` began (after it ended, for a fault that lasts) the client may take to be back: to
    have consumed again what the cause held up, by its timers alone (SLACK_MS comes on top).

    A failed send-back: the fallback send's budget, then the local retry (a client with neither drops the message:
    nothing comes back). Unanswered: its RPC timeout first; the Java client then closes the socket, failing its
    pulls in flight (a pull back-off), while cpp's pulls in flight on the closed transport wait out their own
    timeout. An unregistered consumer: its next heartbeat, then a pull back-off. No route for the subscribed topic
    (an instance started while the broker was down, so the name server had none): the next route query, the next
    rebalance, then a pull back-off. A fault the schedule injected: by its kind (get_fault_recovery_ms)."""
    refused = timers.fallback_send.ms + timers.local_retry.ms if timers.local_retry.value_ms is not None else 0.0
    if cause in ("send_back_error", "broker_not_writeable", "fallback_first_refused", "fallback_failed"):
        return refused
    if cause == "send_back_timeout":
        stalled = timers.pull_timeout.ms if timers.pull_backoff.ms == 0 else timers.pull_backoff.ms
        return timers.send_back_timeout.ms + max(refused, stalled)
    if cause in ("pull_error", "pull_failed"):
        return timers.pull_backoff.ms
    if cause == "unregistered":
        return timers.heartbeat.ms + timers.pull_backoff.ms
    if cause == "route_missing":
        return timers.route_refresh.ms + timers.rebalance.ms + timers.pull_backoff.ms
    return get_fault_recovery_ms(timers, cause)


def get_fault_recovery_ms(timers: ClientTimers, kind: str) -> float:
    """How long after a scheduled fault of `kind` ended the client may take to be back. The broker writeable again
    or the name server back: a pull back-off (pulls went on meanwhile on the cached route; what the read-only broker
    refused shows on the wire as its own disturbance). A client restarted: its first rebalance, then a pull back-off
    (the instance a kill left registered is unregistered when its socket closes). A broker restarted on its store,
    or an unknown kind: the longer of a heartbeat (the restarted broker knows no consumer until one) and a lost pull
    reply, then a pull back-off."""
    if kind in ("broker_read_only", "namesrv_stop"):
        return timers.pull_backoff.ms
    if kind in ("client_restart", "client_kill"):
        return timers.start_rebalance.ms + timers.pull_backoff.ms
    return max(timers.heartbeat.ms, timers.pull_timeout.ms) + timers.pull_backoff.ms


@frozen
class Disturbance:
    """One thing that may hold the client up: its cause (a fault kind, or a wire sign: "send_back_timeout",
    "send_back_error", "fallback_failed", "unregistered", "pull_failed"), when it began, and when the client's timers
    say it is back (`end_ms`, SLACK_MS not included)."""

    cause: str
    start_ms: float
    end_ms: float


# A pull answered with one of these (or not yet answered) is no failure.
PULL_ANSWERS = frozenset({None, ResponseCode.SUCCESS, ResponseCode.PULL_NOT_FOUND, ResponseCode.PULL_RETRY_IMMEDIATELY,
                          ResponseCode.PULL_OFFSET_MOVED})
SEND_TOPIC_FIELDS = SEND_FIELDS["topic"]


def get_wire_cause(request: WireRequest, refused_before: bool) -> str | None:
    """The disturbance `request`'s answer shows (None: none). A pull refused SUBSCRIPTION_NOT_EXIST begins an
    unregistered spell only when the pull before it was not refused too (`refused_before`). A route query refused
    for a topic the client subscribes (not a %RETRY% topic, which exists only after the first heartbeat, nor the
    default TBW102) leaves the client without the topic's queues until its next route query."""
    if request.code == CONSUMER_SEND_MSG_BACK and request.response_code != ResponseCode.SUCCESS:
        return "send_back_timeout" if request.response_code is None else "send_back_error"
    topic_field = SEND_TOPIC_FIELDS.get(request.code)
    if topic_field and request.fields.get(topic_field, "").startswith("%RETRY%") \
            and request.response_code != ResponseCode.SUCCESS and not request.flag & 2:
        return "fallback_failed"
    if request.code == GET_ROUTEINFO_BY_TOPIC:
        topic = request.fields.get("topic", "")
        missing = request.response_code not in (None, ResponseCode.SUCCESS)
        return "route_missing" if missing and topic and not topic.startswith("%") and topic != "TBW102" else None
    if request.code != PULL_MESSAGE or request.response_code in PULL_ANSWERS:
        return None
    if request.response_code == ResponseCode.SUBSCRIPTION_NOT_EXIST:
        return None if refused_before else "unregistered"
    return "pull_failed"


def get_disturbances(client: dict, faults: Iterable[FaultEvent], requests: Iterable[WireRequest]) -> list[Disturbance]:
    """Every disturbance of a run so far — each recorded fault and each wire sign of one — with its end by the
    client's timers (get_recovery_ms)."""
    timers = get_client_timers(client)
    found = [Disturbance(f.kind, f.time_ms, (f.end_ms or f.time_ms) + get_recovery_ms(timers, f.kind))
             for f in faults]
    refused = False
    for request in sorted(requests, key=lambda r: r.time_ms):
        cause = get_wire_cause(request, refused)
        if request.code == PULL_MESSAGE and request.response_code is not None:
            refused = request.response_code == ResponseCode.SUBSCRIPTION_NOT_EXIST
        if cause is not None:
            found.append(Disturbance(cause, request.time_ms, request.time_ms + get_recovery_ms(timers, cause)))
    return found


def get_quiet_end_ms(client: dict, faults: Iterable[FaultEvent], requests: Iterable[WireRequest]) -> float:
    """Until when (ms, the requests' clock) a run must keep waiting for the client to recover from every disturbance
    so far, SLACK_MS included; 0.0 with none."""
    return max((d.end_ms + SLACK_MS for d in get_disturbances(client, faults, requests)), default=0.0)


def get_latest_ms(due_ms: float, disturbances: list[Disturbance]) -> float:
    """The latest a retry due at `due_ms` may reach the listener: due, or the end of every disturbance that began
    before it would have been consumed (by due + SLACK_MS) and ends later; SLACK_MS on top."""
    ends = [d.end_ms for d in disturbances if d.start_ms <= due_ms + SLACK_MS]
    return max([due_ms, *ends]) + SLACK_MS
