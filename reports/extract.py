"""Extract: find run directories under the input paths (any filesystem Spark can read) and read their lines.

An input path is either a run directory (it holds ``*.jsonl`` or ``*.jsonl.gz`` report files) or a directory of
run directories (``reports/runs``, or reports collected from many CI runs). The run id of every line is its
directory's name, and a run is identified by its id: the same run found under several inputs is one run, and one
writer's file (``<writer>.jsonl``) found twice is read once. What cannot be read is kept as a problem of its run
(quarantined with its reason): a directory whose name is not a valid run id, an empty report file, a second,
different copy of a writer's file, a run directory without report files.
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

from reports import filesystem, schema
from reports.local_frame import create_frame
from runenv.run_context import RUN_ID_RULE, is_valid_run_id

REPORT_SUFFIXES = (".jsonl", ".jsonl.gz")  # Spark reads gzip files by their name
# Files up to this size are read whole, one row each (a task holds a few copies of one); larger ones by blocks.
WHOLE_FILE_LIMIT = 32 << 20
# Reading whole files saves a fixed cost per job; past this much input both readers measured alike (500 MB: 5.0 and
# 5.1 s), and the 5M-row benchmark ran 8 % slower once with whole files, so large inputs keep the block reader.
WHOLE_INPUT_LIMIT = 1 << 30
# The longest line read (--max-line-bytes): a task holds a line a few times over (its bytes, its Java string, the
# parsed record) in the embedded driver's 1 GB heap, and a VARIANT holds 16 MiB. Of a longer line, its start is kept.
MAX_LINE, KEPT_OF_LONG = 16 << 20, 1000
# Line breaks as Hadoop's line reader (Spark's text source) knows them.
LINE_BREAK = r"\r\n|\r|\n"


# What an entry named like a report file is when it is not a file (quarantined with that reason).
NOT_A_FILE = {
    True: "a directory named like a report file: not read",
    None: "not a regular file (a looping or dangling symbolic link, a pipe?): not read",
}


class Run(NamedTuple):
    run_id: str
    path: str
    files: tuple[tuple[str, int, int], ...]  # (path, length, modification time)
    problems: tuple[tuple[str, str], ...] = ()  # (path, reason) of what is quarantined instead of read


class ReportInputError(Exception):
    """A problem with the job's input that the user must fix (shown as one line, not a Java stack trace)."""


# (path, is directory, length, modification time in ms) of each entry of a directory.
Lister = Callable[[str], list[tuple[str, bool, int, int]]]


def list_directory(spark: SparkSession, path: str) -> list[tuple[str, bool, int, int]]:
    """(path, is directory, length, modification time) of each entry; ReportInputError if `path` is missing."""
    if not filesystem.exists(spark, path):
        raise ReportInputError(f"input path does not exist: {path}")
    if not filesystem.is_directory(spark, path):
        raise ReportInputError(f"input path is not a directory of runs or report files: {path}")
    entries = filesystem.list_entries(spark, path)
    if not filesystem.is_local(path):
        return entries
    # Hadoop's local listing leaves out what it cannot stat (a looping or dangling symbolic link): named here.
    listed = {get_name(entry[0]) for entry in entries}
    return entries + [entry for entry in list_local_directory(path) if get_name(entry[0]) not in listed]


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
        return [describe_entry(entry) for entry in entries]


def describe_entry(entry: os.DirEntry) -> tuple[str, bool | None, int, int]:
    """(path, is directory, length, modification time in ms) of a directory's entry; is directory None for what is
    neither a regular file nor a directory (a looping or dangling symbolic link, a pipe, a socket)."""
    try:
        stat = entry.stat()
        kind = True if entry.is_dir() else False if entry.is_file() else None
    except OSError:
        return entry.path, None, 0, 0
    return entry.path, kind, stat.st_size, stat.st_mtime_ns // 1_000_000


