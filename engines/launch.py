"""A standalone Spark cluster (a master and a worker) and a Spark Connect server, started from the scripts of
pyspark's bundled SPARK_HOME, bound to 127.0.0.1 on free ports, and always stopped.

pyspark's wheel has no start-master.sh or start-worker.sh; those only call ``sbin/spark-daemon.sh start <class> 1
...``, which the wheel has, as it has ``sbin/start-connect-server.sh`` and the Spark Connect jar. Each engine gets its
own directory (configuration, logs, pid files, the worker's scratch space): removed after a clean stop, kept and
named on stderr when the engine failed to start, the block using it raised, or its user set ``keep_logs``.
"""

from __future__ import annotations

import json
import os
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import time
import urllib.request
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path

import pyspark

from reports.session import LOCAL_DEFAULTS

LOOPBACK = "127.0.0.1"
START_LIMIT = 120.0  # seconds until an engine answers (a JVM start on a loaded 2-core host takes 5-20 s)
STOP_LIMIT = 30.0  # seconds for a daemon to exit after SIGTERM, then SIGKILL
SCRIPT_LIMIT = 60.0  # seconds for one of Spark's shell scripts to return
MASTER = "org.apache.spark.deploy.master.Master"
WORKER = "org.apache.spark.deploy.worker.Worker"


class EngineError(Exception):
    """An engine did not start; the message names its kept log directory."""


@dataclass
class Engine:
    """A running engine: its URL (spark://... or sc://...), its directory, and the daemons to stop."""

    url: str
    directory: Path
    keep_logs: bool = False
    pids: list[int] = field(default_factory=list)

    @property
    def logs(self) -> Path:
        return self.directory / "logs"


def get_spark_home() -> Path:
    return Path(pyspark.__file__).resolve().parent


def get_free_port() -> int:
    with socket.socket() as probe:
        probe.bind((LOOPBACK, 0))
        return probe.getsockname()[1]


def get_environment(directory: Path) -> dict[str, str]:
    """The scripts' environment: pyspark's SPARK_HOME, an empty configuration directory (no spark-defaults.conf of
    the user's), everything bound to loopback, this Python for any Python worker."""
    for name in ("conf", "logs", "pids", "work"):
        (directory / name).mkdir(parents=True, exist_ok=True)
    return {
        **os.environ,
        "SPARK_HOME": str(get_spark_home()),
        "SPARK_CONF_DIR": str(directory / "conf"),
        "SPARK_LOG_DIR": str(directory / "logs"),
        "SPARK_PID_DIR": str(directory / "pids"),
        "SPARK_WORKER_DIR": str(directory / "work"),
        "SPARK_IDENT_STRING": directory.name,
        "SPARK_MASTER_HOST": LOOPBACK,
        "SPARK_LOCAL_IP": LOOPBACK,
        "PYSPARK_PYTHON": sys.executable,
        # The master's REST submission server listens on a fixed port (6066) that a second cluster would find taken.
        "SPARK_MASTER_OPTS": "-Dspark.master.rest.enabled=false",
    }


def run_script(engine: Engine, script: str, *arguments: str) -> None:
    """Runs one of pyspark's sbin scripts; a daemon it starts is recorded (its pid file) to be stopped."""
    environ = get_environment(engine.directory)
    before = set((engine.directory / "pids").iterdir())
    command = [str(get_spark_home() / "sbin" / script), *arguments]
    done = subprocess.run(command, env=environ, capture_output=True, text=True, timeout=SCRIPT_LIMIT, check=False)
    for pid_file in set((engine.directory / "pids").iterdir()) - before:
        engine.pids.append(int(pid_file.read_text().strip()))
    if done.returncode != 0:
        raise EngineError(f"{script} {' '.join(arguments)} exited {done.returncode}: {done.stderr.strip()[-500:]}")


def is_alive(pid: int) -> bool:
    """Whether the daemon runs (a daemon is not this process's child: init reaps it, no zombie lingers)."""
    return Path(f"/proc/{pid}").exists()


def wait_until(engine: Engine, ready: Callable[[], bool], what: str) -> None:
    """Polls `ready` until it holds; EngineError when a daemon died or START_LIMIT passed."""
    deadline = time.monotonic() + START_LIMIT
    while not ready():
        if not all(map(is_alive, engine.pids)):
            raise EngineError(f"{what}: a daemon exited during its start")
        if time.monotonic() > deadline:
            raise EngineError(f"{what}: not ready after {START_LIMIT:g} s")
        time.sleep(0.5)


