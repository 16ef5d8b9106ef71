"""Rule x client records of conformance runs, beside the property suite's report files.

With RMQSPEC_REPORTS=1 every verdict becomes one JSON line in
`<RMQSPEC_REPORTS_DIR>/<run id>/conformance-<writer>.jsonl` (one file per pytest process, as reports/ does):

    {"type": "conformance_verdict", "report_schema": 1, "run_id": ..., "client": {"name", "version", "binding"},
     "rule": "SB-09", "status": "conforms" | "deviates" | "not applicable" | "not judged", "detail": ...,
     "declared": bool,
     "counterexample": <shrunk workload repr, deviations only>, "trace": [<wire requests>, deviations only]}

The step also calls Hypothesis `event(rule, "<client name> <version> <status>")`, so the OpenPBTStats lines the
property reports already hold carry the rule id as their feature and the client and status as its payload.

A client is labelled "<name> <version>", and "(reference)" when it is the client the model is (RocketMQ 4.9.8's
Java client). `python -m conformance.report [RUN_DIR ...]` prints the rule x client matrix of the recorded verdicts
under the given run directories (default: every run under RMQSPEC_REPORTS_DIR) as a Markdown table: a row per
client, a column per rule, each cell the strongest status any run gave.
"""

from __future__ import annotations

import argparse
import json
import sys
import threading
from pathlib import Path

from hypothesis import currently_in_test_context, event

from conformance.checker.predict import JAVA_CLIENT
from conformance.checker.verdicts import Verdict
from reportformat.escape import to_markdown, to_terminal
from reportformat.lines import PROTOCOLS, REPORT_SCHEMA_VERSION, get_client_protocol
from runenv import run_context

LOCK = threading.Lock()
# Over runs, a rule's status for a client is the strongest seen: one deviating run makes it deviate.
STRENGTH = ("not judged", "not applicable", "indefinite", "conforms", "deviates")
# Every verdict this process recorded, for the session's rule x client matrix (conformance/suite/conftest.py).
SESSION: list = []
# (client name, kind, request code) of every server finding this process recorded.
FINDINGS: list = []


def merge_statuses(verdicts) -> dict[tuple[str, str], dict[str, str]]:
    """{(client name, version): {rule: strongest status}} over `verdicts` of any number of runs."""
    merged: dict[tuple[str, str], dict[str, str]] = {}
    for verdict in verdicts:
        row = merged.setdefault(verdict.client_key, {})
        before = row.get(verdict.rule, STRENGTH[0])
        row[verdict.rule] = max(before, verdict.status, key=STRENGTH.index)
    return merged


def get_client_label(name: str, version: str) -> str:
    """"<name> <version>", marked "(reference)" for the client the model is (predict.JAVA_CLIENT)."""
    reference = (name, version) == (JAVA_CLIENT["name"], JAVA_CLIENT["version"])
    return f"{name} {version}" + (" (reference)" if reference else "")


def get_protocol_order(client: tuple[str, str]) -> tuple:
    """Clients grouped by protocol (4.x remoting, 5.x remoting POP, 5.x gRPC), by name within a group."""
    return PROTOCOLS.index(get_client_protocol(*client)), client


def format_matrix(verdicts) -> list[str]:
    """One line per client, grouped by protocol: how many rules conform, deviate, are not applicable or not judged,
    and which deviate."""
    lines = []
    for (name, version), row in sorted(merge_statuses(verdicts).items(), key=lambda item: get_protocol_order(item[0])):
        counts = ", ".join(f"{sum(s == status for s in row.values())} {status}" for status in reversed(STRENGTH))
        deviating = " ".join(sorted(rule for rule, status in row.items() if status == "deviates")) or "none"
        lines.append(to_terminal(f"{get_client_label(name, version)} [{get_client_protocol(name, version)}]: "
                                 f"{counts}; deviating: {deviating}"))
    return lines


def render_markdown_matrix(verdicts) -> str:
    """The rule x client matrix as a Markdown table: a row per client, grouped by protocol, a column per rule (n/a:
    not applicable)."""
    merged = merge_statuses(verdicts)
    rules = sorted({rule for row in merged.values() for rule in row})
    lines = ["| protocol | client | " + " | ".join(map(to_markdown, rules)) + " |", "|---|---|" + "---|" * len(rules)]
    for (name, version), row in sorted(merged.items(), key=lambda item: get_protocol_order(item[0])):
        cells = [to_markdown(row.get(rule, "").replace("not applicable", "n/a")) for rule in rules]
        lines.append(f"| {get_client_protocol(name, version)} | {to_markdown(get_client_label(name, version))} | "
                     + " | ".join(cells) + " |")
    return "\n".join(lines) + "\n"


