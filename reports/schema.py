"""The Spark schemas of every table the job reads or writes, as PySpark StructTypes, in one place.

Every field is nullable; the fields of Hypothesis' observation that the job does not use are not named, so upstream
additions to the experimental format cannot break it. The report lines themselves are reportformat/lines.py, their
shape reportformat/report-line.schema.json.
"""

from __future__ import annotations

from pyspark.sql.types import (
    ArrayType,
    BooleanType,
    DoubleType,
    IntegerType,
    LongType,
    MapType,
    StringType,
    StructField,
    StructType,
)

from reportformat.schema import LINE_SCHEMA, get_types

TEXT, NUMBER, COUNT, SECONDS = StringType(), IntegerType(), LongType(), DoubleType()
RULE_IDS = ArrayType(StringType())
TIMING = MapType(StringType(), DoubleType())

# The Spark type of a node of the report line's JSON Schema (reportformat/report-line.schema.json): an object with
# properties a struct, one with a value type a map, a field of several types (content: an object or a string) its
# JSON text, read again where its type is known.
SPARK_TYPES = {"string": StringType(), "integer": IntegerType(), "number": DoubleType(), "boolean": BooleanType()}
CORRUPT = "_corrupt_record"  # where the JSON reader puts a line with a value of the wrong type (not for text fields)


def to_spark_type(node: dict):
    declared = node.get("type", ())
    types = [name for name in get_types(node) if name != "null" and not (name == "integer" and "number" in declared)]
    if types == ["object"] and "properties" in node:
        return StructType([StructField(name, to_spark_type(sub)) for name, sub in node["properties"].items()])
    if types == ["object"]:
        values = node.get("additionalProperties")
        return MapType(StringType(), to_spark_type(values) if isinstance(values, dict) else StringType())
    return SPARK_TYPES.get(types[0], StringType()) if len(types) == 1 else StringType()


def with_corrupt_record(struct: StructType) -> StructType:
    return StructType([*struct.fields, StructField(CORRUPT, TEXT)])


# The content of a run line: the run's metadata (times are seconds since the epoch).
RUN_CONTENT = to_spark_type(LINE_SCHEMA["$defs"]["run"])
# One report line as the job parses it: every field the schema names, and the line itself when a value has the wrong
# type (reports/line_shape.py names it).
RAW_LINE = with_corrupt_record(to_spark_type(LINE_SCHEMA))
# The input: one row per physical line.
LINES = StructType(
    [
        StructField("run_id", TEXT),
        StructField("file", TEXT),
        StructField("line", NUMBER),
        StructField("text", TEXT),
    ]
)
# The warehouse table, partitioned by run_id: every input line, parsed and flattened to what the aggregates read
# (rule ids and total time derived once, at ingest), or quarantined (``reason``, with the start of its ``text``);
# an empty run directory is one quarantined row with line 0.
RECORDS = StructType(
    [
        StructField("file", TEXT),
        StructField("line", NUMBER),
        StructField("reason", TEXT),
        StructField("text", TEXT),
        StructField("type", TEXT),
        StructField("property", TEXT),
        StructField("writer", TEXT),
        StructField("status", TEXT),
        StructField("status_reason", TEXT),
        StructField("nodeid", TEXT),
        StructField("representation", TEXT),
        StructField("expected_violation", TEXT),
        StructField("steps", NUMBER),
        StructField("title", TEXT),
        StructField("reproduction_decorator", TEXT),
        StructField("message", TEXT),
        StructField("rule_ids", RULE_IDS),
        StructField("timing", TIMING),
        StructField("seconds", SECONDS),
        StructField("content", RUN_CONTENT),
        StructField("rule", TEXT),
        StructField("client_name", TEXT),
        StructField("client_version", TEXT),
        StructField("detail", TEXT),
        StructField("counterexample", TEXT),
        StructField("run_id", TEXT),
    ]
)
SPEC_RULES = StructType([StructField("rule_id", TEXT), StructField("title", TEXT), StructField("chapter", TEXT)])
# Per-run partial aggregates, computed from a run's records when it is ingested and stored beside them, partitioned
# by run_id (replaced with the run): the aggregate combines these small tables instead of re-reading the records.
# The partials are keyed by writer (the aggregate gives each writer its configuration and seed from ``runs``), so
# that none depends on another.
FAILURES = StructType(
    [
        StructField("writer", TEXT),
        StructField("nodeid", TEXT),
        StructField("status_reason", TEXT),
        StructField("message", TEXT),
        StructField("expected_violation", TEXT),
        StructField("representation", TEXT),
        StructField("reproduction_decorator", TEXT),
        StructField("steps", NUMBER),
        StructField("rule_ids", RULE_IDS),
        StructField("run_id", TEXT),
    ]
)
# Per run, writer and rule id; under a null rule id, the totals of the writer's cases.
RULE_HITS = StructType(
    [
        StructField("writer", TEXT),
        StructField("rule_id", TEXT),
        StructField("test_cases", COUNT),
        StructField("steps", COUNT),
        StructField("seconds", SECONDS),
        StructField("attributed_seconds", SECONDS),
        StructField("run_id", TEXT),
    ]
)
MACHINE_COST = StructType(
    [
        StructField("machine", TEXT),
        StructField("timing_key", TEXT),
        StructField("seconds", SECONDS),
        StructField("test_cases", COUNT),
        StructField("run_id", TEXT),
    ]
)
# One row per writer of a run: its run metadata (``run started``) and end (``run finished``), run_id last.
RUNS = StructType(RUN_CONTENT.fields[1:] + RUN_CONTENT.fields[:1])
QUARANTINE = StructType(
    [
        StructField("file", TEXT),
        StructField("line", NUMBER),
        StructField("reason", TEXT),
        StructField("text", TEXT),
        StructField("run_id", TEXT),
    ]
)
# Per run, real client and rule: the strongest verdict of the run's conformance records (reports/clients.py), how many
# verdicts, the shortest counterexample of a deviation; a client that could not run has one row with a null rule.
CLIENT_VERDICTS = StructType(
    [
        StructField("client_name", TEXT),
        StructField("client_version", TEXT),
        StructField("rule_id", TEXT),
        StructField("status", TEXT),
        StructField("verdicts", COUNT),
        StructField("detail", TEXT),
        StructField("counterexample", TEXT),
        StructField("run_id", TEXT),
    ]
)
PARTIALS = {
    "client_verdicts": CLIENT_VERDICTS,
    "failures": FAILURES,
    "rule_hits": RULE_HITS,
    "machine_cost": MACHINE_COST,
    "runs": RUNS,
    "quarantine": QUARANTINE,
}
