"""[PL-05] A FOUND batch the client's tag re-check empties (a tag-hash collision) is pulled again at once, not
pullInterval later: found by the triage of the pull path's mutants (the model waited pullInterval)."""

from __future__ import annotations

from model.client.observations import PullObserved
from model.system.events import Advance, Produce
from model.system.step import create_system
from model.values.config import Config
from model.values.message import MessageQueue
from model.values.names import TOPIC
from properties.steps import run

Q0 = MessageQueue(TOPIC, 0)


def get_found(seen) -> list[tuple[int, int, int, int]]:
    return [(o.offset, o.next_offset, o.found, o.time) for o in seen
            if isinstance(o, PullObserved) and o.queue == Q0 and o.status == "FOUND"]


def test_a_batch_the_tag_check_empties_is_pulled_again_at_once():
    """[PL-05] "BB" and "Aa" have the same String.hashCode, so the broker returns BB to a subscription of Aa and the
    client drops it (PullAPIWrapper 4.9.8 L84). PullCallback's FOUND case then runs executePullRequestImmediately for
    an empty list, and executePullRequestLater(pullInterval) only after a batch it submitted
    (DefaultMQPushConsumerImpl 4.9.8 L329-L350): with pullInterval 500 ms and batches of 1, Aa is pulled at 0 ms."""
    system = create_system(Config(pull_interval=500, pull_batch_size=1), ("c1",), topic_queue_nums=1,
                           subscription=frozenset({"Aa"}))
    _, seen = run(system, Produce("bb", tags="BB"), Produce("aa", tags="Aa"), Produce("aa2", tags="Aa"),
                  Advance(1_000))
    assert get_found(seen) == [(0, 1, 1, 0), (1, 2, 1, 0), (2, 3, 1, 500)]
