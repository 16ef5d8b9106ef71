"""CC-04, CC-09, RB-03, PL-08 (spec/08-concurrently.md, spec/10-rebalance.md, spec/07-pull.md): the end of a
concurrently ConsumeRequest (`concurrently.complete`), driven by example. mutmut found unchecked the status and the
acked/failed split a discarded result is observed with, the instant and rule of the BROADCASTING drop note, and that
a ProcessQueue dropped by OFFSET_ILLEGAL (same generation, still in the table) discards a result like a rebalance."""

from __future__ import annotations

import pytest

from model.client.listener import ConsumeStatus, ListenerResult
from model.client.observations import ConsumeProcessed, Note, OffsetUpdated, SendBackOutcome
from model.client.pull import on_offset_illegal
from model.system.events import Advance, CompleteConsume, Produce, SetMembers
from model.system.step import create_system
from model.values.config import Config, MessageModel
from model.values.message import MessageQueue
from model.values.names import TOPIC
from properties.steps import run

Q0 = MessageQueue(TOPIC, 0)


def test_a_result_returned_after_offset_illegal_dropped_its_queue_is_discarded():
    """RB-03 / PL-08: OFFSET_ILLEGAL sets the ProcessQueue dropped at once (DefaultMQPushConsumerImpl 4.9.8
    L371-L376 `pullRequest.getProcessQueue().setDropped(true)`); the queue is removed only by the repair 10 s later
    (L377-L387). A listener returning in between is not processed: ConsumeRequest.run 4.9.8 L448-L452
    `if (!processQueue.isDropped()) processConsumeResult(...)` — no offset update, no send-back."""
    system = create_system(Config(profile="4.9.8"), ("c1",), topic_queue_nums=1)
    system, _ = run(system, Produce("k1"), Advance(0))
    (request_id,) = system.requests
    system, _ = on_offset_illegal(system, "c1", Q0, None, 0)
    assert Q0 in system.consumers["c1"].process_queues
    system, seen = run(system, CompleteConsume(request_id, ListenerResult(ConsumeStatus.RECONSUME_LATER)))
    processed = [o for o in seen if isinstance(o, ConsumeProcessed)]
    assert [p.discarded for p in processed] == [True]
    assert not [o for o in seen if isinstance(o, (OffsetUpdated, SendBackOutcome))]


@pytest.mark.parametrize(("result", "status", "acked"), [
    (ListenerResult(ConsumeStatus.CONSUME_SUCCESS, ack_index=0), ConsumeStatus.CONSUME_SUCCESS, 1),
    (ListenerResult(ConsumeStatus.EXCEPTION, ack_index=1), ConsumeStatus.RECONSUME_LATER, 0),
])
def test_a_discarded_result_shows_the_status_and_split_its_answer_stands_for(result, status, acked):
    """RB-03 / CC-04: ConsumeRequest.run sets a null status (an exception) to RECONSUME_LATER before it looks at
    the drop (ConsumeMessageConcurrentlyService 4.9.8 L430-L436, the hook records it L438-L443, the drop check
    L448-L452); the discarded result is observed with that status and the answer's split as CC-04 reads it
    (SUCCESS acks 0..ackIndex, RECONSUME_LATER none, L246-L263): a batch of 3 whose queue moved to c2 meanwhile."""
    system = create_system(Config(consume_message_batch_max_size=3), ("c1",), topic_queue_nums=1)
    system, _ = run(system, *[Produce(f"k{i}") for i in range(3)], Advance(0))
    (request_id,) = system.requests
    system, _ = run(system, SetMembers(("c2",)), Advance(1))
    system, seen = run(system, CompleteConsume(request_id, result))
    (processed,) = [o for o in seen if isinstance(o, ConsumeProcessed)]
    keys = ["k0", "k1", "k2"]
    assert (processed.request_id, processed.status, processed.discarded, processed.time) == (
        request_id, status, True, system.now)
    assert [m.uniq_key for m in processed.succeeded] == keys[:acked]
    assert [m.uniq_key for m in processed.failed] == keys[acked:]


def test_broadcasting_notes_its_dropped_failures_at_the_completion_instant():
    """CC-09: processConsumeResult, BROADCASTING, drops every message after ackIndex with a log line and sends none
    back (ConsumeMessageConcurrentlyService 4.9.8 L270-L275); the model notes it once, at the completion's instant
    (2.5 s here), citing CC-09."""
    system = create_system(Config(message_model=MessageModel.BROADCASTING), ("c1",), topic_queue_nums=1)
    system, _ = run(system, Produce("k1"), Advance(0))
    (request_id,) = system.requests
    system, _ = run(system, Advance(2_500))
    system, seen = run(system, CompleteConsume(request_id, ListenerResult(ConsumeStatus.RECONSUME_LATER)))
    assert not [o for o in seen if isinstance(o, SendBackOutcome)]
    assert [(o.time, o.rules) for o in seen if isinstance(o, Note) and "CC-09" in o.rules] == [(2_500, ("CC-09",))]
