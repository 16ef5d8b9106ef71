"""The report line's JSON Schema decides a line's shape: the writers' lines keep it, and the aggregate counts a line
or quarantines it with a reason exactly where the schema (jsonschema's own validator) says it breaks it. Every wrong
type of a field, a record kind the schema does not know, a long valid record, a line over the stated limit, text
that is not UTF-8, and entries that are not files are each counted or quarantined, nothing else."""

from __future__ import annotations

import json
import os

from hypothesis import HealthCheck, Phase, given, settings
from hypothesis import strategies as st

from conformance.checker.verdicts import Verdict
from conformance.report import to_record
from reportformat.__main__ import main as reportformat_main
from reportformat.lines import compact_observation, make_outcome_line, make_run_line
from reportformat.one_record import TEXT_AFTER, TWO_RECORDS, describe_extra
from reportformat.schema import LINE_SCHEMA
from reportformat.validate import find_problems
from reports import extract, job, load, transform
from reports.tests.sample import BASELINE, case, write_lines

RUN = {"run_id": "s1", "writer": "local-gw9", **BASELINE, "seed": "7", "started_at": 1.0, "finished_at": None}


def good_lines() -> list[dict]:
    """One line of every kind the writers write, as they write it."""
    observation = {"type": "test_case", "property": "p.py::t", "run_start": 1.0, "status": "failed",
                   "status_reason": "x", "representation": "t(n=1)", "arguments": {}, "how_generated": "generated",
                   "features": {"AA-01": ""}, "timing": {"execute:test": 0.1}, "coverage": None,
                   "metadata": {"traceback": "Traceback\n  File x\nAssertionError: no"}}
    stamp = {"run_id": "s1", "writer": "local-gw9", "nodeid": "p.py::t", "expected_violation": None}
    verdict = Verdict("AA-01", {"name": "cx", "version": "1.0"}, "deviates", "d", counterexample="W(1)")
    return [
        make_run_line("run started", RUN, 1.0),
        compact_observation(observation, stamp),
        compact_observation(observation | {"status": "passed"}, stamp),
        make_outcome_line("p.py::u[1]", "setup", "RuntimeError: x", "E   RuntimeError", 0.2, 2.0) | stamp,
        to_record(verdict) | {"run_id": "s1"},
        make_run_line("run finished", RUN | {"finished_at": 2.0}, 2.0),
    ]


def test_the_writers_lines_keep_the_schema():
    for line in good_lines():
        assert find_problems(json.loads(json.dumps(line, default=str))) == [], line


def ingest_lines(spark, tmp_path, lines: list, **options) -> dict[int, str | None]:
    """The lines as one report file, ingested: line number -> its quarantine reason (None: counted)."""
    run = tmp_path / "runs" / "s1"
    run.mkdir(parents=True, exist_ok=True)
    write_lines(run / "local-gw9.jsonl", lines)
    warehouse = str(tmp_path / "warehouse")
    job.ingest(spark, [str(tmp_path / "runs")], warehouse, force=True, **options)
    rows = load.read_records(spark, warehouse).collect()
    return {row["line"]: row["reason"] for row in rows if row["file"].endswith("local-gw9.jsonl")}


WRONG = [
    ({"type": ["test_case"]}, "unknown record type '[\"test_case\"]'"),
    ({"features": ["AA-01"]}, "field 'features' is an array, expected an object or null"),
    ({"status": 1}, "field 'status' is an integer, expected a string or null"),
    ({"timing": {"execute:test": "slow"}}, "field 'timing' has a value that is not a number"),
    ({"steps": "3"}, "field 'steps' is a string, expected an integer or null"),
    ({"steps": -1.0}, "field 'steps' is a number, expected an integer or null"),
    ({"nodeid": 12}, "field 'nodeid' is an integer, expected a string or null"),
    ({"status": "maybe"}, "field 'status' of a test_case line is 'maybe', expected one of passed, failed, gave_up"),
    ({"property": None}, "a test_case line without 'property'"),
    ({"type": "weird"}, "unknown record type 'weird'"),
]


def test_every_wrong_shape_is_quarantined_with_its_reason_and_a_long_valid_record_is_counted(spark, tmp_path):
    passing = case("local-gw9", "p.py::a", "passed", ["AA-01"], 0.1) | {"run_id": "s1"}
    long_failure = passing | {"status": "failed", "representation": "x" * 3_000_000, "message": "[XPASS(strict)]"}
    lines = [make_run_line("run started", RUN, 1.0), long_failure, *(passing | wrong for wrong, _ in WRONG)]
    found = ingest_lines(spark, tmp_path, lines)
    assert found == {1: None, 2: None, **{at: reason for at, (_, reason) in enumerate(WRONG, start=3)}}
    limited = ingest_lines(spark, tmp_path, lines[:2], max_line=1 << 20)
    assert limited == {1: None, 2: "a line longer than 1,048,576 bytes (--max-line-bytes)"}