def read_verdicts(run_dirs: list[Path], unreadable: list[str] | None = None) -> list:
    """The verdicts recorded under `run_dirs` (conformance-*.jsonl), as Verdict values; each line that is not a
    verdict record of the expected shape is named ("<file>:<line>") in `unreadable`, not read."""
    verdicts = []
    for run_dir in run_dirs:
        for path in sorted(run_dir.glob("conformance-*.jsonl")):
            text = path.read_bytes().decode("utf-8", errors="replace")
            for number, line in enumerate(text.splitlines(), 1):
                try:
                    verdicts.extend(to_verdicts(line))
                except (ValueError, KeyError, TypeError, AttributeError):
                    if unreadable is not None:
                        unreadable.append(f"{path}:{number}")
    return verdicts


def to_verdicts(line: str) -> list:
    """The verdict one report line records ([] for a blank line or another record type); ValueError, KeyError or
    TypeError for a line of the wrong shape."""
    record = json.loads(line) if line.strip() else {}
    if record.get("type") != "conformance_verdict":
        return []
    fields = [record["rule"], record["client"]["name"], record["client"]["version"], record["status"],
              record["detail"], record.get("cause", ""), record.get("backend", "")]
    if not all(isinstance(f, str) for f in fields) or not isinstance(record.get("keys", []), list):
        raise TypeError("a verdict's fields are strings")
    if record["status"] not in STRENGTH:
        raise ValueError(f"status {record['status']!r} is none of {STRENGTH}")
    return [Verdict(record["rule"], record["client"], record["status"], record["detail"],
                    keys=tuple(record.get("keys", ())), cause=record.get("cause", ""),
                    backend=record.get("backend", ""))]


def get_report_path():
    directory = run_context.get_reports_dir() / run_context.get_run_id()
    return directory / f"conformance-{run_context.get_writer_name()}.jsonl"


def to_record(verdict) -> dict:
    return {"type": "conformance_verdict", "report_schema": REPORT_SCHEMA_VERSION, "run_id": run_context.get_run_id(),
            "client": verdict.client,
            "rule": verdict.rule, "status": verdict.status, "detail": verdict.detail,
            "declared": bool(verdict.cause), "cause": verdict.cause, "keys": list(verdict.keys),
            "backend": verdict.backend,
            "counterexample": verdict.counterexample, "trace": list(verdict.trace)}


def record_findings(run) -> None:
    """The server's findings of one run, each a record {"type": "conformance_finding", "client", ...}, kept for
    the session's summary too."""
    FINDINGS.extend((run.client.get("name"), finding["kind"], finding.get("code")) for finding in run.findings)
    if not run_context.is_reporting() or not run.findings:
        return
    append_records({"type": "conformance_finding", "report_schema": REPORT_SCHEMA_VERSION,
                    "run_id": run_context.get_run_id(), "client": run.client, **finding} for finding in run.findings)


def append_records(records) -> None:
    """Append JSON lines to this process's conformance report file, under the lock."""
    lines = "".join(json.dumps(record, sort_keys=True, default=str) + "\n" for record in records)
    path = get_report_path()
    path.parent.mkdir(parents=True, exist_ok=True)
    with LOCK, path.open("a", encoding="utf-8") as out:
        out.write(lines)


def record_unavailable(name: str, version: str, reason: str) -> None:
    """A client that could not run: one record {"type": "conformance_client", "status": "unavailable"} with the
    reason, so the rule x client matrix says why its column is empty (reports on only)."""
    if run_context.is_reporting():
        append_records([{"type": "conformance_client", "report_schema": REPORT_SCHEMA_VERSION,
                         "run_id": run_context.get_run_id(), "client": {"name": name, "version": version},
                         "status": "unavailable", "detail": reason}])


def record_verdicts(verdicts) -> None:
    """Mark each verdict as a Hypothesis event, keep it for the session's matrix and, when reports are on, append
    its record."""
    SESSION.extend(verdicts)
    for verdict in verdicts:
        if verdict.status in ("conforms", "deviates"):
            if currently_in_test_context():  # a plain test (the smoke test) has no Hypothesis context to mark
                event(verdict.rule, f"{verdict.client['name']} {verdict.client['version']} {verdict.status}")
    if not run_context.is_reporting():
        return
    append_records(to_record(v) for v in verdicts)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m conformance.report", description="the rule x client matrix")
    parser.add_argument("run_dirs", nargs="*", type=Path, help="run directories (default: every run)")
    args = parser.parse_args(argv)
    run_dirs = args.run_dirs or sorted(p for p in run_context.get_reports_dir().glob("*") if p.is_dir())
    missing = [str(p) for p in run_dirs if not p.is_dir()]
    if missing:
        print(f"no such run directory: {', '.join(missing)}", file=sys.stderr)
        return 2
    unreadable: list[str] = []
    verdicts = read_verdicts(run_dirs, unreadable)
    if unreadable:
        print(to_terminal(f"{len(unreadable)} line(s) not a verdict record, not read: {', '.join(unreadable[:5])}"
                          + (" …" if len(unreadable) > 5 else ""), 500), file=sys.stderr)
    if not verdicts:
        print("no conformance verdicts under " + (", ".join(map(str, run_dirs)) or "no run"), file=sys.stderr)
        return 1
    print(render_markdown_matrix(verdicts), end="")
    return 0


if __name__ == "__main__":
    sys.exit(main())
