"""The report format: Hypothesis' observability lines (OpenPBTStats / Tyche JSON lines, experimental upstream) plus
our run-metadata lines. The report writer (reports/plugin.py) runs without PySpark, so this module does not import
it; the Spark schemas of the tables are in reports/schema.py.

A report file ``<reports dir>/<run id>/<writer>.jsonl`` holds, one JSON object per line:

- a ``run started`` line: ``{"type": "info", "property": "rmqspec.run", "title": "run started", "content": {run}}``;
- Hypothesis' ``test_case`` observations (``alert`` / ``error`` too), each stamped with ``report_schema``, ``run_id``,
  ``writer``, ``nodeid``, ``steps`` (stateful steps in the case) and ``expected_violation`` (strict-xfail reason);
- a ``run finished`` line with the end time; a file without one was written by a killed worker.

Rule ids are the ``features`` keys that look like rule ids (``hypothesis.event("SB-04")``); machine rules and
invariants are the ``timing`` keys ``execute:rule:<name>`` and ``execute:invariant:<name>``.
"""

from __future__ import annotations

REPORT_SCHEMA_VERSION = 1
RUN_PROPERTY = "rmqspec.run"
RUN_STARTED, RUN_FINISHED, RUN_INTERRUPTED = "run started", "run finished", "run interrupted"
KEPT_TYPES = ("test_case", "alert", "error")
RULE_TIMING, INVARIANT_TIMING = "execute:rule:", "execute:invariant:"
# What a passing case keeps of Hypothesis' metadata (sys.argv, predicates, backend, ... repeat on every line).
PASSING_METADATA = ("data_status", "phase", "reproduction_decorator")
RUN_FIELDS = (
    "run_id",
    "writer",
    "git_commit",
    "tox_env",
    "version",
    "message_model",
    "consume_mode",
    "retry_preset",
    "hypothesis_profile",
    "seed",
    "started_at",
    "finished_at",
    "interrupted",
)
# The fields a run's ``run started`` line gives (its end and interruption come later).
STARTED_FIELDS = RUN_FIELDS[2:-2]
CONFIGURATION_FIELDS = ("version", "message_model", "consume_mode", "retry_preset")
MAX_MESSAGE = 2000
MAX_REPORT = 100_000  # characters of pytest's own report of a failure kept in its line


def compact_observation(observation: dict, stamp: dict) -> dict | None:
    """The line we store for one Hypothesis observation, or None for the ones we do not keep (statistics).

    Passing cases drop the bulky ``representation``, ``arguments`` and most ``metadata``; failing cases keep all of
    it, with the shrunk counterexample.
    """
    if observation.get("type") not in KEPT_TYPES:
        return None
    line = {**observation, **stamp, "report_schema": REPORT_SCHEMA_VERSION}
    if observation.get("type") == "test_case":
        line["steps"] = count_steps(observation.get("representation") or "", observation.get("timing") or {})
        if observation.get("status") == "failed":
            line["message"] = get_exception_message((observation.get("metadata") or {}).get("traceback") or "")
            line["representation"] = cut_text(observation.get("representation"))
        else:
            line["representation"] = None
            line["arguments"] = {}
            metadata = observation.get("metadata") or {}
            line["metadata"] = {key: metadata.get(key) for key in PASSING_METADATA}
    return line


def cut_text(text: str | None, limit: int = MAX_REPORT) -> str | None:
    """A text kept in a line, cut after `limit` characters with how long it was (a line stays far below the
    aggregate's --max-line-bytes)."""
    if text is None or len(text) <= limit:
        return text
    return f"{text[:limit]}\n… (cut at {limit:,} of {len(text):,} characters by the report writer)"


def count_steps(representation: str, timing: dict) -> int | None:
    """Stateful steps of a case: one ``state.<rule>(...)`` line per rule call (invariants are printed alike, so
    only names with an ``execute:rule:`` timing count); None for a @given test."""
    rules = {key.removeprefix(RULE_TIMING) for key in timing if key.startswith(RULE_TIMING)}
    if not rules:
        return None
    calls = (text[len("state.") :].split("(")[0] for text in representation.splitlines() if text.startswith("state."))
    return sum(1 for name in calls if name in rules)


def get_exception_message(traceback: str, limit: int = MAX_MESSAGE) -> str | None:
    """The failure's own message: the exception line(s) after a traceback's last frame (``AssertionError: OR-14:
    ...``, not where Hypothesis found it), cut to `limit` characters."""
    lines = traceback.rstrip("\n").splitlines()
    frames = [at for at, text in enumerate(lines) if text.startswith("  File ")]
    rest = lines[frames[-1] + 1 :] if frames else lines
    start = next((at for at, text in enumerate(rest) if text and not text.startswith(" ")), None)
    return "\n".join(rest[start:])[:limit] if start is not None else None


def make_outcome_line(nodeid: str, when: str, message: str, text: str, seconds: float, now: float) -> dict:
    """A failed test as pytest reports it, where no failing Hypothesis case stands for it: a ``test_case`` line of
    its own (``how_generated`` "pytest"), failed, with pytest's message and report (cut to MAX_REPORT)."""
    phase = "" if when == "call" else f" in {when}"
    return {
        "type": "test_case",
        "property": nodeid,
        "run_start": now,
        "status": "failed",
        "status_reason": f"pytest: failed{phase}",
        "representation": text[:MAX_REPORT],
        "arguments": {},
        "how_generated": "pytest",
        "features": {},
        "timing": {"execute:test": float(seconds)},
        "metadata": {"reproduction_decorator": None},
        "nodeid": nodeid,
        "steps": None,
        "expected_violation": None,
        "message": message[:MAX_MESSAGE],
        "report_schema": REPORT_SCHEMA_VERSION,
    }


def make_run_line(title: str, run: dict, now: float) -> dict:
    return {
        "type": "info",
        "property": RUN_PROPERTY,
        "run_start": now,
        "title": title,
        "content": run,
        "report_schema": REPORT_SCHEMA_VERSION,
        "run_id": run["run_id"],
        "writer": run["writer"],
    }

# The protocol a client speaks, for the rule x client matrix's groups (conformance/report.py,
# reports/render_clients.py): 4.x remoting (push consumers that pull), 5.x remoting POP (RocketMQ 5.x's own remoting
# client in POP mode), 5.x gRPC (apache/rocketmq-clients through the proxy), in that order.
PROTOCOLS = ("4.x remoting", "5.x remoting POP", "5.x gRPC")
GRPC_CLIENTS = frozenset({"rocketmq-python-client", "rocketmq-client-nodejs"})


def get_client_protocol(name: str, version: str) -> str:
    """The protocol group of a client by its name and version: the 5.x gRPC clients by name, RocketMQ's Java client
    from 5.0 on in POP mode (the harness runs it so), every other client 4.x remoting."""
    if name in GRPC_CLIENTS:
        return PROTOCOLS[2]
    if name == "rocketmq-client-java" and version.split(".")[0].isdigit() and int(version.split(".")[0]) >= 5:
        return PROTOCOLS[1]
    return PROTOCOLS[0]