def test_entries_that_are_not_files_and_text_that_is_not_utf8_are_quarantined(spark, tmp_path):
    run = tmp_path / "runs" / "s1"
    run.mkdir(parents=True)
    (run / "a-directory.jsonl").mkdir()
    os.symlink(run / "loop.jsonl", run / "loop.jsonl")
    os.symlink(run / "nowhere", run / "dangling.jsonl.gz")
    good = json.dumps(make_run_line("run started", RUN, 1.0)).encode()
    (run / "local-gw9.jsonl").write_bytes(good + b"\n" + good.replace(b"local-gw9", b"local-\xff\xfe") + b"\n")
    found = extract.find_runs(extract.get_lister(spark), [str(tmp_path / "runs")])["s1"]
    reasons = {os.path.basename(path): reason for path, reason in found.problems}
    assert reasons == {
        "a-directory.jsonl": "a directory named like a report file: not read",
        "loop.jsonl": "not a regular file (a looping or dangling symbolic link, a pipe?): not read",
        "dangling.jsonl.gz": "not a regular file (a looping or dangling symbolic link, a pipe?): not read",
    }
    for whole_file_limit in (1 << 30, 0):  # both readers: whole files, and file blocks
        lines = extract.read_lines(spark, list(found.files), whole_file_limit=whole_file_limit)
        parsed = transform.select_records(transform.parse_lines(lines)).orderBy("line").collect()
        assert [row["reason"] for row in parsed] == [None, "not UTF-8 text"]
        assert "\ufffd" in parsed[1]["text"]  # stored as valid UTF-8, the bad bytes replaced


FIELDS = [name for name in LINE_SCHEMA["properties"] if name not in ("report_schema",)]
json_values = st.recursive(
    st.none() | st.booleans() | st.integers(-(2**40), 2**40) | st.floats(allow_nan=False, allow_infinity=False)
    | st.text(max_size=8),
    lambda inner: st.lists(inner, max_size=2) | st.dictionaries(st.text(max_size=4), inner, max_size=2),
    max_leaves=4,
)
mutation = st.tuples(st.integers(0, 5), st.sampled_from(FIELDS), json_values)


@settings(max_examples=2, phases=[Phase.generate], deadline=None, suppress_health_check=list(HealthCheck))
@given(st.lists(mutation, min_size=30, max_size=30))
def test_the_aggregate_quarantines_exactly_what_the_schema_refuses(spark, tmp_path_factory, mutations):
    """Lines of every kind, each with one top-level field set to a drawn JSON value: a line is counted if and
    only if jsonschema finds it valid."""
    lines = []
    for kind, field, value in mutations:
        line = json.loads(json.dumps(good_lines()[kind], default=str))
        line[field] = value
        lines.append(line)
    found = ingest_lines(spark, tmp_path_factory.mktemp("mutated"), lines)
    expected = {at: not find_problems(line) for at, line in enumerate(lines, start=1)}
    assert {at: reason is None for at, reason in found.items()} == expected, [
        (line, found[at]) for at, line in enumerate(lines, start=1) if (found[at] is None) != expected[at]
    ]


def dump(line: dict) -> str:
    return json.dumps(line, default=str)


def test_a_second_record_or_text_after_the_record_is_quarantined_and_named_alike_by_both_readers(
    spark, tmp_path, capsys
):
    """The JSON reader stops after a line's first value: a line that holds more is quarantined, not counted as its
    first record, and `python -m reportformat` names it the same way."""
    first, other = dump(good_lines()[1]), dump(good_lines()[0])
    lines = [first + "," + other, first + " " + other, first + " x", first + "}", first + " \t", first]
    assert ingest_lines(spark, tmp_path, lines) == {1: TWO_RECORDS, 2: TWO_RECORDS, 3: TEXT_AFTER, 4: TEXT_AFTER,
                                                    5: None, 6: None}
    path = tmp_path / "runs" / "s1" / "local-gw9.jsonl"
    assert reportformat_main([str(path)]) == 1
    expected = [TWO_RECORDS, TWO_RECORDS, TEXT_AFTER, TEXT_AFTER]
    assert capsys.readouterr().out.splitlines() == [
        f"{path}:{at}: not JSON: {reason}" for at, reason in enumerate(expected, start=1)
    ]


# Text after a line's record: anything but a line break, or another record after a separator.
trailing_text = st.text(st.characters(exclude_characters="\r\n"), max_size=12) | st.builds(
    lambda separator, kind: separator + dump(good_lines()[kind]),
    st.sampled_from(["", " ", ",", ", ", "\t", " x "]),
    st.integers(0, 5),
)


@settings(max_examples=2, phases=[Phase.generate], deadline=None, suppress_health_check=list(HealthCheck))
@given(st.lists(st.tuples(st.integers(0, 5), trailing_text), min_size=30, max_size=30))
def test_text_after_a_valid_record_is_quarantined_unless_it_is_blank(spark, tmp_path_factory, capsys, lines):
    """A valid line of each kind followed by drawn text: the aggregate counts it exactly when the text is blank,
    and names it as reportformat/one_record.py and `python -m reportformat` do."""
    texts = [dump(good_lines()[kind]) + after for kind, after in lines]
    root = tmp_path_factory.mktemp("trailing")
    found = ingest_lines(spark, root, texts)
    expected = {at: describe_extra(text) for at, text in enumerate(texts, start=1)}
    assert found == expected, [(texts[at - 1], found[at], expected[at]) for at in found if found[at] != expected[at]]
    capsys.readouterr()
    path = root / "runs" / "s1" / "local-gw9.jsonl"
    reportformat_main([str(path)])
    named = capsys.readouterr().out.splitlines()
    assert named == [f"{path}:{at}: not JSON: {reason}" for at, reason in expected.items() if reason is not None]


def test_the_command_line_names_each_line_that_breaks_the_schema(tmp_path, capsys):
    path = tmp_path / "w.jsonl"
    path.write_text(json.dumps(good_lines()[1]) + "\n" + '{"type": "test_case", "report_schema": 1}\nnot json\n')
    assert reportformat_main([str(path)]) == 1
    found = capsys.readouterr().out.splitlines()
    assert [line.split(": ", 1)[0] for line in found] == [f"{path}:2", f"{path}:2", f"{path}:3"]
    assert "'property' is a required property" in found[0] + found[1] and "not JSON" in found[2]