def find_runs(list_entries: Lister, paths: list[str]) -> dict[str, Run]:
    """Every run under the input paths, by run id."""
    runs: dict[str, Run] = {}
    for path in paths:
        entries = list_entries(path)
        if any(is_report_file(p, is_dir) for p, is_dir, _, _ in entries) or not entries:
            add_run(runs, path, entries)
            continue
        for run_path, is_dir, _, _ in entries:
            if is_dir and not get_name(run_path).startswith((".", "_")):
                add_run(runs, run_path, list_entries(run_path))
    return {run_id: finish_run(run) for run_id, run in runs.items()}


def add_run(runs: dict[str, Run], path: str, entries: list[tuple[str, bool, int, int]]) -> None:
    """Adds the report files of the run directory `path` to its run: runs of the same id from several inputs (e.g.
    CI artifacts) are one run. A directory name that is not a run id is quarantined under an id made from it."""
    name = get_name(path)
    files = tuple((p, n, t) for p, is_dir, n, t in entries if is_report_file(p, is_dir))
    problems = tuple((p, NOT_A_FILE[kind]) for p, kind, _, _ in entries if kind is not False and is_named_report(p))
    run_id = name
    if not is_valid_run_id(name):
        run_id = "invalid-name-" + hashlib.sha1(name.encode(), usedforsecurity=False).hexdigest()[:12]
        reason = f"run directory name {name!r} is not a run id ({RUN_ID_RULE}); its {len(files)} files are not read"
        problems, files = ((path, reason),), ()
    known = runs.get(run_id, Run(run_id, path, ()))
    runs[run_id] = Run(run_id, known.path, known.files + files, known.problems + problems)


def finish_run(run: Run) -> Run:
    """One file per writer (the same file found twice is read once; a different copy is quarantined), empty
    files quarantined, and a run without any file is one problem."""
    kept: dict[str, tuple[str, int, int]] = {}
    problems = list(run.problems)
    for path, length, time in run.files:
        writer = get_writer(path)
        if writer not in kept:
            if length == 0:
                problems.append((path, "empty report file"))
                continue
            kept[writer] = (path, length, time)
        elif kept[writer][1:] != (length, time):
            reason = f"another copy of writer {writer}'s file in run {run.run_id} (read: {kept[writer][0]})"
            problems.append((path, reason))
    if not kept and not problems:
        problems.append((run.path, "empty run directory"))
    return Run(run.run_id, run.path, tuple(kept.values()), tuple(problems))


def is_report_file(path: str, is_dir: bool | None) -> bool:
    return is_dir is False and is_named_report(path)


def is_named_report(path: str) -> bool:
    return path.endswith(REPORT_SUFFIXES)


def get_writer(path: str) -> str:
    """A report file's writer: its name without the suffix."""
    name = get_name(path)
    return name.removesuffix(".gz").removesuffix(".jsonl")


def get_name(path: str) -> str:
    return path.rstrip("/").rsplit("/", 1)[-1]


def compute_fingerprint(run: Run) -> str:
    """Changes whenever a run's set of files, or any file's size or time, or its problems change (then it is
    ingested again)."""
    text = "\n".join(f"{get_name(p)} {n} {t}" for p, n, t in sorted(run.files))
    text += "".join(f"\n{reason}" for _, reason in sorted(run.problems))
    return hashlib.sha1(text.encode(), usedforsecurity=False).hexdigest()


def select_pending(runs: dict[str, Run], known: dict[str, str], force: bool) -> dict[str, str]:
    """Run id -> fingerprint of the runs to ingest: new ones, changed ones (`known` holds the fingerprints of the
    ingested runs), or all of them with `force`."""
    fingerprints = {run_id: compute_fingerprint(run) for run_id, run in runs.items()}
    return {r: f for r, f in sorted(fingerprints.items()) if force or known.get(r) != f}


