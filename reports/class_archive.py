"""A class-data sharing archive of the Spark driver's classes (the JDK's dynamic AppCDS), kept in the user's cache;
used only with `--tuned-jvm` (benchmarks/NOTES.md, "reports/", has what it saves and what it cannot archive).

The JVM checks the archive against its own build and class path and ignores one that does not match, so a stale
archive costs nothing but the saving. It is written when a driver JVM exits, and only from the second job that
sees the cache directory: a cache that does not survive (a fresh CI machine) never pays for it.
"""

from __future__ import annotations

import atexit
import hashlib
import os
import shutil
import time
from pathlib import Path

import pyspark

from reports.gateway import shut_down_gateway
from runenv.run_context import get_cache_dir

QUIET = "-Xlog:cds*=off"  # the JVM's notes on classes it cannot archive go to stdout, where the summary goes
STALE_SECONDS = 3600


def get_archive_path(cache_dir: Path, environ) -> Path | None:
    """One archive per PySpark install and Java binary; None when no `java` is found (Spark will say why)."""
    java_home = environ.get("JAVA_HOME")
    java = shutil.which("java", path=f"{java_home}/bin" if java_home else environ.get("PATH"))
    if java is None:
        return None
    java = os.path.realpath(java)
    key = f"{pyspark.__version__} {Path(pyspark.__file__).parent} {java} {os.stat(java).st_mtime_ns}"
    return cache_dir / f"spark-{hashlib.sha1(key.encode(), usedforsecurity=False).hexdigest()[:16]}.jsa"


def get_java_options(environ) -> tuple[list[str], Path | None]:
    """(JVM options, the file the JVM will write the archive to at exit, or None)."""
    archive = get_archive_path(get_cache_dir(environ), environ)
    if archive is None:
        return [], None
    if archive.is_file():
        return [f"-XX:SharedArchiveFile={archive}", QUIET], None
    seen = archive.with_suffix(".seen")
    try:
        if not seen.exists():
            seen.parent.mkdir(parents=True, exist_ok=True)
            seen.touch()
            return [], None
    except OSError:  # a read-only home: run without the archive
        return [], None
    for old in archive.parent.glob(f"{archive.name}.*.tmp"):
        if time.time() - old.stat().st_mtime < STALE_SECONDS:
            return [], None  # another job is writing it: one writer is enough
        old.unlink(missing_ok=True)
    pending = archive.with_name(f"{archive.name}.{os.getpid()}.tmp")
    pending.touch()  # claims the writing; the JVM replaces it with the archive when it exits
    return [f"-XX:ArchiveClassesAtExit={pending}", QUIET], pending


def finish_at_exit(spark, pending: Path) -> None:
    """At interpreter exit: stop the session, let the JVM exit (it dumps the archive then) and publish the archive
    under its final name (a rename, so that a concurrent job never maps a half-written file)."""
    proc = spark.sparkContext._gateway.proc

    def finish():
        spark.stop()
        shut_down_gateway(spark)
        proc.stdin.close()  # the gateway exits when its stdin closes
        try:
            proc.wait(timeout=120)
        except Exception:
            proc.kill()
        if proc.returncode == 0 and pending.is_file() and pending.stat().st_size:
            os.replace(pending, pending.with_name(pending.name.split(".jsa.", 1)[0] + ".jsa"))
        pending.unlink(missing_ok=True)

    atexit.register(finish)
