"""RS-07 on a broker built by create_broker (spec/02-send-back.md): a topic it creates with N queues has N write
and N read queues, so msgCheck accepts queue ids 0..N-1 and refuses N.

mutmut found the write-queue count of create_broker's topics unchecked (benchmarks/MUTATION.md, group q): no test
sent to a topic the broker was created with.
"""

from __future__ import annotations

import pytest
from immutables import Map

from model.broker.retry_send import on_send_message
from model.broker.send_back import ResponseCode
from model.broker.state import create_broker
from model.values.config import Config
from model.values.message import Message

TOPIC = "T"


@pytest.mark.parametrize("queue_nums", [1, 3])
def test_a_send_to_a_created_topic_is_checked_against_its_queue_count(queue_nums):
    """RS-07: msgCheck refuses a queue id not below max(writeQueueNums, readQueueNums) with SYSTEM_ERROR
    "request queueId[N] is illegal" (AbstractSendMessageProcessor 4.9.8 L218-L230), and stores any lower one; a
    topic created with N queues has writeQueueNums = readQueueNums = N, so the last accepted id is N - 1."""
    config = Config()
    broker = create_broker(config, "G", {TOPIC: queue_nums})
    last = Message(TOPIC, b"x", properties=Map({"UNIQ_KEY": "U1"}), queue_id=queue_nums - 1)
    _, result = on_send_message(broker, config, last, (None, None), 0, 0)
    assert result.code == ResponseCode.SUCCESS
    beyond = Message(TOPIC, b"x", properties=Map({"UNIQ_KEY": "U2"}), queue_id=queue_nums)
    _, result = on_send_message(broker, config, beyond, (None, None), 0, 0)
    assert result.code == ResponseCode.SYSTEM_ERROR
    assert result.remark.startswith(f"request queueId[{queue_nums}] is illegal")
