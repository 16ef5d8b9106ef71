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

from pyspark.sql.types import (
    DoubleType,
    IntegerType,
    MapType,
    StringType,
    StructField,
    StructType,
)

REPORT_SCHEMA_VERSION = 1
RUN_PROPERTY = "rmqspec.run"
RUN_STARTED, RUN_FINISHED = "run started", "run finished"
KEPT_TYPES = ("test_case", "alert", "error")
RULE_TIMING, INVARIANT_TIMING = "execute:rule:", "execute:invariant:"
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


def compact_observation(observation: dict, stamp: dict) -> dict | None:
    """The line we store for one Hypothesis observation, or None for the ones we do not keep (statistics).

    Passing cases drop the bulky ``representation`` and ``arguments``; failing cases keep the shrunk counterexample.
    """
    if observation.get("type") not in KEPT_TYPES:
        return None
    line = {**observation, **stamp, "report_schema": REPORT_SCHEMA_VERSION}
    if observation.get("type") == "test_case":
        line["steps"] = count_steps(observation.get("representation") or "", observation.get("timing") or {})
        if observation.get("status") != "failed":
            line["representation"] = None
            line["arguments"] = {}
    return line


def count_steps(representation: str, timing: dict) -> int | None:
    """Stateful steps of a case: one ``state.<rule>(...)`` line per rule call (invariants are printed alike, so
    only names with an ``execute:rule:`` timing count); None for a @given test."""
    rules = {key.removeprefix(RULE_TIMING) for key in timing if key.startswith(RULE_TIMING)}
    if not rules:
        return None
    calls = (text[len("state.") :].split("(")[0] for text in representation.splitlines() if text.startswith("state."))
    return sum(1 for name in calls if name in rules)


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


def _struct(*fields: tuple[str, object]) -> StructType:
    return StructType([StructField(name, kind, True) for name, kind in fields])


RUN_CONTENT = _struct(*((name, DoubleType() if name.endswith("_at") else StringType()) for name in RUN_FIELDS))

# How a raw line is parsed; fields we do not use are not named, so upstream additions cannot break the job.
RAW_LINE = _struct(
    ("report_schema", IntegerType()),
    ("type", StringType()),
    ("property", StringType()),
    ("run_start", DoubleType()),
    ("run_id", StringType()),
    ("writer", StringType()),
    ("nodeid", StringType()),
    ("status", StringType()),
    ("status_reason", StringType()),
    ("representation", StringType()),
    ("how_generated", StringType()),
    ("features", MapType(StringType(), StringType())),
    ("timing", MapType(StringType(), DoubleType())),
    ("steps", IntegerType()),
    ("expected_violation", StringType()),
    ("metadata", _struct(("reproduction_decorator", StringType()), ("traceback", StringType()))),
    ("title", StringType()),
    ("content", RUN_CONTENT),
)

# Raw text of the input: one row per physical line.
LINES = _struct(("run_id", StringType()), ("file", StringType()), ("line", IntegerType()), ("text", StringType()))

# The warehouse table, partitioned by run_id: every input line, parsed (``record``) or quarantined (``reason``, with
# the start of its ``text``); an empty run directory is one quarantined row with line 0.
RECORDS = _struct(
    ("file", StringType()),
    ("line", IntegerType()),
    ("reason", StringType()),
    ("text", StringType()),
    ("record", RAW_LINE),
    ("run_id", StringType()),
)

SPEC_RULES = _struct(("rule_id", StringType()), ("title", StringType()), ("chapter", StringType()))
