"""PQ-07's commit at its two edges (spec/05-process-queue.md): nothing taken, and a commit that empties a queue whose
size counter drifted.

The PQ-07 example of the chapter pins the first, but runs under Sybil, outside mutmut's selection; the second was
found only by a random draw, which the derandomized `mutation` profile does not make (`process_queue.commit` 3-16
and 20, benchmarks/MUTATION.md).
"""

from __future__ import annotations

import pytest

from model.client.process_queue import commit, create_process_queue, put_message, take_messages
from model.values.errors import IllegalTransition
from model.values.records import evolve
from properties.test_process_queue import make_message


def test_a_commit_with_nothing_taken_is_illegal_and_names_the_state_and_the_event():
    """PQ-07: commit() reads consumingMsgOrderlyTreeMap.lastKey() first (ProcessQueue 4.9.8 L272), which throws
    NoSuchElementException on an empty map: the model refuses the event, naming the state and the event, with the
    text the chapter's PQ-07 example shows."""
    pq, _ = put_message(create_process_queue(), [make_message(0)])
    with pytest.raises(IllegalTransition) as raised:
        commit(pq)
    assert (raised.value.state, raised.value.event) == ("consuming map empty", "commit")
    assert str(raised.value) == ("event commit is illegal in state consuming map empty: nothing was taken (Java throws "
                                 "NoSuchElementException)")


@pytest.mark.parametrize("drift", [1, 7, 1000])
def test_a_commit_that_empties_the_queue_sets_the_size_to_0_whatever_it_drifted_to(drift):
    """PQ-07: when msgCount reaches 0 the size is set to 0, not decremented (ProcessQueue 4.9.8 L273-L274): a size
    counter `drift` bytes above the bodies it holds is 0 after the commit that empties the queue."""
    pq, _ = put_message(create_process_queue(), [make_message(0, 5), make_message(1, 3)])
    pq, _ = take_messages(pq, 2)
    pq = evolve(pq, msg_size=pq.msg_size + drift)
    pq, next_offset = commit(pq)
    assert (pq.msg_count, pq.msg_size, next_offset) == (0, 0, 2)
