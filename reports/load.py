"""Load: the Parquet warehouse and the job's outputs.

The warehouse holds the records table and the per-run partial tables (schema.PARTIALS), all partitioned by run:
ingesting a run replaces its partition of every table.

Which runs are in the warehouse, and from which input, is kept in zero-byte marker files
``<warehouse>/_ingested/<run id>@<fingerprint>`` (Spark ignores ``_`` paths), so checking for new or changed
runs reads no data.
"""

from __future__ import annotations

import fcntl
import os
import sys
import time
from contextlib import contextmanager

from pyspark.sql import DataFrame, SparkSession
from pyspark.sql.types import StructType

from reports import schema
from reports.filesystem import delete, is_local, list_entries, touch
from reports.filesystem import exists as path_exists
from reports.local_frame import create_frame

RECORDS, MARKERS = "records", "_ingested"
# Names the format of the partial tables: a warehouse without it (made before the partial tables, or before they
# were keyed by writer, whose marker was "_partials") gets them rebuilt from its records.
# (The failures' message and steps came with "_partials-3", the runs' interruption with "_partials-5".)
PARTIALS_MARKER = "_partials-5"
OLD_PARTIALS_MARKERS = ("_partials", "_partials-by-writer", "_partials-3", "_partials-4")
# Measured times are nearly all distinct: Parquet's dictionary encoding would hash them until its dictionary
# overflows, then fall back to plain encoding (JFR: ~8 % of the records write's task time), so they are written
# plain from the start. Parquet column paths: a map's values are <map>.key_value.value.
PLAIN_COLUMNS = {RECORDS: ("timing.key_value.value", "seconds")}
# Hadoop's committer ends every write job with a _SUCCESS file. The warehouse's markers say which runs are complete,
# and tables appended to run by run have no use for it.
NO_SUCCESS_FILE = "mapreduce.fileoutputcommitter.marksuccessfuljobs"
# One aggregate at a time on a warehouse: two that ingest the same runs at once would both append them.
LOCK, LOCK_TIMEOUT = "_lock", 600.0


class WarehouseBusy(Exception):
    """Another aggregate held the warehouse for longer than the job would wait."""


@contextmanager
def locked(warehouse: str, timeout: float = LOCK_TIMEOUT, poll: float = 0.2):
    """Holds an exclusive lock on a local warehouse (flock of ``<warehouse>/_lock``, released when the process ends,
    however it ends) while the block runs; waits up to `timeout` seconds, saying so once, then WarehouseBusy. A
    warehouse elsewhere (hdfs://, s3a://) is not locked: one aggregate at a time must write it."""
    if not is_local(warehouse):
        yield
        return
    path = os.path.join(warehouse.removeprefix("file:"), LOCK)
    os.makedirs(os.path.dirname(path), exist_ok=True)
    with open(path, "a") as handle:
        deadline = time.monotonic() + timeout
        waiting = False
        while True:
            try:
                fcntl.flock(handle, fcntl.LOCK_EX | fcntl.LOCK_NB)
                break
            except BlockingIOError:
                if time.monotonic() >= deadline:
                    raise WarehouseBusy(f"another aggregate held {path} for more than {timeout:g} s") from None
                if not waiting:
                    print(f"waiting for another aggregate to finish with {warehouse} ({path})", file=sys.stderr)
                    waiting = True
                time.sleep(poll)
        yield


def get_table_path(root: str, name: str) -> str:
    return f"{root.rstrip('/')}/{name}"


def read_markers(spark: SparkSession, warehouse: str) -> dict[str, str]:
    """Run id -> fingerprint of the input it was ingested from."""
    path = get_table_path(warehouse, MARKERS)
    if not path_exists(spark, path):
        return {}
    return parse_markers(entry[0].rstrip("/").rsplit("/", 1)[-1] for entry in list_entries(spark, path))


