"""The real backend: Apache RocketMQ's own name server and broker, run in a loopback-only network namespace.

``start_rocketmq(settings_conf, data_dir)`` starts the name server, then the broker, on a fresh store under
`data_dir` and waits until both answer; :class:`RocketMQ` stops them (always: ``with`` or ``stop()``), kills the
broker with SIGKILL and restarts it on the same store, and stops the name server, for the fault runs. The jars come
from the 4.9.8 build beside the project (``shared/brokers/rocketmq-4.9.8`` in a parent folder, Debian's jars for
its libraries) or, with ``RMQSPEC_ROCKETMQ_HOME``, from any RocketMQ 4.x binary distribution's ``lib/``.
"""

from __future__ import annotations

import glob
import os
import re
import shutil
import signal
import socket
import subprocess
import time
from pathlib import Path

import attrs

from conformance.runner.backends import BackendSettingError
from conformance.runner.backends.loopback import require_loopback_only

BUILD_DIR = "shared/brokers/rocketmq-4.9.8"
# Debian's jars the 4.9.8 build links (the build's README; .ci/install-rocketmq-runtime installs them).
DEBIAN_JARS = (
    "netty-buffer", "netty-codec", "netty-common", "netty-handler", "netty-resolver", "netty-transport",
    "netty-transport-native-epoll", "netty-transport-native-unix-common", "commons-lang3", "commons-cli",
    "commons-codec", "commons-io", "commons-validator", "commons-collections3", "guava", "slf4j-api",
    "logback-classic", "logback-core", "jna", "lz4-java", "zstd-jni",
)
JVM_OPTIONS = (
    "-XX:+UseSerialGC", "-XX:TieredStopAtLevel=1", "-Dtls.server.mode=disabled",
    "--add-opens", "java.base/java.nio=ALL-UNNAMED", "--add-opens", "java.base/sun.nio.ch=ALL-UNNAMED",
    "--add-opens", "java.base/java.lang=ALL-UNNAMED", "--add-opens", "java.base/java.util=ALL-UNNAMED",
    "--add-exports", "java.base/sun.nio.ch=ALL-UNNAMED",
    # MappedFile.clean calls jdk.internal.ref.Cleaner when recovery after a crash truncates dirty files; without
    # this the restarted broker dies in load() ("module java.base does not export jdk.internal.ref").
    "--add-exports", "java.base/jdk.internal.ref=ALL-UNNAMED", "--add-opens", "java.base/jdk.internal.ref=ALL-UNNAMED",
)
# One local broker, loopback only, small store files; a later key (the settings table's) wins.
BASE_BROKER_CONF = {
    "brokerClusterName": "DefaultCluster", "brokerName": "broker-a", "brokerId": "0",
    "brokerRole": "ASYNC_MASTER", "flushDiskType": "ASYNC_FLUSH", "brokerIP1": "127.0.0.1",
    "autoCreateTopicEnable": "true", "autoCreateSubscriptionGroup": "true",
    "mapedFileSizeCommitLog": str(16 << 20), "mapedFileSizeConsumeQueue": "600000",
}
START_TIMEOUT = 60.0
STOP_TIMEOUT = 15.0


@attrs.frozen
class Distribution:
    """Where a RocketMQ name server and broker come from: a classpath, the logback configurations, a version."""

    classpath: tuple[str, ...]
    conf_dir: Path
    version: str


def find_build_dir(start: Path) -> Path | None:
    """``shared/brokers/rocketmq-4.9.8`` in `start` or the nearest parent folder that has it."""
    for folder in (start, *start.parents):
        if (folder / BUILD_DIR / "rocketmq-broker-4.9.8.jar").is_file():
            return folder / BUILD_DIR
    return None


