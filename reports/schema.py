"""The one place that knows the report format: Hypothesis' observability lines (OpenPBTStats / Tyche JSON lines,
experimental upstream) plus our run-metadata lines, and the Spark schemas of every table the job reads or writes.

A report file ``<reports dir>/<run id>/<writer>.jsonl`` holds, one JSON object per line:

- a ``run started`` line: ``{"type": "info", "property": "rmqspec.run", "title": "run started", "content": {run}}``;
- Hypothesis' ``test_case`` observations (``alert`` / ``error`` too), each stamped with ``report_schema``, ``run_id``,
  ``writer``, ``nodeid``, ``steps`` (stateful steps in the case) and ``expected_violation`` (strict-xfail reason);
- a ``run finished`` line with the end time; a file without one was written by a killed worker.

Rule ids are the ``features`` keys that look like rule ids (``hypothesis.event("SB-04")``); machine rules and
invariants are the ``timing`` keys ``execute:rule:<name>`` and ``execute:invariant:<name>``.
"""

from __future__ import annotations

from functools import cache

REPORT_SCHEMA_VERSION = 1
RUN_PROPERTY = "rmqspec.run"
RUN_STARTED, RUN_FINISHED = "run started", "run finished"
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
)
CONFIGURATION_FIELDS = ("version", "message_model", "consume_mode", "retry_preset")
MAX_MESSAGE = 2000


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
        else:
            line["representation"] = None
            line["arguments"] = {}
            metadata = observation.get("metadata") or {}
            line["metadata"] = {key: metadata.get(key) for key in PASSING_METADATA}
    return line


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


# Spark schemas as data: (field, type), type "string" | "int" | "long" | "double" | "array<string>" |
# "map<string,T>" | nested fields.
# Every field is nullable; fields of the observation we do not use are not named, so upstream additions to the
# experimental format cannot break the job.
RUN_CONTENT = tuple((name, "double" if name.endswith("_at") else "string") for name in RUN_FIELDS)
RAW_LINE = (
    ("report_schema", "int"),
    ("type", "string"),
    ("property", "string"),
    ("run_start", "double"),
    ("run_id", "string"),
    ("writer", "string"),
    ("nodeid", "string"),
    ("status", "string"),
    ("status_reason", "string"),
    ("representation", "string"),
    ("how_generated", "string"),
    ("features", "map<string,string>"),
    ("timing", "map<string,double>"),
    ("steps", "int"),
    ("expected_violation", "string"),
    ("message", "string"),
    ("metadata", (("reproduction_decorator", "string"), ("traceback", "string"))),
    ("title", "string"),
    ("content", RUN_CONTENT),
)
# The input: one row per physical line.
LINES = (("run_id", "string"), ("file", "string"), ("line", "int"), ("text", "string"))
# The warehouse table, partitioned by run_id: every input line, parsed and flattened to what the aggregates read
# (rule ids and total time derived once, at ingest), or quarantined (``reason``, with the start of its ``text``);
# an empty run directory is one quarantined row with line 0.
RECORDS = (
    ("file", "string"),
    ("line", "int"),
    ("reason", "string"),
    ("text", "string"),
    ("type", "string"),
    ("property", "string"),
    ("writer", "string"),
    ("status", "string"),
    ("status_reason", "string"),
    ("nodeid", "string"),
    ("representation", "string"),
    ("expected_violation", "string"),
    ("steps", "int"),
    ("title", "string"),
    ("reproduction_decorator", "string"),
    ("message", "string"),
    ("rule_ids", "array<string>"),
    ("timing", "map<string,double>"),
    ("seconds", "double"),
    ("content", RUN_CONTENT),
    ("run_id", "string"),
)
SPEC_RULES = (("rule_id", "string"), ("title", "string"), ("chapter", "string"))
# Per-run partial aggregates, computed from a run's records when it is ingested and stored beside them, partitioned
# by run_id (replaced with the run): the aggregate combines these small tables instead of re-reading the records.
# The partials are keyed by writer (the aggregate gives each writer its configuration and seed from ``runs``), so
# that none depends on another.
FAILURES = (
    ("writer", "string"),
    ("nodeid", "string"),
    ("status_reason", "string"),
    ("message", "string"),
    ("expected_violation", "string"),
    ("representation", "string"),
    ("reproduction_decorator", "string"),
    ("steps", "int"),
    ("rule_ids", "array<string>"),
    ("run_id", "string"),
)
# Per run, writer and rule id; under a null rule id, the totals of the writer's cases.
RULE_HITS = (
    ("writer", "string"),
    ("rule_id", "string"),
    ("test_cases", "long"),
    ("steps", "long"),
    ("seconds", "double"),
    ("attributed_seconds", "double"),
    ("run_id", "string"),
)
MACHINE_COST = (
    ("machine", "string"),
    ("timing_key", "string"),
    ("seconds", "double"),
    ("test_cases", "long"),
    ("run_id", "string"),
)
# One row per writer of a run: its run metadata (``run started``) and end (``run finished``).
RUNS = (*RUN_CONTENT[1:], RUN_CONTENT[0])
QUARANTINE = (("file", "string"), ("line", "int"), ("reason", "string"), ("text", "string"), ("run_id", "string"))
PARTIALS = {
    "failures": FAILURES,
    "rule_hits": RULE_HITS,
    "machine_cost": MACHINE_COST,
    "runs": RUNS,
    "quarantine": QUARANTINE,
}


@cache
def get_spark_schema(fields: tuple):
    """The StructType of one of the field tuples above (pyspark imported here: the report writer runs without it)."""
    from pyspark.sql import types

    scalars = {
        "string": types.StringType(),
        "int": types.IntegerType(),
        "long": types.LongType(),
        "double": types.DoubleType(),
    }

    def get_type(kind):
        if isinstance(kind, tuple):
            return get_spark_schema(kind)
        if kind == "array<string>":
            return types.ArrayType(types.StringType())
        if kind.startswith("map<string,"):
            return types.MapType(types.StringType(), get_type(kind[len("map<string,") : -1]))
        return scalars[kind]

    return types.StructType([types.StructField(name, get_type(kind), True) for name, kind in fields])
