"""The broker's POP knobs (BrokerConfig) at RocketMQ 5.3.3's defaults, and the constants of the POP code.

Only what changes an answer or a time is here; the buffer merge (`enablePopBufferMerge`, off by default) is not
modelled: with it off a checkpoint is written to the revive topic before the pop answers (PO-04).
"""

from __future__ import annotations

import enum

from attrs import field, frozen

from model.values.config import in_range, is_bool, one_of

# PopAckConstants: a checkpoint is due in the revive queue 1 s before its revive time, and PopReviveService revives
# it once the newest revive message read is more than ackTimeInterval + 1 s past that time (IV-01).
ACK_TIME_INTERVAL = 1000
SECOND = 1000
REVIVE_MARGIN = ACK_TIME_INTERVAL + SECOND
# PO-11: two checkpoints of one key meet in one revive scan when their revive times lie within this of each other
# (the later one is read at its revive time - 1 s, the earlier revived after its revive time + REVIVE_MARGIN).
COLLISION_WINDOW = REVIVE_MARGIN + SECOND
# PopMessageProcessor: a pop asks for at most 32 messages.
MAX_POP_MSG_NUMS = 32
# PopAckConstants.retryQueueNum: a pop retry topic is created with one queue.
POP_RETRY_QUEUE_NUMS = 1


class MessageRequestMode(enum.Enum):
    """MessageRequestMode: how a client with client rebalance off reads a queue the broker assigned it."""

    PULL = "PULL"
    POP = "POP"


@frozen
class PopConfig:
    """[PO-03] The broker's POP settings (BrokerConfig, 5.3.3 defaults) and its offset persistence interval."""

    broker_name: str = "broker-a"
    revive_interval: int = field(default=1000, validator=in_range(1, 2**31 - 1))
    revive_queue_num: int = field(default=8, validator=in_range(1, 1024))
    pop_from_retry_probability: int = field(default=20, validator=in_range(0, 100))
    enable_retry_topic_v2: bool = field(default=False, validator=is_bool)
    retrieve_message_from_pop_retry_topic_v1: bool = field(default=True, validator=is_bool)
    # QUERY_ASSIGNMENT (PC-05): how the broker tells a client with client rebalance off to read a topic ("PULL",
    # RocketMQ's default, or "POP"), and how many other clients' queues a popping client shares (<= 0: all).
    default_message_request_mode: MessageRequestMode = field(
        default=MessageRequestMode.PULL, converter=one_of("default_message_request_mode", MessageRequestMode))
    default_pop_share_queue_num: int = field(default=-1, validator=in_range(-1, 1024))
    # BrokerController: consumer offsets (and the revive progress) are persisted every flushConsumerOffsetInterval.
    flush_consumer_offset_interval: int = field(default=5000, validator=in_range(1, 2**31 - 1))
