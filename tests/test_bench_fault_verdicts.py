"""The fault-verdict table's cells say what the verdicts say: deviations with their declared causes (UNDECLARED
where none explains one), else indefinite, else conforms; every fault kind's workload carries exactly that fault."""

from __future__ import annotations

from benchmarks.bench_fault_verdicts import make_workload, summarise
from conformance.checker.verdicts import Verdict
from conformance.history.workload import FAULT_KINDS, SCHEDULED_FAULT_KINDS, AfterDelivery

CLIENT = {"name": "rocketmq-client-cpp", "version": "1.2.3"}


def test_a_cell_names_each_deviation_with_its_cause_or_undeclared():
    verdicts = [Verdict("SY-10", CLIENT, "deviates", keys=("m0",), cause="a failed send-back dropped"),
                Verdict("CC-02", CLIENT, "deviates", keys=("m1",)), Verdict("SB-01", CLIENT, "conforms"),
                Verdict("SY-06", CLIENT, "indefinite")]
    assert summarise(verdicts) == "SY-10 (a failed send-back dropped); CC-02 (UNDECLARED)"
    assert summarise(verdicts[2:]) == "indefinite"
    assert summarise(verdicts[2:3]) == "conforms"


def test_each_kind_has_one_workload_with_that_fault_on_the_first_failure():
    for kind in FAULT_KINDS:
        workload = make_workload(kind)
        assert [(f.kind, f.key, f.delivery) for f in workload.faults] == [(kind, "m0", 0)] and not workload.schedule
        assert workload.get_status("m0", 0) == "RECONSUME_LATER"
    for kind in SCHEDULED_FAULT_KINDS:
        workload = make_workload(kind)
        assert [(s.kind, s.trigger) for s in workload.schedule] == [(kind, AfterDelivery("m0", 0))]
        assert not workload.faults
