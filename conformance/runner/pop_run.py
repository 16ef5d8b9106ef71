"""One 5.x workload (conformance/history/pop_workload.py) through a real 5.x consumer against RocketMQ 5.3.3, recorded
as a `PopRun`.

The backend is a `PopBackend` (conformance/runner/backends/pop_backend.py): the run creates a fresh topic (FIFO when
the workload is) and group (its retryMaxTimes and retry policy, orderly for FIFO), reads the settings the proxy
hands the group's gRPC consumers (maxAttempts, backoff, FIFO), starts the consumer, sends the messages (a FIFO one in
its message group, `__SHARDINGKEY`), answers each delivery by the script, and waits until every message is settled
(consumed, or dead-lettered, or a poison message delivered `get_delivery_cap` times) and nothing more came for
QUIET_S, at most RUN_LIMIT_S. A fault of the workload kills or stops the consumer right after the delivery it names
and starts a new one (same group and instance). Then the consumer is stopped and the retry topic and %DLQ%<group>
are read.
"""

from __future__ import annotations

import itertools
import time
from collections.abc import Callable

from attrs import evolve

from conformance.codec import pop
from conformance.history.pop_records import GroupSettings, PopFinal, PopRun
from conformance.history.pop_workload import LASTING_KINDS, POP_TAG, PULL_TAG, RESTART_KINDS, PopFault, PopWorkload
from conformance.history.records import FaultEvent
from conformance.runner.clients.driver import AdapterConsumer, OutcomeScript, StartRequest

OpenClient = Callable[[StartRequest, OutcomeScript, "str | None"], AdapterConsumer]
QUIET_S = 3.0
# A poison message through the proxy needs maxAttempts receives of ~(invisible + revive lag 2-9 s + the proxy's
# 4 s hold, differential/FACTS-5.3.3.md) each; the remoting consumer's delay past maxReconsumeTimes is 30 s (PC-02),
# then up to 9 s of revive lag and its 15 s pop hold.
RUN_LIMIT_S = 90.0
DLQ_POLL_S = 1.0
# A SimpleConsumer's long polling: the proxy's minimum (grpcClientConsumerMinLongPollingTimeoutMillis, 5 s); shorter,
# the proxy answers ILLEGAL_POLLING_TIME when the request's deadline leaves less than that.
AWAIT_MS = 5000
POLL_S = 0.05
_ids = itertools.count()


def get_delivery_cap(workload: PopWorkload, settings: GroupSettings) -> int:
    """How many deliveries of a poison message end the wait for it: maxAttempts through the proxy (then its dead
    letter); the remoting POP consumer never dead-letters (PC-02), so one past its script (at maxReconsumeTimes its
    next delay is the first POP delay level longer than the message's age)."""
    if workload.api == "pop":
        return max(len(m.script) for m in workload.messages) + 1
    return settings.max_attempts


def set_up(backend, workload: PopWorkload, prefix: str) -> tuple[str, str, GroupSettings]:
    """A fresh topic and group with the workload's settings; (topic, group, the settings the proxy gives)."""
    stamp = f"{time.monotonic_ns() % 10**9}{next(_ids)}"
    topic, group = f"{prefix}T{stamp}", f"{prefix}G{stamp}"
    backend.create_topic(topic, 2 if workload.get_pulled_keys() else 1, workload.fifo)
    backend.set_group(group, workload.retry_max_times, workload.policy, workload.fifo)
    given = backend.open_consumer(group, topic)
    return topic, group, GroupSettings(given.max_attempts, given.customized_ms, given.exponential_ms, given.fifo)


def send_messages(backend, workload: PopWorkload, topic: str) -> None:
    """Each message once, in order, to queue 0 (a FIFO one in its message group; beside a pulling consumer, each to
    its consumer's queue and tag)."""
    for message in workload.messages:
        queue_id, tag = workload.get_route(message)
        code = backend.send(topic, queue_id, message.key.encode(), message.key, tag,
                            message_group=message.message_group if workload.fifo else None)
        if code != 0:
            raise RuntimeError(f"send of {message.key} to {topic} answered {code}")


