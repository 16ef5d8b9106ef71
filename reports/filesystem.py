"""The one way the job reaches a file system other than through a DataFrame: it lists run directories, checks and
deletes warehouse partitions and writes markers.

A classic session (local or a cluster's driver) uses Hadoop's FileSystem of the path (local, hdfs://, s3a://, ...)
under the session's own Hadoop configuration, the one Spark's readers and writers use; PySpark has no public API for
it, so it goes through the session's JVM gateway (``_jvm``, ``_jsc``). A Spark Connect session has no JVM on this
side: its paths must be local files that both this process and the server see (the server on this machine, or a
shared mount), reached with Python's own file functions, in the same shape as Hadoop's answers."""

from __future__ import annotations

import os
import shutil

from pyspark.sql import SparkSession

# (path, is directory, length, modification time in ms) of a directory's entry
Entry = tuple[str, bool, int, int]


def is_connect(spark: SparkSession) -> bool:
    """Whether `spark` is a Spark Connect session (no JVM gateway in this process)."""
    return type(spark).__module__.startswith("pyspark.sql.connect")


def is_local(path: str) -> bool:
    return "://" not in path or path.startswith("file:")


def get_local_path(path: str) -> str:
    """A local path without its ``file:`` scheme; ValueError for a path Python cannot reach."""
    if not is_local(path):
        raise ValueError(f"with Spark Connect, paths must be local files (shared with the server): {path}")
    return os.path.abspath(path.removeprefix("file://").removeprefix("file:"))


def get_file_system(spark: SparkSession, path: str):
    """(Hadoop FileSystem, Hadoop Path) of `path` (a classic session only)."""
    context = spark.sparkContext
    hadoop_path = context._jvm.org.apache.hadoop.fs.Path(path)
    return hadoop_path.getFileSystem(context._jsc.hadoopConfiguration()), hadoop_path


def exists(spark: SparkSession, path: str) -> bool:
    if is_connect(spark):
        return os.path.exists(get_local_path(path))
    fs, hadoop_path = get_file_system(spark, path)
    return fs.exists(hadoop_path)


def is_directory(spark: SparkSession, path: str) -> bool:
    if is_connect(spark):
        return os.path.isdir(get_local_path(path))
    fs, hadoop_path = get_file_system(spark, path)
    return fs.getFileStatus(hadoop_path).isDirectory()


def delete(spark: SparkSession, path: str) -> None:
    """Removes a file or a whole directory; nothing when it is not there."""
    if not is_connect(spark):
        fs, hadoop_path = get_file_system(spark, path)
        fs.delete(hadoop_path, True)
    elif os.path.isdir(local := get_local_path(path)):
        shutil.rmtree(local)
    elif os.path.exists(local):
        os.remove(local)


def touch(spark: SparkSession, path: str) -> None:
    """Writes an empty file (and its parent directories), replacing any file there."""
    if is_connect(spark):
        local = get_local_path(path)
        os.makedirs(os.path.dirname(local), exist_ok=True)
        open(local, "wb").close()
        return
    fs, hadoop_path = get_file_system(spark, path)
    fs.create(hadoop_path, True).close()


def list_entries(spark: SparkSession, path: str) -> list[Entry]:
    """The entries of the directory `path`, each as Hadoop's local file system names it (``file:/...``) on Connect."""
    if not is_connect(spark):
        fs, hadoop_path = get_file_system(spark, path)
        return [
            (s.getPath().toString(), s.isDirectory(), s.getLen(), s.getModificationTime())
            for s in fs.listStatus(hadoop_path)
        ]
    with os.scandir(get_local_path(path)) as found:
        stats = [(entry.path, entry.is_dir(), entry.stat()) for entry in found]
    return [(f"file:{p}", is_dir, 0 if is_dir else s.st_size, s.st_mtime_ns // 1_000_000) for p, is_dir, s in stats]
