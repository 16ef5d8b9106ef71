"""CC-07 twice over: a message whose send-back and fallback both fail is resubmitted 5 s later with reconsumeTimes
+ 1 (ConsumeMessageConcurrentlyService.processConsumeResult, rocketmq-all-4.9.8
client/src/main/java/org/apache/rocketmq/client/impl/consumer/ConsumeMessageConcurrentlyService.java L278-L291, and
submitConsumeRequestLater L323-L336); the resubmitted attempt may fail the same way, and be resubmitted again."""

from __future__ import annotations

from model.client.listener import ConsumeStatus, ListenerResult
from model.system.events import Advance, CompleteConsume, Produce
from model.system.step import create_system, step
from model.values.config import Config

LATER = ListenerResult(ConsumeStatus.RECONSUME_LATER)


def test_a_resubmitted_message_whose_send_backs_fail_again_is_resubmitted_again():
    """m0 consumed at once, RECONSUME_LATER, both send-backs fail: one resubmit pending, m0 again at 5 000 ms with
    reconsumeTimes 1; that attempt fails the same way: one resubmit pending again, m0 at 10 000 ms with
    reconsumeTimes 2; it succeeds and nothing is pending."""
    system, _ = step(create_system(Config()), Produce("m0"))
    system, _ = step(system, Advance(0))
    attempts, pending = [], []
    for result, fails in ((LATER, True), (LATER, True), (ListenerResult(), False)):
        (request,) = system.requests.values()
        attempts.append((system.now, [(m.uniq_key, m.reconsume_times) for m in request.messages]))
        system, _ = step(system, CompleteConsume(request.request_id, result, send_back_rpc_fails=fails,
                                                 fallback_fails=fails))
        pending.append(system.pending_resubmits)
        system, _ = step(system, Advance(system.now + 5_000))
    assert attempts == [(0, [("m0", 0)]), (5_000, [("m0", 1)]), (10_000, [("m0", 2)])]
    assert pending == [1, 1, 0]
