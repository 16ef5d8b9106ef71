"""The model's prediction of the client half: what RocketMQ 4.9.8's push consumer would do with a workload.

The same workload a real client runs (conformance/history/workload.py) drives the model's whole system — its client half
(the 4.9.8 Java consumer) and its broker half, with the run's broker settings — to quiescence. What a client
cannot choose differently without deviating is read off: per message the reconsumeTimes of every delivery in
order and its final fate, and the header of every CONSUMER_SEND_MSG_BACK it sends.
"""

from __future__ import annotations

from collections import defaultdict

from attrs import frozen

from conformance.history.records import RunSettings
from model.broker.delay_timer import DELAY_FOR_A_WHILE
from model.broker.send_back import compute_send_back_request
from model.client.consumer import ConsumeRequest
from model.client.listener import ConsumeStatus, ListenerResult
from model.client.observations import ConsumeProcessed, DlqArrival, ListenerInvoked, SendBackOutcome
from model.client.orderly import OrderlyResult, OrderlyStatus
from model.client.orderly_service import OrderlyProcessed
from model.system.drain import drain
from model.system.events import Advance, CompleteConsume, Produce
from model.system.step import create_system, step
from model.values.config import Config, get_max_reconsume_times
from model.values.errors import IllegalTransition
from model.values.message import PROPERTY_REAL_TOPIC, is_dlq_topic

FATES = ("consumed", "dlq", "lost")
JAVA_CLIENT = {"name": "rocketmq-client-java", "version": "4.9.8", "language": "JAVA"}
CONCURRENTLY = {"CONSUME_SUCCESS": ConsumeStatus.CONSUME_SUCCESS, "RECONSUME_LATER": ConsumeStatus.RECONSUME_LATER,
                "EXCEPTION": ConsumeStatus.EXCEPTION, "NULL": ConsumeStatus.NULL}
ORDERLY = {"SUCCESS": OrderlyStatus.SUCCESS, "COMMIT": OrderlyStatus.COMMIT, "ROLLBACK": OrderlyStatus.ROLLBACK,
           "SUSPEND_CURRENT_QUEUE_A_MOMENT": OrderlyStatus.SUSPEND, "EXCEPTION": OrderlyStatus.EXCEPTION,
           "NULL": OrderlyStatus.NULL, "CONSUME_SUCCESS": OrderlyStatus.SUCCESS}

ORDERLY_DONE = frozenset({OrderlyStatus.SUCCESS, OrderlyStatus.COMMIT})
PREDICT_EVENTS = 2_000


@frozen
class MessageFate:
    """What happened to one produced message: reconsumeTimes per delivery in order, and where it ended."""

    key: str
    reconsume_times: tuple[int, ...]
    fate: str


@frozen
class Prediction:
    client: dict
    fates: dict  # key -> MessageFate
    send_back_headers: tuple[dict, ...]
    max_reconsume_times: int


# The extFields of a 4.9.8 client's CONSUMER_SEND_MSG_BACK (ConsumerSendMsgBackRequestHeader), as on the wire.
SEND_BACK_FIELDS = ("group", "offset", "delayLevel", "originMsgId", "originTopic", "unitMode", "maxReconsumeTimes")


def compute_send_back_header(request, settings: RunSettings) -> dict:
    """[SB-09] The extFields a 4.9.8 client's CONSUMER_SEND_MSG_BACK carries, with the run's group and topic."""
    values = (settings.group, str(request.offset), str(request.delay_level), request.origin_msg_id, settings.topic,
              "false", str(request.max_reconsume_times))
    return dict(zip(SEND_BACK_FIELDS, values, strict=True))


def make_listener(workload, config: Config, settings: RunSettings, headers: list):
    """The model's listener: the workload's script per message and delivery, its faults on the send-back."""
    seen: dict[str, int] = defaultdict(int)

    def listener(request: ConsumeRequest) -> CompleteConsume:
        message = request.messages[0]
        key = message.uniq_key
        delivery, seen[key] = seen[key], seen[key] + 1
        status = workload.get_status(key, delivery)
        if config.is_orderly:
            return CompleteConsume(request.request_id, OrderlyResult(ORDERLY[status], workload.auto_commit))
        failed = CONCURRENTLY[status] is not ConsumeStatus.CONSUME_SUCCESS
        if failed and config.is_clustering:
            headers.append(compute_send_back_header(compute_send_back_request(message, "", config, 0), settings))
        fault = workload.get_send_back_fault(key, delivery) if failed else None
        rpc_fails = fault is not None
        fallback_fails = rpc_fails and fault.kind == "broker_not_writeable"
        return CompleteConsume(request.request_id, ListenerResult(CONCURRENTLY[status]), rpc_fails, fallback_fails,
                               send_retried=rpc_fails and fault.kind == "fallback_first_refused")

    return listener


