"""Extract: find run directories under the input paths (any filesystem Spark can read) and read their lines.

An input path is either a run directory (it holds ``*.jsonl`` report files) or a directory of run directories
(``reports/runs``, or reports collected from many CI runs). The run id of every line is its directory's name.
"""

from __future__ import annotations

import hashlib
from typing import NamedTuple

from pyspark.sql import DataFrame, SparkSession, Window
from pyspark.sql import functions as F

from reports import schema

REPORT_SUFFIX = ".jsonl"


class Run(NamedTuple):
    run_id: str
    path: str
    files: tuple[tuple[str, int, int], ...]  # (path, length, modification time)


class ReportInputError(Exception):
    """A problem with the job's input that the user must fix (shown as one line, not a Java stack trace)."""


def _file_system(spark: SparkSession, path: str):
    jvm = spark.sparkContext._jvm
    hadoop_path = jvm.org.apache.hadoop.fs.Path(path)
    return hadoop_path.getFileSystem(spark.sparkContext._jsc.hadoopConfiguration()), hadoop_path


def list_directory(spark: SparkSession, path: str) -> list[tuple[str, bool, int, int]]:
    """(path, is directory, length, modification time) of each entry; ReportInputError if `path` is missing."""
    fs, hadoop_path = _file_system(spark, path)
    if not fs.exists(hadoop_path):
        raise ReportInputError(f"input path does not exist: {path}")
    if not fs.getFileStatus(hadoop_path).isDirectory():
        raise ReportInputError(f"input path is not a directory of runs or report files: {path}")
    return [
        (s.getPath().toString(), s.isDirectory(), s.getLen(), s.getModificationTime())
        for s in fs.listStatus(hadoop_path)
    ]


def find_runs(spark: SparkSession, paths: list[str]) -> dict[str, Run]:
    """Every run under the input paths; a run directory without report files is a Run with no files."""
    runs: dict[str, Run] = {}
    for path in paths:
        entries = list_directory(spark, path)
        if any(not is_dir and p.endswith(REPORT_SUFFIX) for p, is_dir, _, _ in entries) or not entries:
            add_run(runs, path, get_report_files(entries))
            continue
        for run_path, is_dir, _, _ in entries:
            if is_dir and not get_name(run_path).startswith((".", "_")):
                add_run(runs, run_path, get_report_files(list_directory(spark, run_path)))
    return runs


def add_run(runs: dict[str, Run], path: str, files: list[tuple[str, int, int]]) -> None:
    """Runs of the same id from several inputs (e.g. CI artifacts) are one run."""
    run_id = get_name(path)
    known = runs.get(run_id, Run(run_id, path, ()))
    runs[run_id] = Run(run_id, known.path, known.files + tuple(files))


def get_report_files(entries: list[tuple[str, bool, int, int]]) -> list[tuple[str, int, int]]:
    return [(p, n, t) for p, is_dir, n, t in entries if not is_dir and p.endswith(REPORT_SUFFIX)]


def get_name(path: str) -> str:
    return path.rstrip("/").rsplit("/", 1)[-1]


def compute_fingerprint(files: tuple[tuple[str, int, int], ...]) -> str:
    """Changes whenever a run's set of files, or any file's size or time, changes (then it is ingested again)."""
    text = "\n".join(f"{get_name(p)} {n} {t}" for p, n, t in sorted(files))
    return hashlib.sha1(text.encode(), usedforsecurity=False).hexdigest()


def read_lines(spark: SparkSession, files: list[str]) -> DataFrame:
    """One row per non-empty physical line: run_id (the file's directory), file, line (1-based), text, and whether
    it is the file's last line (where a killed writer leaves a truncated one).

    Lines are read by Spark's splittable text reader; a line's number is its position in its file block (rows of
    a block get consecutive ids in read order) plus the lines of the file's earlier blocks."""
    if not files:
        empty = spark.createDataFrame([], schema.get_spark_schema(schema.LINES))
        return empty.withColumn("is_last", F.lit(False))
    lines = spark.read.text(files).select(
        F.col("value").alias("text"),
        F.col("_metadata.file_path").alias("file"),
        F.col("_metadata.file_block_start").alias("block"),
        F.monotonically_increasing_id().alias("id"),
    )
    blocks = lines.groupBy("file", "block").agg(F.min("id").alias("first_id"), F.count(F.lit(1)).alias("count"))
    earlier = Window.partitionBy("file").orderBy("block").rowsBetween(Window.unboundedPreceding, -1)
    offsets = blocks.select(
        "file",
        "block",
        F.regexp_extract("file", r"([^/]+)/[^/]+$", 1).alias("run_id"),  # once per file block, not per line
        "first_id",
        F.coalesce(F.sum("count").over(earlier), F.lit(0)).alias("before"),
        F.sum("count").over(Window.partitionBy("file")).alias("total"),
    )
    numbered = lines.join(F.broadcast(offsets), ["file", "block"]).withColumn(
        "line", (F.col("id") - F.col("first_id") + F.col("before") + 1).cast("int")
    )
    return numbered.where(F.col("text") != "").select(
        "run_id",
        "file",
        "line",
        "text",
        (F.col("line") == F.col("total")).alias("is_last"),
    )
