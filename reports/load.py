"""Load: the Parquet warehouse (partitioned by run, replaced per run) and the job's output tables."""

from __future__ import annotations

import time

from pyspark.sql import DataFrame, SparkSession

from reports import schema

# Tables written per run; ingesting a run deletes its partition in each first, so a run is replaced, never doubled.
RUN_TABLES = {
    "observations": schema.OBSERVATIONS,
    "runs": schema.RUNS,
    "quarantine": schema.QUARANTINE,
    "manifest": schema.MANIFEST,
}


def get_table_path(root: str, name: str) -> str:
    return f"{root.rstrip('/')}/{name}"


def delete_run_partitions(spark: SparkSession, warehouse: str, run_ids: list[str]) -> None:
    jvm = spark.sparkContext._jvm
    conf = spark.sparkContext._jsc.hadoopConfiguration()
    for name in RUN_TABLES:
        for run_id in run_ids:
            path = jvm.org.apache.hadoop.fs.Path(f"{get_table_path(warehouse, name)}/run_id={run_id}")
            path.getFileSystem(conf).delete(path, True)


def append_runs(tables: dict[str, DataFrame], warehouse: str) -> None:
    """Appends each run table (partitioned by run_id); the manifest last, so a crash leaves the run un-ingested."""
    for name in sorted(tables, key=lambda n: n == "manifest"):
        frame = tables[name].select(*RUN_TABLES[name].fieldNames())
        frame.write.mode("append").partitionBy("run_id").parquet(get_table_path(warehouse, name))


def read_table(spark: SparkSession, warehouse: str, name: str) -> DataFrame:
    """A warehouse table, or an empty one with its schema when nothing was ingested yet."""
    path = get_table_path(warehouse, name)
    jvm = spark.sparkContext._jvm
    hadoop_path = jvm.org.apache.hadoop.fs.Path(path)
    if not hadoop_path.getFileSystem(spark.sparkContext._jsc.hadoopConfiguration()).exists(hadoop_path):
        return spark.createDataFrame([], RUN_TABLES[name])
    return spark.read.schema(RUN_TABLES[name]).parquet(path)


def make_manifest(spark: SparkSession, fingerprints: dict[str, str]) -> DataFrame:
    now = time.time()
    return spark.createDataFrame([(r, f, now) for r, f in sorted(fingerprints.items())], schema.MANIFEST)


def write_output(frame: DataFrame, out: str, name: str) -> None:
    frame.coalesce(1).write.mode("overwrite").parquet(f"{out.rstrip('/')}/tables/{name}")
