"""The last survivors of the session's mutation run (benchmarks/MUTATION.md): the route of a topic the broker does
not have, and the rule a remote persistAll cites (spec/06-offset-store.md, OS-06).
"""

from __future__ import annotations

from model.broker.server import answer_route
from model.broker.state import Broker
from model.client.offset_store import create_offset_store, persist_all, update_offset
from model.values.config import Config
from model.values.message import MessageQueue
from model.values.wire import GetRoute


def test_a_topic_the_broker_does_not_have_has_no_route():
    """A topic the broker never registered with the name server has no route: no queue to read (the name server
    answers TOPIC_NOT_EXIST: DefaultRequestProcessor.getRouteInfoByTopic 4.9.8 L366-L400)."""
    broker = Broker()
    after, result = answer_route(broker, GetRoute("T"), None)
    assert after is broker and result.read_queue_nums == 0


def test_a_remote_persist_all_sends_its_queues_prunes_the_rest_and_cites_os_06():
    """OS-06: RemoteBrokerOffsetStore.persistAll(mqs) sends every cached queue of `mqs` and removes the cached
    queues outside it from the table (4.9.8 L115-L148)."""
    kept, gone = MessageQueue("T", 0), MessageQueue("T", 1)
    store = update_offset(update_offset(create_offset_store(Config()), kept, 3, False), gone, 5, False)
    outcome = persist_all(store, {kept})
    after, updates = outcome
    assert outcome.rules == ("OS-06",) and list(updates) == [(kept, 3)]
    assert set(after.offsets) == {kept}
