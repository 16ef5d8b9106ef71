"""Transform: DataFrame -> DataFrame steps from raw lines to records, and from a run's records to its partial
aggregates (reports/combine.py combines those of every run). No I/O here."""

from __future__ import annotations

from pyspark.sql import Column, DataFrame, Window
from pyspark.sql import functions as F
from pyspark.sql import types as T

from reportformat import lines as report_format
from reportformat import one_record
from reports import schema
from reports.clients import compute_client_verdicts
from reports.extract import MAX_LINE
from reports.line_shape import with_shape_problem
from reports.spec_rules import RULE_ID

RULE_ID_PATTERN = "^" + RULE_ID.pattern.replace(r"\b", "") + "$"
UNKNOWN = "unknown"


BOM = "\ufeff"
TRUNCATED = "truncated last line (writer killed?)"
# The line read as an array's elements, each an object: how many objects it holds (null: not a list of objects).
TYPE_ONLY = T.StructType([T.StructField("type", T.StringType())])
OBJECTS = T.ArrayType(TYPE_ONLY)
# The line read as an object's value: refused where a "]" after the record ends that array early ("{...}]x").
WRAPPED = schema.with_corrupt_record(T.StructType([T.StructField("x", TYPE_ONLY)]))


def parse_lines(lines: DataFrame, max_line: int = MAX_LINE) -> DataFrame:
    """Adds ``record`` (the line parsed with the schema's struct), ``run`` (a run line's content, parsed) and
    ``reason`` (why the line is quarantined, or null).

    A UTF-8 byte order mark before a line is not part of it. The JSON reader stops after the line's first value, so
    the line is also read as an array's elements (a second, cheap parse that keeps only each object's type; a line
    holding "]" also as an object's value, as a "]" after the record would end the array early): a line that is not
    exactly one object is quarantined (reportformat/one_record.py names why), and
    reports/line_shape.py checks the record against the schema. A line of more than `max_line` bytes is quarantined
    unread, with that reason."""
    # The line without its byte order mark, as an expression (a column of its own would copy every line once more).
    body = F.when(F.col("text").startswith(BOM), F.expr("substring(text, 2)")).otherwise(F.col("text"))
    short = (F.col("bytes") if "bytes" in lines.columns else F.octet_length("text")) <= max_line
    options = {"columnNameOfCorruptRecord": schema.CORRUPT, "maxStringLen": str(max_line)}
    parsed = lines.withColumn("record", F.from_json(F.when(short, body), schema.RAW_LINE, options))
    record = F.col("record")
    run_struct = schema.with_corrupt_record(schema.RUN_CONTENT)
    run = F.when(record["type"] == "info", F.from_json(record["content"], run_struct, options))
    parsed = parsed.withColumn("run", run)
    objects = F.size(F.from_json(F.concat(F.lit("["), body, F.lit("]")), OBJECTS, options))
    wrapped = F.from_json(F.concat(F.lit('{"x": '), body, F.lit("}")), WRAPPED, options)
    one = F.coalesce(objects == 1, F.lit(False)) & ~(body.contains("]") & wrapped[schema.CORRUPT].isNotNull())
    broken = record[schema.CORRUPT].isNotNull() & ~one & ~F.coalesce(objects >= 2, F.lit(False))
    version = record["report_schema"]
    reason = (
        F.when(~(F.col("utf8") if "utf8" in lines.columns else F.is_valid_utf8("text")), F.lit("not UTF-8 text"))
        .when(~short, F.lit(f"a line longer than {max_line:,} bytes (--max-line-bytes)"))
        .when(broken & F.col("is_last"), F.lit(TRUNCATED))
        .when(broken, F.lit("not a JSON report line"))
        .when(~body.startswith("{") & ~F.ltrim(body).startswith("{"), F.lit("not a JSON report line"))
        .when(~one, describe_extra(body, objects))
        .when(
            version.isNull() | (version != report_format.REPORT_SCHEMA_VERSION),
            F.concat(F.lit("unknown report schema version "), F.coalesce(version.cast("string"), F.lit("(none)"))),
        )
        .otherwise(F.col("shape"))
    )
    return with_shape_problem(parsed, body).withColumn("reason", reason).drop("shape")