def get_fates(observations: list, keys: tuple[str, ...]) -> dict:
    """Each key's MessageFate, read from the model's observations."""
    sequences, consumed, dead, invoked = defaultdict(list), set(), set(), {}
    for o in observations:
        if isinstance(o, ListenerInvoked):
            invoked[o.request_id] = o.messages
            for m in o.messages:
                sequences[m.uniq_key].append(m.reconsume_times)
        elif isinstance(o, ConsumeProcessed) and not o.discarded:
            consumed.update(m.uniq_key for m in o.succeeded)
        elif isinstance(o, DlqArrival):
            dead.add(o.message.uniq_key)
        elif isinstance(o, SendBackOutcome) and o.stored is not None:
            if is_dlq_topic(o.stored.get_property(PROPERTY_REAL_TOPIC) or o.stored.topic):
                dead.add(o.message.uniq_key)
        elif isinstance(o, OrderlyProcessed) and not o.discarded and (
                o.status in ORDERLY_DONE or (o.auto_commit and o.status is OrderlyStatus.ROLLBACK)):
            consumed.update(m.uniq_key for m in invoked.get(o.request_id, ()))
    return {key: MessageFate(key, tuple(sequences[key]), compute_fate(key, consumed, dead)) for key in keys}


def compute_fate(key: str, consumed: set, dead: set) -> str:
    return "dlq" if key in dead else "consumed" if key in consumed else "lost"


def drain_until_quiet(system, listener, observations: list) -> None:
    """[SY-03] The model's drain, bounded by PREDICT_EVENTS: an orderly listener that turned autoCommit off and
    never answers COMMIT leaves its offsets uncommitted, so the model never reaches quiescence (every offset
    persisted), while the real client goes quiet — as the harness's run ends. A workload here needs tens of events."""
    try:
        drain(system, listener, max_events=PREDICT_EVENTS, observe=observations.extend)
    except IllegalTransition as error:
        if error.state != "not quiescent":
            raise


def get_produce_order(workload, arrival: tuple[str, ...]) -> list[tuple[int, object]]:
    """(workload index, message) in the order the model produces them: the messages without a delay level as the
    producer sends them, then the delayed ones in `arrival` order (the order their copies reached the topic's
    queues in the run; those it does not name in the workload's order)."""
    indexed = list(enumerate(workload.messages))
    rank = {key: position for position, key in enumerate(arrival)}
    delayed = sorted((item for item in indexed if item[1].delay_level > 0),
                     key=lambda item: rank.get(item[1].key, len(rank) + item[0]))
    return [item for item in indexed if item[1].delay_level == 0] + delayed


def process_produce(system, workload, settings: RunSettings, arrival: tuple[str, ...], observations: list):
    """Produce the workload's messages. Delayed ones are produced a delay-timer tick apart, so that the model's
    timer moves them to the topic in the order the run's broker did: every level's task runs on the same 100 ms
    grid and, within one tick, delivers the levels in order, so two messages due in the same tick reach their
    queue by level, whatever order they were sent in — a race between the broker's level tasks, not the
    client's choice, which an orderly listener's ROLLBACK (taking back every message since the last commit)
    makes visible."""
    delayed_before = False
    for index, spec in get_produce_order(workload, arrival):
        if spec.delay_level > 0 and delayed_before:
            system, seen = step(system, Advance(system.now + DELAY_FOR_A_WHILE))
            observations.extend(seen)
        delayed_before = delayed_before or spec.delay_level > 0
        produce = Produce(spec.key, index % settings.topic_queue_nums, spec.tags, spec.delay_level)
        system, seen = step(system, produce)
        observations.extend(seen)
    return system


def predict(workload, settings: RunSettings, arrival: tuple[str, ...] = ()) -> Prediction:
    """Run the workload through the model until quiet (one instance; a restart does not change a fate). `arrival`:
    the keys in the order the run's broker stored their first copies in the topic's queues (observe's
    get_arrival_order), which decides the order of delayed messages (process_produce)."""
    config = settings.get_config(workload.mode, workload.model)
    system = create_system(config, ("c1",), topic_queue_nums=settings.topic_queue_nums)
    observations = []
    headers: list[dict] = []
    listener = make_listener(workload, config, settings, headers)
    if workload.model == "broadcasting":
        # As the glue does (conformance/runner/run.py): the messages come once the consumer pulls every queue, since
        # without a stored offset it starts at the queue's end, and an orderly one decides where at its first
        # locked pull (RB-04, LK-06), which the model's instance makes when its time first runs.
        system, seen = step(system, Advance(system.now))
        observations.extend(seen)
    system = process_produce(system, workload, settings, arrival, observations)
    drain_until_quiet(system, listener, observations)
    keys = tuple(spec.key for spec in workload.messages)
    return Prediction(JAVA_CLIENT, get_fates(observations, keys), tuple(headers), get_max_reconsume_times(config))
