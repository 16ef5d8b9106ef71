"""The events from outside the modelled cluster, the inputs of `model.system.step.step` (spec/11-guarantees.md):
a produce, a listener's result, the clock moving, a held one-way commit arriving, membership changes, a crash, lock
request faults, expired commit-log files, the broker's permission and its refusals; and on the 5.x side, POP
consumers joining and leaving, their listeners' results, and the broker's restart. The two that come once per
message (a produce, a listener's result) are named tuples, built at a tuple's cost (benchmarks/NOTES.md); the others
are frozen attrs records."""

from __future__ import annotations

from typing import NamedTuple

from attrs import frozen

from model.client.listener import ListenerResult
from model.client.pop_consumer import PopConsumer
from model.values.message import MessageQueue
from model.values.wire import ResponseCode


class Produce(NamedTuple):
    """A producer sends one message to `TOPIC` queue `queue_id` (optionally with tags and a delay level)."""

    uniq_key: str
    queue_id: int = 0
    tags: str | None = None
    delay_level: int = 0


class CompleteConsume(NamedTuple):
    """A running listener invocation returns; the flags inject a failing send-back RPC / fallback send, and a
    client send to %RETRY% (fallback or orderly give-up) whose first attempt is refused and whose producer retry
    is accepted (RS-14)."""

    request_id: int
    result: ListenerResult = ListenerResult()
    send_back_rpc_fails: bool = False
    fallback_fails: bool = False
    send_retried: bool = False


@frozen
class Advance:
    """The virtual clock moves to `until`, firing every timer due on the way, in time order."""

    until: int


@frozen
class DeliverOneway:
    """A held one-way offset commit (index into `System.oneway`) reaches the broker now; `lose` drops it."""

    index: int
    lose: bool = False


@frozen
class SetMembers:
    """The group's live instances become `client_ids` (join, graceful leave); every live instance re-balances."""

    client_ids: tuple[str, ...]


@frozen
class Crash:
    """An instance dies hard: no persist, no shutdown hooks; its queues are re-balanced by the survivors."""

    client_id: str


@frozen
class LockRequestsFail:
    """From now on (`failing`) or no longer, the instance's lock requests to the broker fail before they arrive
    (a partition between the instance and the broker, a broker too busy to answer within 1 s): lockAll's lockBatch
    and lock(mq) throw, and the client changes nothing."""

    client_id: str
    failing: bool = True


@frozen
class ExpireQueueHead:
    """The broker deletes old commit-log files: offsets below `min_offset` of a queue are gone (OFFSET_ILLEGAL)."""

    queue: MessageQueue
    min_offset: int


@frozen
class SetBrokerPermission:
    """[SY-13] The broker's brokerPermission becomes `perm` (updateBrokerConfig): PERM_READ alone is read-only, so
    send-backs and %RETRY% sends are refused with NO_PERMISSION and producers find no writeable queue, while pulls
    are still answered; PERM_READ | PERM_WRITE is writeable again."""

    perm: int


@frozen
class RefuseRequests:
    """[SY-13] From now on the broker answers every request of `kind` ("send_back": CONSUMER_SEND_MSG_BACK, "send": a
    client's SEND_MESSAGE to %RETRY%, "pull": PULL_MESSAGE) with the error `code` instead of handling it (a store
    that fails, a group or topic config it lost, a permission revoked); `code` None ends that."""

    kind: str
    code: ResponseCode | None = None


@frozen
class AddPopConsumer:
    """A POP consumer instance starts (model/client/pop_consumer.py): a remoting POP push consumer or a gRPC
    SimpleConsumer behind the proxy, of a POP group the cluster has (create_system's `pop_groups`); it pops at once.
    Its incarnation is given when it starts."""

    consumer: PopConsumer


@frozen
class RemovePopConsumer:
    """A POP consumer instance is gone (a crash): its listener invocations in flight are dropped with their
    handles; what they held comes back when its invisible time ends."""

    client_id: str


class CompletePop(NamedTuple):
    """A POP consumer's running listener invocation returns `result` (CONSUME_SUCCESS up to ackIndex, or a
    failure with delayLevelWhenNextConsume, as the 4.x CompleteConsume)."""

    request_id: int
    result: ListenerResult = ListenerResult()


@frozen
class RestartBroker:
    """[PO-10] The broker restarts on its store: `graceful` persists first; a crash loses what was committed since
    the last persist."""

    graceful: bool = True
