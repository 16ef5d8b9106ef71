"""The differential check under a scheduled fault (conformance/checker/differential.py's is_same_outcome): a client
killed or restarted, or a broker killed, may deliver a copy again (at-least-once), so a message's reconsumeTimes
sequence with a copy delivered twice is no deviation — the kinds read from the run's fault events, not from the
workload; its fate is still compared, and a fault that redelivers nothing relaxes nothing."""

from __future__ import annotations

from attrs import evolve
from hypothesis import given
from hypothesis import strategies as st

from conformance.checker.differential import get_differential_verdicts, predict_run
from conformance.checker.mechanisms import get_observed_fates
from conformance.checker.verdicts import judge
from conformance.history.records import FaultEvent, StoredCopy
from conformance.history.workload import AfterDelivery, MessageSpec, ScheduledFault, Workload
from tests.conformance.test_verdicts import JAVA, delivery, once, run_of, send_back

KILL = ScheduledFault("client_kill", AfterDelivery("m0", 0), 1000)
# m0 fails once, then succeeds: the client is killed after its first delivery, before the offset was committed, so
# the original comes again (seen 1: its script's second answer, a success) besides the retry copy.
WORKLOAD = Workload((MessageSpec("m0", "TagA", 0, ("RECONSUME_LATER",)),), schedule=(KILL,))
DELIVERIES = [delivery(1, 0.0, "m0", 100, 0, "RECONSUME_LATER", start_time=True),
              delivery(1, 3000.0, "m0", 100, 0, "CONSUME_SUCCESS", start_time=True, seen=1),
              delivery(2, 4100.0, "m0", 200, 1, "CONSUME_SUCCESS", origin=100, start_time=True, seen=2)]
REQUESTS = [send_back(10.0, 100, java=True)]
STORED = [StoredCopy(10.0, 100, "m0", 1, "%RETRY%G", 3)]


def differences(run) -> dict:
    return get_differential_verdicts(run, predict_run(run))


@once
@given(st.sampled_from(["client_kill", "client_restart", "broker_kill"]))
def test_a_copy_delivered_again_after_a_redelivering_fault_is_no_deviation(kind):
    run = evolve(run_of(WORKLOAD, DELIVERIES, REQUESTS, STORED, client=JAVA), faults=(FaultEvent(kind, 5, 1005),))
    assert differences(run) == {}


@once
@given(st.sampled_from(["", "broker_read_only", "namesrv_stop"]))
def test_without_a_redelivering_fault_in_the_history_the_sequence_is_compared(kind):
    faults = (FaultEvent(kind, 5, 1005),) if kind else ()
    run = evolve(run_of(WORKLOAD, DELIVERIES, REQUESTS, STORED, client=JAVA), faults=faults)
    assert "m0" in differences(run)["DIFF"][2]


@once
@given(st.just(None))
def test_a_loss_after_a_redelivering_fault_is_still_the_ledgers_deviation(_):
    """The original came again and failed again (sent back twice), and no retry copy came: m0 was not consumed,
    kill or no kill. Its forked lineage is not compared with the prediction (each delivery again takes one more
    answer of its script), but the Ledger's SY-10 still finds the loss."""
    again = evolve(DELIVERIES[1], status="RECONSUME_LATER")
    run = evolve(run_of(WORKLOAD, [DELIVERIES[0], again], [*REQUESTS, send_back(3010.0, 100, java=True)], STORED,
                        client=JAVA), faults=(FaultEvent("client_kill", 5, 1005),))
    assert get_observed_fates(run)["m0"].fate != "consumed"
    found = {v.rule: v for v in judge(run, predict_run(run))}
    assert found["SY-10"].status == "deviates" and "m0" in found["SY-10"].keys, found["SY-10"]