def make_request(workload: PopWorkload, topic: str, group: str, instance: str, namesrv: str, endpoints: str):
    config = {"invisibleMs": workload.invisible_ms, "batch": 1, "awaitMs": AWAIT_MS}
    if workload.api == "pop":
        config = {"invisibleMs": workload.invisible_ms, "maxReconsumeTimes": workload.max_reconsume_times,
                  "clientRebalance": False, "consumeMessageBatchMaxSize": 1}
        mode = "orderly" if workload.fifo else "concurrently"
        expression = POP_TAG if workload.get_pulled_keys() else "*"
        return StartRequest(namesrv, group, topic, f"{instance}-1pop" if expression != "*" else instance, mode=mode,
                            config=config, api="push", fifo=workload.fifo, expression=expression)
    return StartRequest(namesrv, group, topic, instance, config=config, api=workload.api, endpoints=endpoints,
                        fifo=workload.fifo)


def make_pull_request(request: StartRequest) -> StartRequest:
    """The pulling consumer beside the popping one (PC-04): the same client with client rebalance on (it pulls and
    sends failures back, 4.x's road), subscribing PULL_TAG, reading queue 0 of each topic whoever else is in the
    group (the topic's queue 0 and the one queue of %RETRY%{group}), each pull carrying its subscription (the broker
    filters by the group's latest one otherwise: ConsumerGroupInfo.updateSubscription). It starts first, so that the
    popping client's QUERY_ASSIGNMENT of %RETRY%{group} (PULL, averaged over the sorted client ids) leaves that
    queue to it; the popping client pops every queue (PC-05) and takes only POP_TAG."""
    config = {key: request.config[key] for key in ("maxReconsumeTimes", "consumeMessageBatchMaxSize")}
    return evolve(request, instance=request.instance.replace("-1pop", "-0pull"), expression=PULL_TAG,
                  config={**config, "clientRebalance": True, "queueIds": [0], "postSubscriptionWhenPull": True})


def is_settled(workload: PopWorkload, consumers: list[AdapterConsumer], cap: int, dead: set[str],
               now_ms: float) -> bool:
    """Every message consumed by a final answer of its script (a slow one once its time passed), or a poison one
    dead-lettered (through the proxy) or delivered `cap` times (the remoting POP consumer)."""
    deliveries = [(d, c) for c in consumers for d in c.deliveries]
    for message in workload.messages:
        seen = [(d, c) for d, c in deliveries if d.uniq_key == message.key]
        if message.forever and (message.key not in dead if workload.api != "pop" else len(seen) < cap):
            return False
        if not message.forever and not any(is_done(workload, d, c, now_ms) for d, c in seen):
            return False
    return True


def is_done(workload: PopWorkload, delivery, consumer: AdapterConsumer, now_ms: float) -> bool:
    """The delivery consumed its message for good: a final answer (a slow one once its time passed), and a
    SimpleConsumer's ack that the proxy answered OK (a refused or unanswered one leaves the message to come back)."""
    answer = workload.get_answer(delivery.uniq_key, delivery.seen_before)
    slow = answer == "SLOW" and now_ms < delivery.time_ms + workload.get_late_ms()
    acked = workload.api != "simple" or any(
        s.number == delivery.number and s.action == "ack" and s.code == "OK" for s in consumer.settlements)
    return workload.is_final(answer) and not slow and acked