def read_lines(
    spark: SparkSession, files: list[tuple[str, int, int]], whole_file_limit: int = WHOLE_FILE_LIMIT, max_line=MAX_LINE
):
    """One row per non-empty physical line of the files (path, length, time): run_id (the file's directory), file,
    line (1-based), text, its length in bytes, and whether it is the file's last line (where a killed writer leaves
    a truncated one). A line longer than `max_line` bytes keeps only its start (it is quarantined unread)."""
    paths = [path for path, _, _ in files]
    if not paths:
        empty = create_frame(spark, [], schema.LINES)
        return empty.select(*empty.columns, F.lit(0).cast("long").alias("bytes"), F.lit(True).alias("utf8"),
                            F.lit(False).alias("is_last"))
    lengths = [length for _, length, _ in files]
    if max(lengths) <= whole_file_limit and sum(lengths) <= WHOLE_INPUT_LIMIT:
        return read_whole_files(spark, paths, max_line)
    return read_file_blocks(spark, paths, max_line)


def guard_line(value: str, max_line: int, utf8=None) -> list:
    """(text, bytes, utf8) of a line: a line over `max_line` bytes is cut to its start where it is read, so that no
    later step copies it whole (a 50 MB line ran the 1 GB driver out of memory); whether it is valid UTF-8 (`utf8`:
    a column that knows better, where the reader replaced invalid bytes)."""
    too_long = F.octet_length(value) > max_line
    return [
        F.when(too_long, F.substring(value, 1, KEPT_OF_LONG)).otherwise(F.col(value)).alias("text"),
        F.octet_length(value).alias("bytes"),
        (F.is_valid_utf8(value) if utf8 is None else utf8).alias("utf8"),
    ]


def read_whole_files(spark: SparkSession, paths: list[str], max_line: int = MAX_LINE) -> DataFrame:
    """read_lines of files small enough to be one row each, split into lines where they are: one pass, where
    numbering the lines of file blocks needs a job that counts them first (~1.5 s of a 50k-line ingest in a fresh
    JVM, in Spark's event log)."""
    files = spark.read.text(paths, wholetext=True).select(
        F.col("_metadata.file_path").alias("file"),
        F.regexp_extract("_metadata.file_path", r"([^/]+)/[^/]+$", 1).alias("run_id"),
        F.is_valid_utf8("value").alias("file_utf8"),
        # Split at "\n" without a regular expression (~3x faster) unless the file has other line breaks.
        F.when(F.col("value").contains("\r"), F.split("value", LINE_BREAK))
        .otherwise(F.split("value", "\n"))
        .alias("pieces"),
    )
    # As the text reader counts lines: a final line break ends the last line, it does not begin an empty one.
    # Counted before the explode, whose rows then do not carry (copy) the file's array of lines.
    total = F.size("pieces") - F.when(F.element_at("pieces", -1) == "", 1).otherwise(0)
    counted = files.select("run_id", "file", "file_utf8", "pieces", total.alias("total"))
    exploded = F.posexplode_outer("pieces").alias("index", "value")
    lines = counted.select("run_id", "file", "file_utf8", "total", exploded)
    # Splitting decoded the file, invalid bytes as U+FFFD: a line of a file that was not UTF-8 and holds one.
    utf8 = F.col("file_utf8") | ~F.col("value").contains("\ufffd")
    return lines.where(F.col("value") != "").select(
        "run_id",
        "file",
        (F.col("index") + 1).cast(T.IntegerType()).alias("line"),
        *guard_line("value", max_line, utf8),
        (F.col("index") + 1 == F.col("total")).alias("is_last"),
    )


def read_file_blocks(spark: SparkSession, paths: list[str], max_line: int = MAX_LINE) -> DataFrame:
    """read_lines by Spark's splittable text reader, for large files: a line's number is its position in its file
    block (rows of a block get consecutive ids in read order) plus the lines of the file's earlier blocks."""
    lines = spark.read.text(paths).select(
        *guard_line("value", max_line),
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
    return numbered.where(F.col("bytes") > 0).select(
        "run_id",
        "file",
        "line",
        "text",
        "bytes",
        "utf8",
        (F.col("line") == F.col("total")).alias("is_last"),
    )