def stop(engine: Engine) -> None:
    """SIGTERM to every daemon, newest first (Spark's stop scripts do no more), then SIGKILL to any still alive
    after STOP_LIMIT seconds."""
    for pid in reversed(engine.pids):
        if is_alive(pid):
            os.kill(pid, signal.SIGTERM)
    deadline = time.monotonic() + STOP_LIMIT
    while any(map(is_alive, engine.pids)) and time.monotonic() < deadline:
        time.sleep(0.2)
    for pid in engine.pids:
        if is_alive(pid):
            os.kill(pid, signal.SIGKILL)


@contextmanager
def running(engine: Engine) -> Iterator[Engine]:
    """Stops the engine however the block ends; keeps its directory when anything failed or keep_logs is set."""
    failed = True
    try:
        yield engine
        failed = False
    except (KeyboardInterrupt, SystemExit):
        failed = False  # how `python -m engines` is stopped
        raise
    finally:
        stop(engine)
        if failed or engine.keep_logs:
            print(f"Spark engine logs kept in {engine.logs}", file=sys.stderr)
        else:
            shutil.rmtree(engine.directory, ignore_errors=True)


def count_alive_workers(web_ui_port: int) -> int:
    """Workers the master knows as ALIVE, from its web UI's JSON (the UI binds to SPARK_LOCAL_IP: loopback)."""
    try:
        with urllib.request.urlopen(f"http://{LOOPBACK}:{web_ui_port}/json/", timeout=5) as answer:
            found = json.load(answer)
    except (OSError, ValueError):
        return 0
    return sum(1 for worker in found.get("workers", []) if worker.get("state") == "ALIVE")


@contextmanager
def standalone(cores: int = 2, memory: str = "2g") -> Iterator[Engine]:
    """A standalone master and one worker (`cores`, `memory` for its executors); yields the engine whose url is
    spark://127.0.0.1:<port>, ready when the worker has registered."""
    master_port, master_ui, worker_port, worker_ui = (get_free_port() for _ in range(4))
    engine = Engine(f"spark://{LOOPBACK}:{master_port}", Path(tempfile.mkdtemp(prefix="spark-standalone-")))
    with running(engine):
        master = ["--host", LOOPBACK, "--port", str(master_port), "--webui-port", str(master_ui)]
        run_script(engine, "spark-daemon.sh", "start", MASTER, "1", *master)
        worker = ["--host", LOOPBACK, "--port", str(worker_port), "--webui-port", str(worker_ui)]
        worker += ["--cores", str(cores), "--memory", memory, engine.url]
        run_script(engine, "spark-daemon.sh", "start", WORKER, "1", *worker)
        wait_until(engine, lambda: count_alive_workers(master_ui) >= 1, "standalone master and worker")
        yield engine


# The server is a long-lived engine: the throughput collector, whose pauses cost it less CPU than G1's concurrent
# marking on a 2-core host (benchmarks/NOTES.md, "Engines").
SERVER_JAVA_OPTIONS = "-XX:+UseParallelGC"


def get_connect_settings(port: int) -> dict[str, str]:
    """The Connect server's settings: the embedded defaults of the job's local mode (reports/session.py), its gRPC
    endpoint on loopback, and its driver's JVM options (SERVER_JAVA_OPTIONS) in place of the embedded driver's."""
    settings = {key: value for key, value in LOCAL_DEFAULTS.items() if key != "spark.driver.extraJavaOptions"}
    return settings | {"spark.connect.grpc.binding.address": LOOPBACK, "spark.connect.grpc.binding.port": str(port),
                       "spark.driver.extraJavaOptions": SERVER_JAVA_OPTIONS}


def is_listening(port: int) -> bool:
    try:
        with socket.create_connection((LOOPBACK, port), timeout=2):
            return True
    except OSError:
        return False


@contextmanager
def connect_server(master: str = "local[*]", driver_memory: str = "2g") -> Iterator[Engine]:
    """A Spark Connect server (pyspark's sbin/start-connect-server.sh) whose driver runs `master`; yields the engine
    whose url is sc://127.0.0.1:<port>, ready when its gRPC port answers."""
    port = get_free_port()
    engine = Engine(f"sc://{LOOPBACK}:{port}", Path(tempfile.mkdtemp(prefix="spark-connect-")))
    arguments = ["--master", master, "--driver-memory", driver_memory]
    for key, value in get_connect_settings(port).items():
        arguments += ["--conf", f"{key}={value}"]
    with running(engine):
        run_script(engine, "start-connect-server.sh", *arguments)
        wait_until(engine, lambda: is_listening(port), "Spark Connect server")
        yield engine