def get_distribution(environ: dict[str, str] | None = None, project_root: Path | None = None) -> Distribution:
    """The distribution ``RMQSPEC_ROCKETMQ_HOME`` names (a binary distribution's ``lib/``), else the 4.9.8 build."""
    env = os.environ if environ is None else environ
    home = env.get("RMQSPEC_ROCKETMQ_HOME")
    if home:
        return get_binary_distribution(home)
    root = project_root or Path(__file__).resolve().parents[3]
    build = find_build_dir(root)
    if build is None:
        raise BackendSettingError("RMQSPEC_ROCKETMQ_HOME", None, f"a RocketMQ lib/ folder (no {BUILD_DIR} found)")
    debian = [f"/usr/share/java/{name}.jar" for name in DEBIAN_JARS]
    missing = [jar for jar in debian if not os.path.isfile(jar)]
    if missing:
        raise FileNotFoundError(f"missing {', '.join(missing)}: run .ci/install-rocketmq-runtime")
    jars = [str(build / j) for j in ("rocketmq-broker-4.9.8.jar", "dledger-0.3.1.2.jar", "fastjson-1.2.69.jar")]
    return Distribution(classpath=(*jars, *debian), conf_dir=build / "conf", version="4.9.8")


def get_binary_distribution(home: str) -> Distribution:
    """A RocketMQ binary distribution's ``lib/`` (or its top folder): every jar there, its version from the name."""
    lib = Path(home) / "lib" if (Path(home) / "lib").is_dir() else Path(home)
    brokers = sorted(glob.glob(str(lib / "rocketmq-broker-4.*.jar")))
    if not brokers:
        raise BackendSettingError("RMQSPEC_ROCKETMQ_HOME", home, "a RocketMQ 4.x binary distribution's lib/ folder")
    version = re.search(r"rocketmq-broker-(4[.\d]+)\.jar$", brokers[-1]).group(1)
    return Distribution(classpath=(str(lib / "*"),), conf_dir=lib.parent / "conf", version=version)


def render_broker_conf(data_dir: Path, namesrv_port: int, broker_port: int, overrides: dict[str, str]) -> str:
    """The broker.conf text: the base keys, the store under `data_dir`, the ports, then `overrides`."""
    keys = {
        **BASE_BROKER_CONF, "storePathRootDir": str(data_dir / "store"),
        "storePathCommitLog": str(data_dir / "store" / "commitlog"),
        "namesrvAddr": f"127.0.0.1:{namesrv_port}", "listenPort": str(broker_port), **overrides,
    }
    return "".join(f"{key}={value}\n" for key, value in keys.items())


