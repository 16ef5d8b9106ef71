"""Small hand-made report files: two writers of one run (one killed), bad lines of each kind, an empty run."""

from __future__ import annotations

import json
from pathlib import Path

from reports.spec_rules import Rule

RULES = [
    Rule("AA-01", "first", "01-a.md", 3),
    Rule("AA-02", "second", "01-a.md", 9),
    Rule("BB-01", "gap", "02-b.md", 3),
]
BASELINE = {
    "version": "4.9.8",
    "message_model": "clustering",
    "consume_mode": "concurrently",
    "retry_preset": "default",
}
TIGHT = {"version": "5.0.0", "message_model": "clustering", "consume_mode": "orderly", "retry_preset": "tight"}
BASELINE_LABEL = "4.9.8/clustering/concurrently/default"
TIGHT_LABEL = "5.0.0/clustering/orderly/tight"


def meta(title: str, run_id: str, writer: str, config: dict, finished: float | None = None) -> dict:
    content = {"run_id": run_id, "writer": writer, "git_commit": "abc", "tox_env": "", **config}
    content |= {"hypothesis_profile": "fast", "seed": "7", "started_at": 100.0, "finished_at": finished}
    return {
        "type": "info",
        "property": "rmqspec.run",
        "run_start": 100.0,
        "title": title,
        "content": content,
        "report_schema": 1,
        "run_id": run_id,
        "writer": writer,
    }


def case(writer: str, nodeid: str, status: str, rules: list[str], seconds: float, **extra) -> dict:
    line = {
        "type": "test_case",
        "property": nodeid,
        "run_start": 100.0,
        "status": status,
        "status_reason": "",
        "representation": None,
        "arguments": {},
        "how_generated": "generated",
        "features": dict.fromkeys(rules, ""),
        "coverage": None,
        "timing": {"execute:test": seconds},
        "metadata": {"reproduction_decorator": None},
        "run_id": "r1",
        "writer": writer,
        "nodeid": nodeid,
        "steps": None,
        "expected_violation": None,
        "report_schema": 1,
    }
    return line | extra


def write_lines(path: Path, lines: list, terminated: bool = True) -> None:
    text = "\n".join(line if isinstance(line, str) else json.dumps(line) for line in lines)
    path.write_text(text + ("\n" if terminated else ""), encoding="utf-8")


def write_sample(root: Path) -> Path:
    """reports dir with run r1 (writers gw0, gw1) and the empty run r2; returns the reports dir."""
    run = root / "runs" / "r1"
    run.mkdir(parents=True)
    (root / "runs" / "r2").mkdir()
    machine = {"execute:rule:consume": 0.2, "execute:invariant:never_lost": 0.1, "execute:test": 0.1}
    write_lines(
        run / "local-gw0.jsonl",
        [
            meta("run started", "r1", "local-gw0", BASELINE),
            case("local-gw0", "p.py::test_a", "passed", ["AA-01", "AA-02"], 1.0),
            case("local-gw0", "p.py::TestM::runTest", "passed", ["AA-01"], 0.4, timing=machine, steps=3),
            case("local-gw0", "p.py::test_b", "failed", ["AA-02"], 0.1, representation="test_b(x=100)"),
            "this is not json",
            case("local-gw0", "p.py::test_b", "failed", ["AA-02"], 0.1, representation="test_b(x=0)") | {"x": 1},
            {"report_schema": 99, "type": "test_case"},
            # A record followed by another, and by other text: the reader keeps the first value; both quarantined.
            json.dumps(meta("run started", "r1", "local-gw0", BASELINE)) + ', {"type": "alert"}',
            json.dumps(case("local-gw0", "p.py::test_b", "passed", ["AA-02"], 0.1)) + " x",
            meta("run finished", "r1", "local-gw0", BASELINE, finished=110.0),
        ],
    )
    write_lines(
        run / "local-gw1.jsonl",
        [
            meta("run started", "r1", "local-gw1", TIGHT),
            case("local-gw1", "p.py::test_a", "passed", ["AA-01", "ZZ-99"], 2.0),
            case("local-gw1", "p.py::test_c", "failed", ["AA-02"], 0.1, representation="c", expected_violation="#6163"),
            '{"type": "test_case", "status": "pas',
        ],
        terminated=False,
    )
    write_lines(run / "conformance-local-main.jsonl", CONFORMANCE)
    return root / "runs"


def verdict(client: str, rule: str, status: str, counterexample: str = "") -> dict:
    name, version = client.split(" ")
    return {
        "type": "conformance_verdict",
        "report_schema": 1,
        "run_id": "r1",
        "client": {"name": name, "version": version},
        "rule": rule,
        "status": status,
        "detail": f"{rule} {status}",
        "counterexample": counterexample,
    }


# Conformance verdicts of two runs of client cx 1.0 and of the reference, and a client that could not run (cy 2.0).
CONFORMANCE = [
    verdict("cx 1.0", "AA-01", "conforms"),
    verdict("cx 1.0", "AA-02", "deviates", "W(messages=3)") | {"detail": "the longer one"},
    verdict("cx 1.0", "AA-02", "conforms"),
    verdict("cx 1.0", "AA-02", "deviates", "W(1)"),
    verdict("cx 1.0", "BB-01", "not applicable"),
    verdict("rocketmq-client-java 4.9.8", "AA-01", "conforms"),
    verdict("rocketmq-client-java 4.9.8", "BB-01", "not judged"),
    {
        "type": "conformance_client",
        "report_schema": 1,
        "client": {"name": "cy", "version": "2.0"},
        "status": "unavailable",
        "detail": "no `cy` on PATH",
    },
]