def read_local_markers(warehouse: str) -> dict[str, str]:
    """read_markers of a local warehouse without the JVM (the driver chooses how to start it from them)."""
    path = get_table_path(warehouse.removeprefix("file:"), MARKERS)
    return parse_markers(os.listdir(path)) if os.path.isdir(path) else {}


def parse_markers(names) -> dict[str, str]:
    """Run id -> fingerprint of the marker file names; hidden files (e.g. Hadoop's checksum files) are not markers."""
    return dict(name.rsplit("@", 1) for name in names if "@" in name and not name.startswith("."))


def exists(spark: SparkSession, path: str) -> bool:
    return path_exists(spark, path)


def delete_runs(spark: SparkSession, warehouse: str, run_ids: list[str]) -> None:
    """Removes the runs' partitions and markers, so that appending them again replaces them."""
    known = read_markers(spark, warehouse)
    for run_id in run_ids:
        paths = [f"{get_table_path(warehouse, name)}/run_id={run_id}" for name in (RECORDS, *schema.PARTIALS)]
        if run_id in known:
            paths.append(f"{get_table_path(warehouse, MARKERS)}/{run_id}@{known[run_id]}")
        for path in paths:
            delete(spark, path)


def append_runs(frame: DataFrame, warehouse: str, name: str = RECORDS) -> None:
    """Appends the runs in `frame` to the table `name` (records or a partial table), one partition per run."""
    fields = get_table_schema(name).fieldNames()
    writer = frame.select(*fields).write.mode("append").option(NO_SUCCESS_FILE, "false")
    for column in PLAIN_COLUMNS.get(name, ()):
        writer = writer.option(f"parquet.enable.dictionary#{column}", "false")
    writer.partitionBy("run_id").parquet(get_table_path(warehouse, name))


def has_partials(spark: SparkSession, warehouse: str) -> bool:
    """Whether the warehouse keeps partial tables (one made before them has its runs' records only)."""
    return exists(spark, get_table_path(warehouse, PARTIALS_MARKER))


def delete_partials(spark: SparkSession, warehouse: str) -> None:
    """Removes every partial table (and their format's marker), to be rebuilt from the records."""
    for name in (*schema.PARTIALS, PARTIALS_MARKER, *OLD_PARTIALS_MARKERS):
        delete(spark, get_table_path(warehouse, name))


def mark_partials(spark: SparkSession, warehouse: str) -> None:
    touch(spark, get_table_path(warehouse, PARTIALS_MARKER))


def write_markers(spark: SparkSession, warehouse: str, fingerprints: dict[str, str]) -> None:
    """Written after the data: a run whose write did not finish has no marker and is ingested again."""
    for run_id, fingerprint in fingerprints.items():
        touch(spark, f"{get_table_path(warehouse, MARKERS)}/{run_id}@{fingerprint}")


def get_table_schema(name: str) -> StructType:
    return schema.RECORDS if name == RECORDS else schema.PARTIALS[name]


def read_table(spark: SparkSession, warehouse: str, name: str = RECORDS, run_ids: list[str] | None = None) -> DataFrame:
    """A warehouse table with its declared schema (no inference), or an empty one when nothing was ingested yet;
    with `run_ids`, only their partitions are listed and read."""
    path, fields = get_table_path(warehouse, name), get_table_schema(name)
    if not exists(spark, path):
        return create_frame(spark, [], fields)
    reader = spark.read.schema(fields)
    if run_ids is None:
        return reader.parquet(path)
    found = [p for p in (f"{path}/run_id={run_id}" for run_id in run_ids) if exists(spark, p)]
    if not found:
        return create_frame(spark, [], fields)
    return reader.option("basePath", path).parquet(*found)


def read_records(spark: SparkSession, warehouse: str) -> DataFrame:
    return read_table(spark, warehouse, RECORDS)


def write_output(frame: DataFrame, tables: str, name: str) -> None:
    frame.coalesce(1).write.mode("overwrite").parquet(get_table_path(tables, name))