class PopRunner:
    """Runs one workload: the consumers it started (one more after each fault), the faults it made."""

    def __init__(self, open_client: OpenClient, workload: PopWorkload, request: StartRequest, log_dir: str | None,
                 target):
        self.open_client, self.workload, self.request, self.log_dir = open_client, workload, request, log_dir
        self.target = target
        self.consumers: list[AdapterConsumer] = []
        self.faults: list[FaultEvent] = []
        self.pending = list(workload.faults)
        self.lasting: list[tuple[float, PopFault, float]] = []  # (due end, fault, began ms) of a fault still on

    def start_consumer(self) -> AdapterConsumer:
        consumer = self.open_client(self.request, self.workload.make_script(), self.log_dir)
        if self.consumers:  # the script counts deliveries across restarts (and beside a pulling consumer)
            consumer.seen = self.consumers[-1].seen
        self.consumers.append(consumer)
        consumer.start()
        return consumer

    def start_puller(self) -> AdapterConsumer:
        """The pulling consumer beside the popping one (make_pull_request), started before it: it stands first in
        `consumers` (a fault acts on the last) and counts deliveries with the popping one."""
        consumer = self.open_client(make_pull_request(self.request), self.workload.make_script(), self.log_dir)
        self.consumers.append(consumer)
        consumer.start()
        return consumer

    def poll_faults(self) -> None:
        """A fault whose delivery happened: restart or kill the proxy with its broker under the live consumer, make
        the broker read-only or the name server mute for the fault's duration, or kill or stop the consumer and
        start another; a lasting fault whose duration passed ends."""
        self.end_lasting(time.monotonic())
        live = self.consumers[-1]
        for fault in list(self.pending):
            if any(d.uniq_key == fault.key and d.seen_before == fault.delivery for d in live.deliveries):
                self.pending.remove(fault)
                began = time.monotonic() * 1000
                if fault.kind in LASTING_KINDS:
                    self.target.set_fault(fault.kind, True)
                    self.lasting.append((time.monotonic() + fault.duration_ms / 1000, fault, began))
                    continue
                if fault.kind in RESTART_KINDS:
                    self.target.restart() if fault.kind == "proxy_restart" else self.target.crash()
                else:
                    live.kill() if fault.kind == "client_kill" else live.stop()
                    live = self.start_consumer()
                self.faults.append(FaultEvent(fault.kind, began, time.monotonic() * 1000, fault.key))

    def end_lasting(self, now_s: float) -> None:
        """End each lasting fault due by `now_s` (every one at the run's end: `now_s` infinite)."""
        for entry in [e for e in self.lasting if e[0] <= now_s]:
            self.lasting.remove(entry)
            _due, fault, began = entry
            self.target.set_fault(fault.kind, False)
            self.faults.append(FaultEvent(fault.kind, began, time.monotonic() * 1000, fault.key))

    def get_restart_s(self) -> float:
        """Seconds the run spent restarting (or crashing and starting) the proxy with its broker."""
        return sum((f.end_ms - f.time_ms) / 1000 for f in self.faults if f.kind in RESTART_KINDS and f.end_ms)

    def wait(self, cap: int) -> None:
        """Until every message is settled and QUIET_S passed without a delivery, at most RUN_LIMIT_S beside the time
        spent restarting the broker (a restart slowed by load took 78 s of a 90 s run, leaving the message it held no
        time to come back); the DLQ is read every DLQ_POLL_S while a poison message is not settled."""
        started, quiet_since, count, dead, read_at = time.monotonic(), time.monotonic(), 0, set(), 0.0
        while time.monotonic() - started < RUN_LIMIT_S + self.get_restart_s():
            self.poll_faults()
            now_count = sum(len(c.deliveries) for c in self.consumers)
            if now_count != count:
                count, quiet_since = now_count, time.monotonic()
            settled = is_settled(self.workload, self.consumers, cap, dead, time.monotonic() * 1000)
            if settled and time.monotonic() - quiet_since >= QUIET_S:
                return
            if not settled and self.workload.get_poison_keys() - dead and time.monotonic() - read_at >= DLQ_POLL_S:
                dlq = pop.get_dlq_topic(self.request.group)
                dead, read_at = {key for key, _times in read_copies(self.target.backend, dlq)}, time.monotonic()
            time.sleep(POLL_S)

    def stop_all(self) -> None:
        try:
            self.end_lasting(float("inf"))
        finally:
            for consumer in self.consumers:
                consumer.stop()


def read_copies(backend, topic: str) -> tuple[tuple[str, int], ...]:
    """(UNIQ_KEY, reconsumeTimes) of every message of the topic's queue 0 (none when the topic does not exist)."""
    return tuple((m.properties.get("UNIQ_KEY", m.msg_id), m.reconsume_times) for m in backend.read_topic(topic))


