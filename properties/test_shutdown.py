"""Properties of a clean shutdown (spec/10-rebalance.md, RB-07): what a stopping push consumer sends."""

from __future__ import annotations

from hypothesis import event, example, given, settings
from hypothesis import strategies as st

from model.broker.consumer_offsets import query_offset
from model.client.listener import ConsumeStatus, ListenerResult
from model.client.offset_store import get_offset
from model.client.orderly import OrderlyResult, OrderlyStatus
from model.client.rebalance import compute_shutdown_requests
from model.system.drain import drain
from model.system.events import CompleteConsume, Produce
from model.system.step import create_system, step
from model.values.config import Config
from model.values.message import is_retry_topic
from model.values.names import GROUP, TOPIC


def fail_first_delivery(failing: frozenset[str], orderly: bool):
    """A listener that fails the first delivery of each key in `failing` and accepts everything else."""

    def listener(request):
        message = request.messages[0]
        failed = message.uniq_key in failing and message.reconsume_times == 0
        if orderly:
            status = OrderlyStatus.SUSPEND if failed else OrderlyStatus.SUCCESS
            return CompleteConsume(request.request_id, OrderlyResult(status, True))
        status = ConsumeStatus.RECONSUME_LATER if failed else ConsumeStatus.CONSUME_SUCCESS
        return CompleteConsume(request.request_id, ListenerResult(status))

    return listener


@settings(max_examples=30, deadline=None)
@given(count=st.integers(0, 5), queues=st.integers(1, 3), failing=st.sets(st.integers(0, 4), max_size=2),
       mode=st.sampled_from(("concurrently", "orderly")), model=st.sampled_from(("clustering", "broadcasting")))
@example(count=3, queues=2, failing={0}, mode="concurrently", model="clustering")
@example(count=2, queues=2, failing={1}, mode="orderly", model="clustering")
@example(count=2, queues=1, failing=set(), mode="concurrently", model="broadcasting")
def test_a_clean_shutdown_persists_every_queue_then_unregisters(count, queues, failing, mode, model):
    """[RB-07] After a drained run the shutdown sends one UPDATE_CONSUMER_OFFSET per queue of the ProcessQueue table
    that holds an offset, each carrying the consumed offset (the queue's end: everything was consumed), then
    unregisters the group; BROADCASTING sends no update (its offsets go to the local file)."""
    config = Config(consume_mode=mode, message_model=model, max_reconsume_times=1)
    system = create_system(config, ("c1",), topic_queue_nums=queues)
    for index in range(count):
        system, _ = step(system, Produce(f"m{index}", index % queues))
    listener = fail_first_delivery(frozenset(f"m{i}" for i in failing), mode == "orderly")
    system, _observations, _events = drain(system, listener)
    consumer = system.consumers["c1"]
    requests = compute_shutdown_requests(consumer)
    event("RB-07")
    assert requests.unregister_group == GROUP
    sent = [mq for mq, _offset in requests.updates]
    assert sent == sorted(set(sent)), "one update per queue"
    if model == "broadcasting":
        assert requests.updates == ()
        return
    cached = {mq for mq in consumer.process_queues if get_offset(consumer.offset_store, mq) is not None}
    assert set(sent) == cached
    store = system.broker.store
    for mq, offset in requests.updates:
        assert offset == store.get_max_offset_in_queue(mq.topic, mq.queue_id), (mq, offset)
        assert offset == query_offset(system.broker, GROUP, mq.topic, mq.queue_id)
    topic_queues = {mq for mq in sent if mq.topic == TOPIC}
    assert {mq for mq in sent if not is_retry_topic(mq.topic)} == topic_queues
