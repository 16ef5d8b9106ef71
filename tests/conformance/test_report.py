"""Verdict records: one JSON line per verdict with the client's identity, only when reports are on."""

from __future__ import annotations

import json

from hypothesis import given, settings
from hypothesis import strategies as st

from conformance.report import compute_matrix, main, read_verdict_records, record_verdicts, render_matrix, to_record
from conformance.verdicts import Verdict

CLIENT = {"name": "rocketmq-client-cpp", "version": "1.2.3", "binding": "rocketmq 0.4.4"}
VERDICTS = [Verdict("SB-09", CLIENT, "deviates", "no maxReconsumeTimes", "Workload(...)", ("t 36",)),
            Verdict("SY-06", CLIENT, "conforms"), Verdict("CT-01", CLIENT, "not applicable", "no consumeTimeout")]


def test_records_are_written_per_verdict_with_the_client(tmp_path, monkeypatch):
    monkeypatch.setenv("RMQSPEC_REPORTS", "1")
    monkeypatch.setenv("RMQSPEC_REPORTS_DIR", str(tmp_path))
    monkeypatch.setenv("RMQSPEC_RUN_ID", "run-1")

    @settings(max_examples=1, database=None)
    @given(st.just(None))
    def record(_):
        record_verdicts(VERDICTS)

    record()
    [path] = list((tmp_path / "run-1").glob("conformance-*.jsonl"))
    records = [json.loads(line) for line in path.read_text().splitlines()]
    assert [(r["rule"], r["status"], r["client"]["version"]) for r in records] == [
        ("SB-09", "deviates", "1.2.3"), ("SY-06", "conforms", "1.2.3"), ("CT-01", "not applicable", "1.2.3")]
    assert records[0]["declared"] is True and records[1]["declared"] is False
    assert records[0]["counterexample"] == "Workload(...)" and records[0]["trace"] == ["t 36"]


def test_nothing_is_written_without_reports(tmp_path, monkeypatch):
    monkeypatch.delenv("RMQSPEC_REPORTS", raising=False)
    monkeypatch.setenv("RMQSPEC_REPORTS_DIR", str(tmp_path))

    @settings(max_examples=1, database=None)
    @given(st.just(None))
    def record(_):
        record_verdicts(VERDICTS)

    record()
    assert list(tmp_path.iterdir()) == []


def test_the_matrix_has_a_row_per_client_with_the_reference_marked_and_the_worst_status_per_rule(tmp_path):
    java = {"name": "rocketmq-client-java", "version": "4.9.8", "binding": ""}
    other_java = {"name": "rocketmq-client-java", "version": "4.9.7", "binding": ""}
    records = [to_record(v) for v in VERDICTS]
    records += [to_record(Verdict("SY-06", java, "conforms")), to_record(Verdict("SY-06", java, "conforms")),
                to_record(Verdict("SB-09", java, "conforms")), to_record(Verdict("SB-09", other_java, "deviates"))]
    (tmp_path / "run-1").mkdir()
    (tmp_path / "run-1" / "conformance-local-main.jsonl").write_text("".join(json.dumps(r) + "\n" for r in records))
    table = render_matrix(compute_matrix(read_verdict_records([tmp_path / "run-1"])))
    assert table.splitlines() == [
        "| client | CT-01 | SB-09 | SY-06 |", "|---|---|---|---|",
        "| rocketmq-client-cpp 1.2.3 | n/a (1) | deviates (1) | conforms (1) |",
        "| rocketmq-client-java 4.9.7 |  | deviates (1) |  |",
        "| rocketmq-client-java 4.9.8 (reference) |  | conforms (1) | conforms (2) |",
    ]
    assert main([str(tmp_path / "run-1")]) == 0
    assert main([str(tmp_path / "nowhere")]) == 2
