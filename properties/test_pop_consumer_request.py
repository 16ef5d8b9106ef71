"""The request a remoting POP consumer pops with (spec/18-pop-consumer.md): its own invisible time, every queue,
its batch and tags.

mutmut found the invisible time unchecked (`pop_consumer.compute_pop_request` 21, benchmarks/MUTATION.md): every
consumer the suite draws pops with 30 s, and a request left to the header's default would not show it.
"""

from __future__ import annotations

import pytest

from model.client.pop_consumer import PopConsumer, compute_pop_request


@pytest.mark.parametrize("invisible_time", [10_000, 30_000, 120_000])
def test_a_remoting_pop_consumer_pops_every_queue_with_its_own_invisible_time(invisible_time):
    """DefaultMQPushConsumerImpl.popMessage sends popInvisibleTime, popBatchNums and the subscription's tags for
    every queue it was assigned (5.3.3 L607-L613); the model's consumer pops queue -1, all of them."""
    consumer = PopConsumer("c1", "G", 0, via_proxy=False, batch_size=4, invisible_time=invisible_time,
                           tags=frozenset({"A"}))
    request = compute_pop_request(consumer)
    assert (request.group, request.queue_id, request.max_msg_nums, request.invisible_time, request.tags) == \
        ("G", -1, 4, invisible_time, frozenset({"A"}))