def describe_extra(body: Column, objects: Column) -> Column:
    """Why a line whose first value is a record holds more (reportformat/one_record.py's rule)."""
    two = F.coalesce(objects >= 2, F.lit(False)) | body.rlike(one_record.TWO_RECORDS_PATTERN)
    return F.when(two, F.lit(one_record.TWO_RECORDS)).otherwise(F.lit(one_record.TEXT_AFTER))


def select_records(parsed: DataFrame) -> DataFrame:
    """The warehouse rows (schema.RECORDS): a good line flattened to what the aggregates read, with the spec rule
    ids it marked and its total time; a quarantined line keeps only the start of its text."""
    good = F.col("reason").isNull()
    record = F.col("record")

    def kept(column):
        return F.when(good, column)

    features = F.coalesce(record["features"], F.create_map())
    timing = F.coalesce(record["timing"], F.create_map())
    rule_ids = F.filter(F.map_keys(features), lambda key: key.rlike(RULE_ID_PATTERN)).cast(T.ArrayType(T.StringType()))
    seconds = F.aggregate(F.map_values(timing), F.lit(0.0), lambda total, x: total + x).cast(T.DoubleType())
    return parsed.select(
        "file",
        "line",
        "reason",
        F.when(~good, F.make_valid_utf8(F.substring("text", 1, 300))).alias("text"),
        kept(record["type"]).alias("type"),
        kept(record["property"]).alias("property"),
        kept(F.coalesce(record["writer"], get_file_writer("file"))).alias("writer"),
        *(kept(record[name]).alias(name) for name in ("status", "status_reason")),
        kept(F.coalesce(record["nodeid"], record["property"])).alias("nodeid"),
        *(kept(record[name]).alias(name) for name in ("representation", "expected_violation", "steps", "title")),
        kept(record["metadata"]["reproduction_decorator"]).alias("reproduction_decorator"),
        kept(record["message"]).alias("message"),
        kept(rule_ids).alias("rule_ids"),
        kept(record["timing"]).alias("timing"),
        kept(seconds).alias("seconds"),
        kept(F.col("run").dropFields(schema.CORRUPT)).alias("content"),
        kept(record["rule"]).alias("rule"),
        kept(record["client"]["name"]).alias("client_name"),
        kept(record["client"]["version"]).alias("client_version"),
        *(kept(record[name]).alias(name) for name in ("detail", "counterexample")),
        "run_id",
    )


def get_file_writer(file: str):
    """The writer a report file is named after (``<writer>.jsonl``): the writer of its lines that do not name one."""
    return F.regexp_extract(file, r"([^/]+?)\.jsonl(\.gz)?$", 1)


def select_quarantine(records: DataFrame) -> DataFrame:
    return records.where(F.col("reason").isNotNull()).select("file", "line", "reason", "text", "run_id")


def select_runs(records: DataFrame) -> DataFrame:
    """One row per writer of a run: its metadata from ``run started`` and its end from ``run finished``."""
    meta = records.where((F.col("type") == "info") & (F.col("property") == report_format.RUN_PROPERTY))
    started = F.when(F.col("title") == report_format.RUN_STARTED, F.col("content"))
    finished = F.when(F.col("title") == report_format.RUN_FINISHED, F.col("content.finished_at"))
    interrupted = (F.col("title") == report_format.RUN_INTERRUPTED) | F.coalesce("content.interrupted", F.lit(False))
    grouped = meta.groupBy("run_id", "writer").agg(
        F.first(started, ignorenulls=True).alias("started"),
        F.max(finished).alias("finished_at"),
        F.max(interrupted).alias("interrupted"),
    )
    fields = [F.col(f"started.{name}").alias(name) for name in report_format.STARTED_FIELDS]
    return grouped.select("run_id", "writer", *fields, "finished_at", "interrupted")


