"""RocketMQ's Java client 4.9.8 as a push consumer for the fault runs (differential/clients/CrashProbe.java).

The probe is compiled once per session into a temporary folder and runs as a subprocess that prints one JSON line
per delivery; a reader thread collects them. Its classpath: ``RMQSPEC_JAVA_CLIENT_CLASSPATH`` if set, else the
client jar and fastjson under ``shared/clients/java`` (nearest parent folder that has it) and Debian's jars.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import threading
import time
from pathlib import Path

from conformance.runner.backends.rocketmq import DEBIAN_JARS

SOURCE = Path(__file__).with_name("clients") / "CrashProbe.java"
CLIENT_DIR = "shared/clients/java"
STOP_TIMEOUT = 15.0
PREFIX = b"@@ "


def get_client_classpath(environ: dict[str, str] | None = None) -> list[str]:
    env = os.environ if environ is None else environ
    if env.get("RMQSPEC_JAVA_CLIENT_CLASSPATH"):
        return env["RMQSPEC_JAVA_CLIENT_CLASSPATH"].split(os.pathsep)
    here = Path(__file__).resolve()
    for folder in here.parents:
        jar = folder / CLIENT_DIR / "rocketmq-client-4.9.8.jar"
        if jar.is_file():
            debian = [f"/usr/share/java/{name}.jar" for name in DEBIAN_JARS]
            return [str(jar), str(jar.with_name("fastjson-1.2.69.jar")), *debian]
    raise FileNotFoundError(f"no {CLIENT_DIR}/rocketmq-client-4.9.8.jar and no RMQSPEC_JAVA_CLIENT_CLASSPATH")


def compile_probe(classes: Path, classpath: list[str]) -> None:
    classes.mkdir(parents=True, exist_ok=True)
    javac = shutil.which("javac") or "javac"
    argv = [javac, "-encoding", "UTF-8", "-d", str(classes), "-cp", os.pathsep.join(classpath), str(SOURCE)]
    subprocess.run(argv, check=True, timeout=120, capture_output=True)


class Probe:
    """A running CrashProbe: `deliveries` grows as the consumer prints them."""

    def __init__(self, classes: Path, classpath: list[str], namesrv: str, group: str, topic: str, log: Path):
        java = shutil.which("java") or "java"
        argv = [java, "-Xmx128m", "-XX:+UseSerialGC", "-XX:TieredStopAtLevel=1", "-Drocketmq.client.logUseSlf4j=true",
                "-cp", os.pathsep.join([str(classes), *classpath]), "CrashProbe", namesrv, group, topic]
        self.log = open(log, "ab")
        self.process = subprocess.Popen(argv, stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=self.log)
        self.deliveries: list[dict] = []
        self.ready = threading.Event()
        self.reader = threading.Thread(target=self._read, daemon=True)
        self.reader.start()

    def _read(self) -> None:
        for line in self.process.stdout:
            if not line.startswith(PREFIX):  # the client's own logging (logback's console appender)
                continue
            record = json.loads(line[len(PREFIX):])
            if record.get("ready"):
                self.ready.set()
            elif "uniq" in record:
                self.deliveries.append(record)

    def wait_for(self, keys: set[str], timeout: float, reconsume_times: int = 0) -> set[str]:
        """Waits until every key in `keys` was delivered with at least `reconsume_times` (or `timeout`); returns the
        keys still missing."""
        deadline = time.monotonic() + timeout
        while (missing := keys - {d["uniq"] for d in self.deliveries if d["reconsumeTimes"] >= reconsume_times}) \
                and time.monotonic() < deadline:
            if self.process.poll() is not None:
                break
            time.sleep(0.1)
        return missing

    def stop(self) -> None:
        """Closes the probe's input (it shuts the consumer down); SIGKILL after STOP_TIMEOUT."""
        try:
            self.process.stdin.close()
            self.process.wait(STOP_TIMEOUT)
        except (subprocess.TimeoutExpired, BrokenPipeError):
            self.process.kill()
            self.process.wait(STOP_TIMEOUT)
        self.reader.join(STOP_TIMEOUT)
        self.log.close()