def read_final(backend, group: str, topic: str, drops: tuple[tuple[int, int], ...] = ()) -> PopFinal:
    """The retry topics and the DLQ; the keys at the (queue, offset) `drops` of `topic` (what the broker's revive
    dropped)."""
    dropped = tuple(m.properties.get("UNIQ_KEY", m.msg_id) for queue_id in sorted({q for q, _o in drops})
                    for m in backend.read_topic(topic, queue_id) if (queue_id, m.queue_offset) in drops)
    return PopFinal(read_copies(backend, pop.get_retry_topic(group, topic)),
                    read_copies(backend, pop.get_dlq_topic(group)),
                    read_copies(backend, pop.RETRY_PREFIX + group), dropped)


def read_final_again(target, group: str, topic: str) -> PopFinal:
    """The final read (with what the broker's revive dropped, where the target can tell: RocketMQ 5.3.3's log); once
    more on a new connection when the broker closed the old one (idle 120 s in a long run, or a restart)."""
    drops = target.get_revive_drops(topic) if hasattr(target, "get_revive_drops") else ()
    try:
        return read_final(target.backend, group, topic, drops)
    except (ConnectionError, OSError):
        return read_final(target.reconnect(), group, topic, drops)


def run_pop_workload(target, open_client: OpenClient, workload: PopWorkload, log_dir: str | None,
                     prefix: str = "c5", long_polling_ms: int = 20_000, consumers: list | None = None) -> PopRun:
    """The workload through one client against `target` (its `backend`, a PopBackend with a `client` for sends,
    `namesrv`, `endpoints`, and `restart()` for a proxy_restart fault; its proxy holds a receive at most
    `long_polling_ms`); always stops every consumer it started (and adds each to `consumers`, for its transcript).
    The run starts on new connections: the broker closes one idle for 120 s, as the last run's may be (a client's
    install between runs, `npm ci`, took that long in a CI rehearsal)."""
    backend = target.reconnect()
    topic, group, settings = set_up(backend, workload, prefix)
    request = make_request(workload, topic, group, f"{prefix}-{group[-8:]}", target.namesrv, target.endpoints)
    runner = PopRunner(open_client, workload, request, log_dir, target)
    if consumers is not None:
        runner.consumers = consumers
    try:
        if workload.get_pulled_keys():
            runner.start_puller()
        runner.start_consumer()
        sent = time.monotonic() * 1000
        send_messages(backend, workload, topic)
        runner.wait(get_delivery_cap(workload, settings))
    finally:
        runner.stop_all()
    ended = time.monotonic() * 1000
    consumers = runner.consumers
    deliveries, settlements = get_numbered(consumers)
    return PopRun({**consumers[0].client, "api": workload.api}, workload, group, topic, settings, deliveries,
                  settlements, tuple(e for c in consumers for e in c.startup_errors),
                  tuple(e for c in consumers for e in c.retried_errors),
                  tuple(e for c in consumers for e in c.errors), tuple(runner.faults),
                  read_final_again(target, group, topic), sent, ended, long_polling_ms=long_polling_ms,
                  backend=target.backend.name)


# Each adapter numbers its deliveries from 1: the n-th consumer's numbers are shifted by n * NUMBERS_PER_CONSUMER.
NUMBERS_PER_CONSUMER = 100_000


def get_numbered(consumers: list[AdapterConsumer]) -> tuple[tuple, tuple]:
    """Every consumer's deliveries (in time order) and settlements, numbered once across restarts."""
    deliveries, settlements = [], []
    for index, consumer in enumerate(consumers):
        shift = index * NUMBERS_PER_CONSUMER
        deliveries += [evolve(d, number=d.number + shift) for d in consumer.deliveries]
        settlements += [evolve(s, number=s.number + shift) for s in consumer.settlements]
    return tuple(sorted(deliveries, key=lambda d: d.time_ms)), tuple(settlements)