def select_observations(records: DataFrame) -> DataFrame:
    """One row per Hypothesis test case."""
    columns = ["writer", "file", "line", "property", "nodeid", "status", "status_reason", "representation"]
    columns += ["reproduction_decorator", "expected_violation", "message", "rule_ids", "timing", "seconds", "steps"]
    columns += ["run_id"]
    return records.where(F.col("type") == "test_case").select(*columns)


def select_failures(cases: DataFrame) -> DataFrame:
    """The shrunk counterexample of each failing test: its last failing case (shrinking writes smaller ones later)."""
    key = ["run_id", "writer", "nodeid", "status_reason"]
    last = Window.partitionBy(*key).orderBy(F.col("line").desc())
    failed = cases.where(F.col("status") == "failed").withColumn("rank", F.row_number().over(last))
    return failed.where(F.col("rank") == 1).select(
        "run_id",
        "writer",
        "nodeid",
        "status_reason",
        "message",
        "expected_violation",
        "representation",
        "reproduction_decorator",
        "steps",
        "rule_ids",
    )


def compute_rule_hits(observations: DataFrame) -> DataFrame:
    """Per run, writer and rule: test cases, steps, their time, and that time shared evenly among each case's rules.
    Under a null rule id: the totals of all the writer's cases. (combine.py gives each writer its configuration.)"""
    every_rule_and_none = F.concat("rule_ids", F.array(F.lit(None).cast(T.StringType())))
    exploded = observations.select(
        "run_id",
        "writer",
        F.explode(every_rule_and_none).alias("rule_id"),
        F.coalesce("steps", F.lit(0)).alias("steps"),
        "seconds",
        F.size("rule_ids").alias("rule_count"),
    )
    share = F.when(F.col("rule_id").isNotNull(), F.col("seconds") / F.col("rule_count"))
    return exploded.groupBy("run_id", "writer", "rule_id").agg(
        F.count(F.lit(1)).alias("test_cases"),
        F.sum("steps").alias("steps"),
        F.sum("seconds").alias("seconds"),
        F.sum(share).alias("attributed_seconds"),
    )


def compute_machine_cost(observations: DataFrame) -> DataFrame:
    """Per run, time per test (a machine is a test) and per timing key (``execute:rule:<name>`` is a machine rule)."""
    timed = observations.select("run_id", "nodeid", F.explode("timing").alias("timing_key", "seconds"))
    per_test = timed.groupBy("run_id", "nodeid", "timing_key").agg(
        F.sum("seconds").alias("seconds"), F.count(F.lit(1)).alias("test_cases")
    )
    # The machine is named once per test and timing key, not once per case.
    named = per_test.withColumn("machine", F.regexp_replace("nodeid", r"\[.*$", ""))
    return sum_by(named, ["run_id", "machine", "timing_key"], ["seconds", "test_cases"])


def sum_by(frame: DataFrame, keys: list[str], columns: list[str]) -> DataFrame:
    return frame.groupBy(*keys).agg(*(F.sum(name).alias(name) for name in columns))


def compute_partials(records: DataFrame) -> dict[str, DataFrame]:
    """The per-run partial tables (schema.PARTIALS) of the runs in `records`. They are keyed by writer, not by
    configuration (combine.py gives each writer its configuration), so that none depends on another."""
    observations = select_observations(records)
    return {
        "client_verdicts": compute_client_verdicts(records),
        "runs": select_runs(records),
        "failures": select_failures(observations),
        "rule_hits": compute_rule_hits(observations),
        "machine_cost": compute_machine_cost(observations),
        "quarantine": select_quarantine(records),
    }
