"""The one way the job reaches a file system other than through a DataFrame: Hadoop's FileSystem of a path (local,
hdfs://, s3a://, ...), which lists run directories, checks and deletes warehouse partitions and writes markers.

PySpark has no public API for it, so it goes through the session's JVM gateway (``_jvm``, ``_jsc``): the path's
FileSystem under the session's own Hadoop configuration, the one Spark's readers and writers use."""

from __future__ import annotations

from pyspark.sql import SparkSession


def get_file_system(spark: SparkSession, path: str):
    """(Hadoop FileSystem, Hadoop Path) of `path`."""
    context = spark.sparkContext
    hadoop_path = context._jvm.org.apache.hadoop.fs.Path(path)
    return hadoop_path.getFileSystem(context._jsc.hadoopConfiguration()), hadoop_path
