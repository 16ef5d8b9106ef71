"""Load: the Parquet warehouse (one table of records, partitioned by run, replaced per run) and the job's outputs.

Which runs are in the warehouse, and from which input, is kept in zero-byte marker files
``<warehouse>/_ingested/<run id>@<fingerprint>`` (Spark ignores ``_`` paths), so checking for new or changed
runs reads no data.
"""

from __future__ import annotations

from pyspark.sql import DataFrame, SparkSession

from reports import schema

RECORDS, MARKERS = "records", "_ingested"


def get_table_path(root: str, name: str) -> str:
    return f"{root.rstrip('/')}/{name}"


def _path(spark: SparkSession, path: str):
    hadoop_path = spark.sparkContext._jvm.org.apache.hadoop.fs.Path(path)
    return hadoop_path.getFileSystem(spark.sparkContext._jsc.hadoopConfiguration()), hadoop_path


def read_markers(spark: SparkSession, warehouse: str) -> dict[str, str]:
    """Run id -> fingerprint of the input it was ingested from."""
    fs, path = _path(spark, get_table_path(warehouse, MARKERS))
    if not fs.exists(path):
        return {}
    names = (status.getPath().getName() for status in fs.listStatus(path))
    return dict(name.rsplit("@", 1) for name in names if "@" in name)


def delete_runs(spark: SparkSession, warehouse: str, run_ids: list[str]) -> None:
    """Removes the runs' partitions and markers, so that appending them again replaces them."""
    known = read_markers(spark, warehouse)
    for run_id in run_ids:
        paths = [f"{get_table_path(warehouse, RECORDS)}/run_id={run_id}"]
        if run_id in known:
            paths.append(f"{get_table_path(warehouse, MARKERS)}/{run_id}@{known[run_id]}")
        for text in paths:
            fs, path = _path(spark, text)
            fs.delete(path, True)


def append_runs(records: DataFrame, warehouse: str) -> None:
    records.select(*schema.get_spark_schema(schema.RECORDS).fieldNames()).write.mode("append").partitionBy(
        "run_id"
    ).parquet(get_table_path(warehouse, RECORDS))


def write_markers(spark: SparkSession, warehouse: str, fingerprints: dict[str, str]) -> None:
    """Written after the data: a run whose write did not finish has no marker and is ingested again."""
    for run_id, fingerprint in fingerprints.items():
        fs, path = _path(spark, f"{get_table_path(warehouse, MARKERS)}/{run_id}@{fingerprint}")
        fs.create(path, True).close()


def read_records(spark: SparkSession, warehouse: str) -> DataFrame:
    """The records table, or an empty one with its schema when nothing was ingested yet."""
    path = get_table_path(warehouse, RECORDS)
    fs, hadoop_path = _path(spark, path)
    if not fs.exists(hadoop_path):
        return spark.createDataFrame([], schema.get_spark_schema(schema.RECORDS))
    return spark.read.schema(schema.get_spark_schema(schema.RECORDS)).parquet(path)


def write_output(frame: DataFrame, tables: str, name: str) -> None:
    frame.coalesce(1).write.mode("overwrite").parquet(get_table_path(tables, name))
