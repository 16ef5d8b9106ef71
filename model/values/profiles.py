"""Named RocketMQ version profiles: every version-dependent behaviour is one flag here, set in one place.

Transitions never compare version strings; they read a flag of the `Profile` carried by `Config`.
Each flag's docstring-comment names the upstream change that introduced the behaviour.
"""

from __future__ import annotations

from attrs import evolve, frozen

from model.values.errors import ConfigError


@frozen
class Profile:
    """[CFG-06] The behaviour flags of one RocketMQ release (broker and Java client of the same version)."""

    name: str
    # §4.2 / #2724: the send-back DLQ branch calls setDelayTimeLevel(0) (4.9.2+).
    dlq_clears_delay_level: bool
    # §4.2 / 0a16ff6a5f: a DLQ topic created on first use is PERM_WRITE|PERM_READ (4.9.2+), PERM_WRITE before.
    dlq_topic_readable: bool
    # §4.4 / cad0cfcece: handleRetryAndDLQ sends to the DLQ iff reconsumeTimes > max (5.0.0+), >= before.
    retry_send_dlq_strictly_greater: bool
    # §4.4 / 7cfffe7f48: handleRetryAndDLQ also DLQs while the group holds an unexpired queue lock (5.1.1+).
    retry_send_dlq_when_group_locked: bool
    # §4.4: handleRetryAndDLQ writes DELAY=-1 into the original properties so the DLQ copy is stored at once (5.x);
    # in 4.9 the client's DELAY survives and the DLQ copy is first parked in SCHEDULE_TOPIC_XXXX.
    retry_send_dlq_stored_immediately: bool
    # §5.4: a level whose head is not due re-checks after 100 ms (4.9.3+); before, after `countdown` ms.
    scheduler_rechecks_every_100ms: bool
    # §1.4 / #5481: processConsumeResult skips failed messages no longer in the ProcessQueue (5.1.0+).
    skip_send_back_of_removed_messages: bool
    # §1.5 / #9481: the client fallback keeps ORIGIN_MESSAGE_ID of a first failure (develop only, no release).
    fallback_keeps_origin_message_id: bool
    # §3 / #4050: the orderly DLQ send keeps ORIGIN_MESSAGE_ID (4.9.4+).
    orderly_send_keeps_origin_message_id: bool
    # §3 / #6163: the orderly DLQ send carries RECONSUME_TIME = reconsumeTimes + 1 (5.1.1+), reconsumeTimes before.
    orderly_send_reconsume_time_plus_one: bool
    # §6 / #7634: OFFSET_ILLEGAL freezes the offset and re-balances at once (5.2.0+); 10 s delayed task before.
    offset_illegal_freezes_immediately: bool
    # §3 / #8772: a BROADCASTING rebalance still asks the broker for queue locks (through 5.3.1).
    broadcast_rebalance_locks_queues: bool
    # §6: an orderly CLUSTERING queue being removed may be force-unlocked after 20 s (5.x).
    orderly_rebalance_force_unlock: bool
    # §9 / #2621: a rebalance marks a new ProcessQueue locked (4.9.5+); before, only the next lockAll does.
    new_process_queue_locked: bool
    # §6: readOffset maps a broker exception to -1 (4.9) or -2 (5.x).
    read_offset_broker_exception_is_not_found: bool
    # 5.x server-side retry: POP, checkpoints, invisible time, revive, the proxy (5.0.0+; none in 4.x).
    server_side_retry: bool
    # PD-06: the local proxy's handle after changeInvisibleDuration keeps the old checkpoint's start offset
    # (LocalMessageService, 5.0.0 through develop).
    proxy_change_keeps_batch_start_offset: bool
    # RB-04 / #5837: QUERY_CONSUMER_OFFSET of a group with no offset answers 0 only if the queue's first message is
    # in memory (checkInMemByConsumeOffset, 5.1.0+): an empty queue is QUERY_NOT_FOUND; before, 0 unless it is on
    # disk only (checkInDiskByConsumeOffset), so an empty queue answers 0.
    query_offset_zero_needs_stored_head: bool
    # PD-07 / #7837: the proxy's renew scan runs (DefaultMessagingProcessor starts its ReceiptHandleProcessor: develop
    # since 365b297, Sep 2025); through 5.3.3 nothing starts it, so an auto-renewed message is never renewed.
    proxy_renews_held_handles: bool


_V4_9_1 = Profile(
    name="4.9.1",
    dlq_clears_delay_level=False,
    dlq_topic_readable=False,
    retry_send_dlq_strictly_greater=False,
    retry_send_dlq_when_group_locked=False,
    retry_send_dlq_stored_immediately=False,
    scheduler_rechecks_every_100ms=False,
    skip_send_back_of_removed_messages=False,
    fallback_keeps_origin_message_id=False,
    orderly_send_keeps_origin_message_id=False,
    orderly_send_reconsume_time_plus_one=False,
    offset_illegal_freezes_immediately=False,
    broadcast_rebalance_locks_queues=True,
    orderly_rebalance_force_unlock=False,
    new_process_queue_locked=False,
    read_offset_broker_exception_is_not_found=True,
    server_side_retry=False,
    proxy_change_keeps_batch_start_offset=False,
    query_offset_zero_needs_stored_head=False,
    proxy_renews_held_handles=False,
)
_V4_9_8 = evolve(
    _V4_9_1,
    name="4.9.8",
    dlq_clears_delay_level=True,
    dlq_topic_readable=True,
    scheduler_rechecks_every_100ms=True,
    orderly_send_keeps_origin_message_id=True,
    new_process_queue_locked=True,
)
_V5_0_0 = evolve(
    _V4_9_8,
    name="5.0.0",
    retry_send_dlq_strictly_greater=True,
    retry_send_dlq_stored_immediately=True,
    orderly_rebalance_force_unlock=True,
    read_offset_broker_exception_is_not_found=False,
    server_side_retry=True,
    proxy_change_keeps_batch_start_offset=True,
)
_V5_3_3 = evolve(
    _V5_0_0,
    name="5.3.3",
    retry_send_dlq_when_group_locked=True,
    skip_send_back_of_removed_messages=True,
    orderly_send_reconsume_time_plus_one=True,
    offset_illegal_freezes_immediately=True,
    broadcast_rebalance_locks_queues=False,
    query_offset_zero_needs_stored_head=True,
)
_DEVELOP = evolve(_V5_3_3, name="develop", fallback_keeps_origin_message_id=True, proxy_renews_held_handles=True)

PROFILES: dict[str, Profile] = {p.name: p for p in (_V4_9_1, _V4_9_8, _V5_0_0, _V5_3_3, _DEVELOP)}
BASELINE = "4.9.8"


def get_profile(name: str) -> Profile:
    """Return the named profile or raise ConfigError naming the known profiles."""
    try:
        return PROFILES[name]
    except (KeyError, TypeError):
        raise ConfigError("profile", name, f"one of {', '.join(PROFILES)}") from None
