"""The SparkSession: embedded local mode by default, any cluster with ``--master`` (or the standard Spark
environment: ``spark-submit``, ``SPARK_HOME`` / ``spark-defaults.conf``, ``PYSPARK_SUBMIT_ARGS``)."""

from __future__ import annotations

import atexit
import os
import warnings
from contextlib import contextmanager
from pathlib import Path

from pyspark.sql import SparkSession

from reports import class_archive as archive
from reports import extract, load
from reports.gateway import shut_down_gateway

LOG_CONFIG = Path(__file__).with_name("log4j2.properties")

# Local mode: all cores, no web UI, driver bound to loopback (no network needed, nothing exposed), quiet logs.
# Aggregates are tiny after the (parallel) scan and partial aggregation, so one shuffle partition, and no adaptive
# execution: re-planning every stage costs more than it saves on report-sized data (measured: 3x slower).
# Whole-stage code generation stays on: without it the 50k-line incremental job used ~25% more CPU (measured).
LOCAL_DEFAULTS = {
    "spark.ui.enabled": "false",
    "spark.ui.showConsoleProgress": "false",
    "spark.driver.bindAddress": "127.0.0.1",
    "spark.driver.host": "127.0.0.1",
    "spark.sql.shuffle.partitions": "1",
    "spark.sql.adaptive.enabled": "false",
    "spark.sql.session.timeZone": "UTC",
    # Partitioned tables (one partition per run) are listed by the driver: past the default 32 partitions Spark
    # lists them with a job of its own per table, ~1-2 s each here (measured: 7 s of a 100-run aggregate).
    "spark.sql.sources.parallelPartitionDiscovery.threshold": "100000",
    # Local files without Hadoop's checksum files: its default local file system writes a .crc file beside every
    # file and checks it on every read. Spark ignores those, the job does not need them, and without Hadoop's
    # native library every file Hadoop creates costs a `chmod` process (~8 ms each; 102 per 50k-line incremental
    # run, 24 of them for checksum files).
    "spark.hadoop.fs.file.impl": "org.apache.hadoop.fs.RawLocalFileSystem",
    "spark.driver.extraJavaOptions": f"-Dlog4j2.configurationFile={LOG_CONFIG.as_uri()}",
}


# The aggregate combines the runs' partial tables: a few hundred rows per run, a dozen small queries, for which
# generating and compiling Java code costs more than interpreting the rows (benchmarks/NOTES.md, "reports/").
# `factoryMode` is an internal setting: it turns off the expression code generation that whole-stage code
# generation off leaves on. Both only choose how Spark evaluates the same expressions (Spark's own tests check both
# ways give the same results); an unknown key in some other Spark version is ignored.
INTERPRETED = {"spark.sql.codegen.wholeStage": "false", "spark.sql.codegen.factoryMode": "NO_CODEGEN"}


DRIVER_MEMORY = "1g"

# On any master. The DataFrame debugging of PySpark 4 records the Python call site of every column expression in
# the JVM (a stack walk and ~5 py4j calls each, ~2,500 calls of a 50k-line incremental run) for error messages.
JOB_SETTINGS = {
    # A file block belongs to one run, so each write task has one partition value: writing it needs no sort.
    "spark.sql.maxConcurrentOutputFileWriters": "4",
    "spark.python.sql.dataFrameDebugging.enabled": "false",
}


@contextmanager
def using_conf(spark, settings: dict[str, str]):
    """The session's SQL settings changed while the block runs (every query of the session, from any thread),
    restored after."""
    before = {key: spark.conf.get(key, None) for key in settings}
    for key, value in settings.items():
        spark.conf.set(key, value)
    try:
        yield
    finally:
        for key, value in before.items():
            if value is None:
                spark.conf.unset(key)
            else:
                spark.conf.set(key, value)


def names_a_master(environ) -> bool:
    """Whether the standard Spark environment chooses the master: launched by spark-submit (the JVM is already up),
    PYSPARK_SUBMIT_ARGS, or spark.master in spark-defaults.conf."""
    if environ.get("PYSPARK_GATEWAY_PORT") or environ.get("PYSPARK_SUBMIT_ARGS"):
        return True
    conf_dir = environ.get("SPARK_CONF_DIR") or (f"{environ['SPARK_HOME']}/conf" if "SPARK_HOME" in environ else "")
    defaults = Path(conf_dir) / "spark-defaults.conf"
    if not conf_dir or not defaults.is_file():
        return False
    return any(line.split()[:1] == ["spark.master"] for line in defaults.read_text().splitlines())


def is_small_local_input(inputs: list[str], warehouse: str, force: bool, limit_bytes: int = 1 << 30) -> bool:
    """Whether the runs to ingest (new or changed, see extract.select_pending) are local and hold less than
    `limit_bytes` of report files: read before the JVM starts, so one new run into a large warehouse is small."""
    if not all(map(load.is_local, inputs)):
        return False
    try:
        runs = extract.find_runs(extract.list_local_directory, inputs)
    except extract.ReportInputError:
        return True  # the job reports it, after a quick start
    known = load.read_local_markers(warehouse) if load.is_local(warehouse) else {}
    pending = extract.select_pending(runs, known, force)
    return sum(length for run_id in pending for _, length, _ in runs[run_id].files) < limit_bytes


