"""Verdict records: one JSON line per verdict with the client's identity, only when reports are on."""

from __future__ import annotations

import json

import pytest
from attrs import evolve
from hypothesis import given, settings
from hypothesis import strategies as st

from conformance.checker.verdicts import Verdict
from conformance.harness import SETTINGS, judge_run
from conformance.history.records import Run
from conformance.history.workload import Workload
from conformance.report import (
    format_matrix,
    main,
    merge_statuses,
    read_verdicts,
    record_verdicts,
    render_markdown_matrix,
    to_record,
)


@pytest.fixture(autouse=True)
def own_session(monkeypatch):
    """These records are made up: keep them out of the session's rule x client summary."""
    monkeypatch.setattr("conformance.report.SESSION", [])
    monkeypatch.setattr("conformance.report.FINDINGS", [])


CLIENT = {"name": "rocketmq-client-cpp", "version": "1.2.3", "binding": "rocketmq 0.4.4"}
VERDICTS = [Verdict("SB-09", CLIENT, "deviates", "no maxReconsumeTimes", "Workload(...)", ("t 36",), ("",),
                    "the header names no maxReconsumeTimes"),
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
    assert (records[0]["cause"], records[0]["keys"]) == ("the header names no maxReconsumeTimes", [""])
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


def test_over_runs_a_rule_takes_its_strongest_status():
    later = [Verdict("SY-06", CLIENT, "deviates", "late"), Verdict("SB-09", CLIENT, "conforms"),
             Verdict("OR-13", CLIENT, "not judged", "x"), Verdict("OR-13", CLIENT, "conforms")]
    merged = merge_statuses(VERDICTS + later)
    assert merged == {("rocketmq-client-cpp", "1.2.3"): {"SB-09": "deviates", "SY-06": "deviates",
                                                         "CT-01": "not applicable", "OR-13": "conforms"}}
    assert format_matrix(VERDICTS + later) == [
        "rocketmq-client-cpp 1.2.3 [4.x remoting]: 2 deviates, 1 conforms, 0 indefinite, 1 not applicable, "
        "0 not judged; deviating: SB-09 SY-06"]


def test_the_matrix_groups_clients_by_protocol():
    """4.x remoting, then 5.x remoting POP (RocketMQ's Java client from 5.0), then 5.x gRPC, by name within each."""
    clients = [{"name": "rocketmq-python-client", "version": "5.1.2"},
               {"name": "rocketmq-client-java", "version": "5.3.3"},
               {"name": "rocketmq-client-java", "version": "4.9.8"}, {"name": "ali-ons", "version": "3.12.0"}]
    verdicts = [Verdict("PG-01", client, "conforms") for client in clients]
    assert [line.split(":")[0] for line in format_matrix(verdicts)] == [
        "ali-ons 3.12.0 [4.x remoting]", "rocketmq-client-java 4.9.8 (reference) [4.x remoting]",
        "rocketmq-client-java 5.3.3 [5.x remoting POP]", "rocketmq-python-client 5.1.2 [5.x gRPC]"]
    rows = render_markdown_matrix(verdicts).splitlines()[2:]
    assert [row.split(" | ")[0] for row in rows] == ["| 4.x remoting"] * 2 + ["| 5.x remoting POP", "| 5.x gRPC"]


def test_a_server_fault_fails_the_run_and_an_unsupported_request_is_only_recorded(tmp_path, monkeypatch):
    monkeypatch.setenv("RMQSPEC_REPORTS", "1")
    monkeypatch.setenv("RMQSPEC_REPORTS_DIR", str(tmp_path))
    monkeypatch.setenv("RMQSPEC_RUN_ID", "run-2")
    unsupported = {"kind": "unsupported-request", "code": 9999, "endpoint": "broker"}
    broken = {"kind": "handler-error", "code": 11, "error": "KeyError('queueId')"}
    quiet = Run(CLIENT, Workload(()), SETTINGS, (), findings=(unsupported,))

    @settings(max_examples=1, database=None)
    @given(st.just(None))
    def judge_both(_):
        judge_run(quiet, "")
        with pytest.raises(AssertionError, match="could not serve the client.*handler-error"):
            judge_run(evolve(quiet, findings=(unsupported, broken)), "")

    judge_both()
    records = [json.loads(line) for path in (tmp_path / "run-2").glob("conformance-*.jsonl")
               for line in path.read_text().splitlines()]
    found = [(r["kind"], r["code"]) for r in records if r["type"] == "conformance_finding"]
    assert sorted(found) == [("handler-error", 11), ("unsupported-request", 9999), ("unsupported-request", 9999)]


def test_the_matrix_marks_the_reference_and_reads_the_recorded_verdicts_of_every_client(tmp_path):
    java = {"name": "rocketmq-client-java", "version": "4.9.8", "binding": ""}
    other_java = {"name": "rocketmq-client-java", "version": "4.9.7", "binding": ""}
    verdicts = [*VERDICTS, Verdict("SY-06", java, "conforms"), Verdict("SB-09", java, "conforms"),
                Verdict("SB-09", other_java, "deviates")]
    assert format_matrix(verdicts)[2].startswith(
        "rocketmq-client-java 4.9.8 (reference) [4.x remoting]: 0 deviates, 2 conforms")
    (tmp_path / "run-1").mkdir()
    lines = "".join(json.dumps(to_record(v)) + "\n" for v in verdicts)
    (tmp_path / "run-1" / "conformance-local-main.jsonl").write_text(lines)
    table = render_markdown_matrix(read_verdicts([tmp_path / "run-1"]))
    assert table.splitlines() == [
        "| protocol | client | CT-01 | SB-09 | SY-06 |", "|---|---|---|---|---|",
        "| 4.x remoting | rocketmq-client-cpp 1.2.3 | n/a | deviates | conforms |",
        "| 4.x remoting | rocketmq-client-java 4.9.7 |  | deviates |  |",
        "| 4.x remoting | rocketmq-client-java 4.9.8 (reference) |  | conforms | conforms |",
    ]
    assert main([str(tmp_path / "run-1")]) == 0
    assert main([str(tmp_path / "nowhere")]) == 2


def test_hostile_verdict_lines_are_escaped_and_bad_ones_named(tmp_path, capsys):
    """A verdict file is input like any report file: its texts reach the terminal and Markdown escaped, and a line of
    the wrong shape is named on stderr, not read and not a crash."""
    run = tmp_path / "run-1"
    run.mkdir()
    hostile = {"name": "evil\x1b[2J|<script>", "version": "1\u202e", "binding": ""}
    good = json.dumps(to_record(Verdict("SB-09\x07", hostile, "deviates")))
    bad = ["{not json", json.dumps({"type": "conformance_verdict", "rule": ["SB-09"]}),
           json.dumps({**json.loads(good), "status": "great"}), json.dumps({**json.loads(good), "client": "x"})]
    (run / "conformance-local-main.jsonl").write_bytes(("\n".join([good, *bad]) + "\n").encode() + b"\xff\n")
    unreadable: list[str] = []
    verdicts = read_verdicts([run], unreadable)
    assert [v.status for v in verdicts] == ["deviates"]
    assert [name.rsplit(":", 1)[1] for name in unreadable] == ["2", "3", "4", "5", "6"]
    assert "\x1b" not in "".join(format_matrix(verdicts)) and "\\x1b" in format_matrix(verdicts)[0]
    table = render_markdown_matrix(verdicts)
    assert "\x07" not in table and "<script>" not in table and "\u202e" not in table
    assert table.splitlines()[2].count(" | ") == 2  # the name's "|" does not make a column
    assert main([str(run)]) == 0
    assert "5 line(s) not a verdict record" in capsys.readouterr().err
