"""Extract: find run directories under the input paths (any filesystem Spark can read) and read their lines.

An input path is either a run directory (it holds ``*.jsonl`` report files) or a directory of run directories
(``reports/runs``, or reports collected from many CI runs). The run id of every line is its directory's name.
"""

from __future__ import annotations

import hashlib
import os
from collections.abc import Callable
from functools import partial
from typing import NamedTuple

from pyspark.sql import DataFrame, SparkSession, Window
from pyspark.sql import functions as F
from pyspark.sql import types as T

from reports import schema
from reports.local_frame import create_frame

REPORT_SUFFIX = ".jsonl"
# Files up to this size are read whole, one row each (a task holds a few copies of one); larger ones by blocks.
WHOLE_FILE_LIMIT = 32 << 20
# Reading whole files saves a fixed cost per job; past this much input both readers measured alike (500 MB: 5.0 and
# 5.1 s), and the 5M-row benchmark ran 8 % slower once with whole files, so large inputs keep the block reader.
WHOLE_INPUT_LIMIT = 1 << 30
# Line breaks as Hadoop's line reader (Spark's text source) knows them.
LINE_BREAK = r"\r\n|\r|\n"


class Run(NamedTuple):
    run_id: str
    path: str
    files: tuple[tuple[str, int, int], ...]  # (path, length, modification time)


class ReportInputError(Exception):
    """A problem with the job's input that the user must fix (shown as one line, not a Java stack trace)."""


# (path, is directory, length, modification time in ms) of each entry of a directory.
Lister = Callable[[str], list[tuple[str, bool, int, int]]]


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


def get_lister(spark: SparkSession) -> Lister:
    return partial(list_directory, spark)


def list_local_directory(path: str) -> list[tuple[str, bool, int, int]]:
    """list_directory of a local path without the JVM (the driver chooses how to start it from what it finds); the
    same lengths and times as Hadoop's local file system, so the same fingerprints."""
    local = path.removeprefix("file:")
    if not os.path.exists(local):
        raise ReportInputError(f"input path does not exist: {path}")
    if not os.path.isdir(local):
        raise ReportInputError(f"input path is not a directory of runs or report files: {path}")
    with os.scandir(local) as entries:
        stats = [(entry.path, entry.is_dir(), entry.stat()) for entry in entries]
    return [(p, is_dir, stat.st_size, stat.st_mtime_ns // 1_000_000) for p, is_dir, stat in stats]


def find_runs(list_entries: Lister, paths: list[str]) -> dict[str, Run]:
    """Every run under the input paths; a run directory without report files is a Run with no files."""
    runs: dict[str, Run] = {}
    for path in paths:
        entries = list_entries(path)
        if any(not is_dir and p.endswith(REPORT_SUFFIX) for p, is_dir, _, _ in entries) or not entries:
            add_run(runs, path, get_report_files(entries))
            continue
        for run_path, is_dir, _, _ in entries:
            if is_dir and not get_name(run_path).startswith((".", "_")):
                add_run(runs, run_path, get_report_files(list_entries(run_path)))
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


def select_pending(runs: dict[str, Run], known: dict[str, str], force: bool) -> dict[str, str]:
    """Run id -> fingerprint of the runs to ingest: new ones, changed ones (`known` holds the fingerprints of the
    ingested runs), or all of them with `force`."""
    fingerprints = {run_id: compute_fingerprint(run.files) for run_id, run in runs.items()}
    return {r: f for r, f in sorted(fingerprints.items()) if force or known.get(r) != f}


def read_lines(spark: SparkSession, files: list[tuple[str, int, int]], whole_file_limit: int = WHOLE_FILE_LIMIT):
    """One row per non-empty physical line of the files (path, length, time): run_id (the file's directory), file,
    line (1-based), text, and whether it is the file's last line (where a killed writer leaves a truncated one)."""
    paths = [path for path, _, _ in files]
    if not paths:
        empty = create_frame(spark, [], schema.LINES)
        return empty.withColumn("is_last", F.lit(False))
    lengths = [length for _, length, _ in files]
    if max(lengths) <= whole_file_limit and sum(lengths) <= WHOLE_INPUT_LIMIT:
        return read_whole_files(spark, paths)
    return read_file_blocks(spark, paths)


def read_whole_files(spark: SparkSession, paths: list[str]) -> DataFrame:
    """read_lines of files small enough to be one row each, split into lines where they are: one pass, where
    numbering the lines of file blocks needs a job that counts them first (~1.5 s of a 50k-line ingest in a fresh
    JVM, in Spark's event log)."""
    files = spark.read.text(paths, wholetext=True).select(
        F.col("_metadata.file_path").alias("file"),
        F.regexp_extract("_metadata.file_path", r"([^/]+)/[^/]+$", 1).alias("run_id"),
        # Split at "\n" without a regular expression (~3x faster) unless the file has other line breaks.
        F.when(F.col("value").contains("\r"), F.split("value", LINE_BREAK))
        .otherwise(F.split("value", "\n"))
        .alias("pieces"),
    )
    # As the text reader counts lines: a final line break ends the last line, it does not begin an empty one.
    # Counted before the explode, whose rows then do not carry (copy) the file's array of lines.
    total = F.size("pieces") - F.when(F.element_at("pieces", -1) == "", 1).otherwise(0)
    counted = files.select("run_id", "file", "pieces", total.alias("total"))
    lines = counted.select("run_id", "file", "total", F.posexplode_outer("pieces").alias("index", "text"))
    return lines.where(F.col("text") != "").select(
        "run_id",
        "file",
        (F.col("index") + 1).cast(T.IntegerType()).alias("line"),
        "text",
        (F.col("index") + 1 == F.col("total")).alias("is_last"),
    )


def read_file_blocks(spark: SparkSession, paths: list[str]) -> DataFrame:
    """read_lines by Spark's splittable text reader, for large files: a line's number is its position in its file
    block (rows of a block get consecutive ids in read order) plus the lines of the file's earlier blocks."""
    lines = spark.read.text(paths).select(
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
        "line", (F.col("id") - F.col("first_id") + F.col("before") + 1).cast(T.IntegerType())
    )
    return numbered.where(F.col("text") != "").select(
        "run_id",
        "file",
        "line",
        "text",
        (F.col("line") == F.col("total")).alias("is_last"),
    )