def get_spark(
    master: str | None = None,
    app_name: str = "rmqspec-reports",
    conf: dict[str, str] | None = None,
    quick_start: bool = False,
    class_archive: bool = False,
    remote: str | None = None,
):
    """A session on `master`; when neither `master` nor the Spark environment names one, local[*] with defaults;
    with `remote` (sc://host:port), a Spark Connect session of that server, configured by its own settings.

    On a cluster only the settings the job relies on are forced; the cluster's own configuration wins otherwise.
    Two opt-in tunings of a local driver's JVM (`--tuned-jvm`; benchmarks/NOTES.md, "reports/", has the figures):
    `quick_start` compiles with the JIT's first tier only and uses the serial collector with the whole heap from
    the start, for a short job; `class_archive` maps Spark's classes from a class-data sharing archive
    (reports/class_archive.py), and without `quick_start` (a large input) uses the parallel collector.
    """
    warnings.filterwarnings("ignore", module="pyspark")  # pandas-version notices; the job does not use pandas
    if remote:
        return get_remote_spark(remote, app_name, conf)
    local = (master is None and not names_a_master(os.environ)) or (master or "").startswith("local")
    builder = SparkSession.builder.appName(app_name)
    pending_archive = None
    if local:
        memory = (conf or {}).get("spark.driver.memory", DRIVER_MEMORY)
        builder, pending_archive = configure_local(builder, master or "local[*]", quick_start, memory, class_archive)
    elif master:
        builder = builder.master(master)
    for key, value in {**JOB_SETTINGS, **(conf or {})}.items():
        builder = builder.config(key, value)
    spark = builder.getOrCreate()
    if not local:
        fit_shuffle_partitions(spark)
    if local:
        atexit.register(shut_down_gateway, spark)  # runs after finish_at_exit (handlers run last-in first-out)
    if pending_archive is not None:
        archive.finish_at_exit(spark, pending_archive)
    spark.sparkContext.setLogLevel("ERROR")
    return spark


def get_remote_spark(url: str, app_name: str, conf: dict[str, str] | None = None):
    """A Spark Connect session (no JVM here: the server runs the queries) with the job's settings."""
    builder = SparkSession.builder.remote(url).appName(app_name)
    for key, value in {**JOB_SETTINGS, **(conf or {})}.items():
        builder = builder.config(key, value)
    return builder.getOrCreate()


SPARK_DEFAULT_SHUFFLE_PARTITIONS = "200"


def fit_shuffle_partitions(spark) -> None:
    """On a cluster where nothing chose ``spark.sql.shuffle.partitions`` (it is Spark's default 200): one per core
    the application has. The job's shuffles carry partial aggregates, a few hundred rows per run, so 200 tasks per
    shuffle are mostly scheduling (the aggregate of a 5k-line input on a 2-core standalone cluster: 83 s -> 48 s,
    benchmarks/NOTES.md). A value from the cluster's configuration or spark-submit is kept."""
    if spark.conf.get("spark.sql.shuffle.partitions") == SPARK_DEFAULT_SHUFFLE_PARTITIONS:
        spark.conf.set("spark.sql.shuffle.partitions", str(spark.sparkContext.defaultParallelism))


def configure_local(
    builder,
    master: str,
    quick_start: bool,
    memory: str = DRIVER_MEMORY,
    class_archive: bool = False,
    environ=os.environ,
):
    """(builder with LOCAL_DEFAULTS and the driver's JVM options, the class archive the JVM will write or None);
    `memory` is the driver's heap in a quick start (Spark's default 1g). Without `quick_start` and `class_archive`
    the JVM runs with its own defaults."""
    builder = builder.master(master)
    for key, value in LOCAL_DEFAULTS.items():
        builder = builder.config(key, value)
    archive_options, pending_archive = archive.get_java_options(environ) if class_archive else ([], None)
    java_options = [LOCAL_DEFAULTS["spark.driver.extraJavaOptions"], *archive_options]
    if quick_start:
        # C1 only, the serial collector, large arrays straight to the old generation, the whole heap at once: a
        # short job's warm-up and a small heap (the measurements behind each flag: benchmarks/NOTES.md).
        java_options += ["-XX:TieredStopAtLevel=1", "-XX:+UseSerialGC", "-XX:PretenureSizeThreshold=1m"]
        java_options.append(f"-Xms{memory}")
        builder = builder.config("spark.driver.memory", memory)
    elif class_archive:
        # A tuned driver for a large input: the parallel collector (a 1M-line job in a fresh JVM used ~9 % less CPU
        # than with G1's concurrent threads; benchmarks/NOTES.md, "the JVM's first job").
        java_options.append("-XX:+UseParallelGC")
    # Honoured because the JVM is not up yet: in local mode from Python the builder's conf launches it.
    return builder.config("spark.driver.extraJavaOptions", " ".join(java_options)), pending_archive