def wait_for_port(port: int, process: subprocess.Popen, timeout: float, log: Path) -> None:
    """Returns once something accepts on 127.0.0.1:`port`; raises if `process` ends or `timeout` passes first."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if process.poll() is not None:
            raise RuntimeError(f"{log.stem} exited with {process.returncode} before answering; see {log}")
        try:
            socket.create_connection(("127.0.0.1", port), timeout=0.5).close()
            return
        except OSError:
            time.sleep(0.05)
    raise TimeoutError(f"nothing answered on 127.0.0.1:{port} within {timeout} s; see {log}")


def stop_process(process: subprocess.Popen | None, sig: int = signal.SIGTERM, timeout: float = STOP_TIMEOUT) -> None:
    """Sends `sig` and waits `timeout` seconds; SIGKILL after that. Nothing is left running."""
    if process is None or process.poll() is not None:
        return
    process.send_signal(sig)
    try:
        process.wait(timeout)
    except subprocess.TimeoutExpired:
        process.kill()
        process.wait(timeout)


class RocketMQ:
    """A running name server + broker on loopback, owned by the test session that started it."""

    def __init__(self, distribution: Distribution, data_dir: Path, broker_conf: dict[str, str],
                 namesrv_port: int = 9876, broker_port: int = 10911, heap: str = "256m") -> None:
        self.distribution, self.data_dir = distribution, Path(data_dir)
        self.namesrv_port, self.broker_port = namesrv_port, broker_port
        self.heap = heap
        self.broker_conf = broker_conf
        self.namesrv: subprocess.Popen | None = None
        self.broker: subprocess.Popen | None = None
        self.start_seconds = 0.0

    @property
    def namesrv_addr(self) -> str:
        return f"127.0.0.1:{self.namesrv_port}"

    @property
    def broker_addr(self) -> str:
        return f"127.0.0.1:{self.broker_port}"

    def _java(self, main: str, conf: Path, out: Path) -> subprocess.Popen:
        d = str(self.data_dir)
        argv = [shutil.which("java") or "java", f"-Xms{self.heap}", f"-Xmx{self.heap}", *JVM_OPTIONS,
                f"-Duser.home={d}", f"-Drocketmq.home.dir={d}", "-cp", os.pathsep.join(self.distribution.classpath),
                main, "-c", str(conf)]
        env = {**os.environ, "ROCKETMQ_HOME": d}
        with open(out, "ab") as sink:
            return subprocess.Popen(argv, stdout=sink, stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL, env=env)

    def start(self) -> RocketMQ:
        """Starts the name server, then the broker; returns when both answer (stops both if either fails)."""
        require_loopback_only()
        began = time.monotonic()
        (self.data_dir / "conf").mkdir(parents=True, exist_ok=True)
        for xml in glob.glob(str(self.distribution.conf_dir / "logback_*.xml")):
            shutil.copy(xml, self.data_dir / "conf")
        (self.data_dir / "namesrv.conf").write_text(f"listenPort={self.namesrv_port}\n")
        (self.data_dir / "broker.conf").write_text(
            render_broker_conf(self.data_dir, self.namesrv_port, self.broker_port, self.broker_conf))
        try:
            self.start_namesrv()
            self.start_broker()
        except BaseException:
            self.stop()
            raise
        self.start_seconds = time.monotonic() - began
        return self

    def start_namesrv(self) -> None:
        out = self.data_dir / "namesrv.out"
        self.namesrv = self._java("org.apache.rocketmq.namesrv.NamesrvStartup", self.data_dir / "namesrv.conf", out)
        wait_for_port(self.namesrv_port, self.namesrv, START_TIMEOUT, out)

    def start_broker(self) -> None:
        """Starts the broker on the store it has (a restart after `kill_broker` recovers that store)."""
        out = self.data_dir / "broker.out"
        self.broker = self._java("org.apache.rocketmq.broker.BrokerStartup", self.data_dir / "broker.conf", out)
        wait_for_port(self.broker_port, self.broker, START_TIMEOUT, out)

    def kill_broker(self) -> None:
        """SIGKILL to the broker, as a crash: nothing is flushed or unregistered."""
        stop_process(self.broker, signal.SIGKILL)

    def stop_namesrv(self) -> None:
        stop_process(self.namesrv)

    def stop(self) -> None:
        """Stops the broker, then the name server; SIGKILL to whatever does not end within STOP_TIMEOUT."""
        stop_process(self.broker)
        stop_process(self.namesrv)

    def is_running(self) -> bool:
        return any(p is not None and p.poll() is None for p in (self.broker, self.namesrv))

    def __enter__(self) -> RocketMQ:
        return self

    def __exit__(self, *exc: object) -> None:
        self.stop()


def keep_logs(data_dir: Path, destination: Path) -> Path:
    """Copies the name server's and broker's logs and outputs under `destination` (for a failed run's report)."""
    destination.mkdir(parents=True, exist_ok=True)
    for name in ("namesrv.out", "broker.out", "broker.conf"):
        if (data_dir / name).exists():
            shutil.copy(data_dir / name, destination / name)
    if (data_dir / "logs").is_dir():
        shutil.copytree(data_dir / "logs", destination / "logs", dirs_exist_ok=True)
    return destination


class RocketMQSession:
    """A broker for one test session: a fresh store in a new temporary folder, removed with the broker at the end;
    on `close(failed=True)` the logs are first copied to `logs_dir`."""

    def __init__(self, broker_conf: dict[str, str], logs_dir: Path, distribution: Distribution | None = None,
                 namesrv_port: int = 9876, broker_port: int = 10911) -> None:
        import tempfile

        self.data_dir = Path(tempfile.mkdtemp(prefix="rmqspec-rocketmq-"))
        self.logs_dir = logs_dir
        self.broker = RocketMQ(distribution or get_distribution(), self.data_dir, broker_conf, namesrv_port,
                               broker_port)

    def open(self) -> RocketMQ:
        try:
            return self.broker.start()
        except BaseException:
            self.close(failed=True)
            raise

    def close(self, failed: bool) -> Path | None:
        """Stops both processes and removes the store; returns where the logs were kept, if they were."""
        self.broker.stop()
        kept = keep_logs(self.data_dir, self.logs_dir) if failed else None
        shutil.rmtree(self.data_dir, ignore_errors=True)
        return kept
