"""The real 5.x backend: Apache RocketMQ 5.3.3's proxy in local mode (the broker runs inside the proxy's JVM) beside
RocketMQ 4.9.8's name server, started by the build's own ``run`` script (``shared/brokers/rocketmq-5.3.3/run``) in a
loopback-only network namespace.

:class:`RocketMQ5` starts ``run DATA_DIR KEY=VALUE ... proxy.KEY=VALUE ...`` in a session of its own, waits (at most
START_TIMEOUT) for the line ``run`` prints once every port answers, and stops it with SIGTERM to that session (``run``
then stops both JVMs; SIGKILL to whatever is left after STOP_TIMEOUT). ``run`` also gets SIGTERM when the process that
started it dies (PR_SET_PDEATHSIG), so a killed test session leaves no JVM behind. :class:`RocketMQ5Session` gives a
test session one such backend on a fresh data folder, removed at the end, its logs copied first when the session
failed. Missing Debian jars: ``run`` names them and ``install-runtime``; the start fails with that line.

``python -m conformance.runner.backends.rocketmq5 --install-runtime`` (tox env differential-broker-5) checks what
``run`` checks (the Debian jars its ``need`` list names, java, openssl, libnetty-tcnative.so) and the namespace tools,
and only if something is missing names it and runs ``install-runtime`` (root, or sudo).
"""

from __future__ import annotations

import contextlib
import ctypes
import os
import re
import shutil
import signal
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from conformance.runner.backends import BackendSettingError
from conformance.runner.backends.loopback import require_loopback_only

BUILD_DIR = "shared/brokers/rocketmq-5.3.3"
START_TIMEOUT = 90.0
STOP_TIMEOUT = 20.0
# PopReviveService.reviveMsgFromCk's line for a checkpoint whose message it could not read and so dropped (its revive
# offset committed past it): RocketMQ 5.3.3's store shutting down under the revive at a restart (PG-01).
REVIVE_DROP = re.compile(r"can not get biz msg, topic:(\S+), qid:(\d+), offset:(\d+),.*retry:false")
READY = re.compile(r"namesrv pid (\d+) port (\d+); proxy pid (\d+) grpc (\d+) remoting (\d+) broker (\d+)")
PR_SET_PDEATHSIG = 1
# The broker.conf and rmq-proxy.json keys the probes need beside the build's defaults (a later key wins):
# - minInvisibleTimeMillsForRecv: the proxy refuses a gRPC receive whose invisible duration is shorter (default
#   10 s); 1 s lets the revive probes run in seconds instead of tens of seconds.
# - grpcClientConsumerMinLongPollingTimeoutMillis: the proxy holds a receive that finds nothing for at least this
#   long (default 5 s), whatever long polling the request asked; 0 lets a receive asked for none answer at once, so
#   that an empty receive of a drawn sequence takes milliseconds, not 5 s (a request asking for long polling still
#   gets it).
# - autoCreateSubscriptionGroup=false: a group exists only when a probe creates it with its retry settings.
BROKER_CONF = {"autoCreateSubscriptionGroup": "false"}
PROXY_CONF = {"minInvisibleTimeMillsForRecv": "1000", "grpcClientConsumerMinLongPollingTimeoutMillis": "0"}


def find_build_dir(start: Path) -> Path | None:
    """``shared/brokers/rocketmq-5.3.3`` in `start` or the nearest parent folder that has its ``run`` script."""
    for folder in (start, *start.parents):
        if (folder / BUILD_DIR / "run").is_file():
            return folder / BUILD_DIR
    return None


def get_build_dir(project_root: Path | None = None) -> Path:
    root = project_root or Path(__file__).resolve().parents[3]
    build = find_build_dir(root)
    if build is None:
        raise BackendSettingError("RMQSPEC_BACKEND", "rocketmq-5.3.3", f"a {BUILD_DIR} folder beside the project")
    return build


def get_run_command(build: Path, data_dir: Path, broker_conf: dict[str, str], proxy_conf: dict[str, str]) -> list[str]:
    """``run DATA_DIR KEY=VALUE ... proxy.KEY=VALUE ...``."""
    return [str(build / "run"), str(data_dir), *(f"{k}={v}" for k, v in broker_conf.items()),
            *(f"proxy.{k}={v}" for k, v in proxy_conf.items())]


def _die_with_parent() -> None:
    """In the child before exec: SIGTERM when the parent dies (Linux), so `run` stops its JVMs."""
    try:
        ctypes.CDLL(None, use_errno=True).prctl(PR_SET_PDEATHSIG, signal.SIGTERM)
    except (OSError, AttributeError):
        pass


class RocketMQ5:
    """A running 5.3.3 proxy+broker and its name server on loopback, owned by the session that started it."""

    def __init__(self, build: Path, data_dir: Path, broker_conf: dict[str, str] | None = None,
                 proxy_conf: dict[str, str] | None = None, heap: str | None = None) -> None:
        self.build, self.data_dir = build, Path(data_dir)
        self.broker_conf = {**BROKER_CONF, **(broker_conf or {})}
        self.proxy_conf = {**PROXY_CONF, **(proxy_conf or {})}
        self.heap = heap
        self.process: subprocess.Popen | None = None
        self.ports: dict[str, int] = {}
        self.out_offset = 0
        self.start_seconds = 0.0

    @property
    def namesrv_addr(self) -> str:
        return f"127.0.0.1:{self.ports['namesrv']}"

    @property
    def broker_addr(self) -> str:
        return f"127.0.0.1:{self.ports['broker']}"

    @property
    def proxy_grpc_addr(self) -> str:
        return f"127.0.0.1:{self.ports['grpc']}"

    @property
    def out_path(self) -> Path:
        return self.data_dir / "run.out"

    def start(self) -> RocketMQ5:
        """Starts `run`; returns once it printed its ready line. Stops it and raises if it exits or is not ready
        within START_TIMEOUT (the message names `run`'s last output lines, e.g. a missing jar)."""
        require_loopback_only()
        self.data_dir.mkdir(parents=True, exist_ok=True)
        env = dict(os.environ)
        if self.heap:
            env["JAVA_HEAP"] = self.heap
        began = time.monotonic()
        command = get_run_command(self.build, self.data_dir, self.broker_conf, self.proxy_conf)
        # A restart appends to run.out: its ready line is the one after what an earlier start wrote.
        self.out_offset = self.out_path.stat().st_size if self.out_path.exists() else 0
        with open(self.out_path, "ab") as sink:
            self.process = subprocess.Popen(command, stdout=sink, stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL,
                                            env=env, start_new_session=True, preexec_fn=_die_with_parent)
        try:
            self.ports = self._wait_ready(began + START_TIMEOUT)
        except BaseException:
            self.stop()
            raise
        self.start_seconds = time.monotonic() - began
        return self

    def _wait_ready(self, deadline: float) -> dict[str, int]:
        while time.monotonic() < deadline:
            with open(self.out_path, "rb") as out:
                out.seek(self.out_offset)
                match = READY.search(out.read().decode(errors="replace"))
            if match:
                names = ("namesrv_pid", "namesrv", "proxy_pid", "grpc", "remoting", "broker")
                return dict(zip(names, map(int, match.groups()), strict=True))
            if self.process.poll() is not None:
                raise RuntimeError(f"rocketmq-5.3.3 `run` exited with {self.process.returncode} before it was ready: "
                                   f"{self._tail()}")
            time.sleep(0.1)
        raise TimeoutError(f"rocketmq-5.3.3 was not ready within {START_TIMEOUT} s: {self._tail()}")

    def _tail(self, lines: int = 3) -> str:
        text = self.out_path.read_text(errors="replace").strip().splitlines() if self.out_path.exists() else []
        return " | ".join(text[-lines:]) or f"no output (see {self.data_dir})"

    def stop(self) -> None:
        """SIGTERM to `run`'s session (it stops both JVMs), SIGKILL to the session after STOP_TIMEOUT."""
        process = self.process
        if process is None or process.poll() is not None:
            return
        with contextlib.suppress(ProcessLookupError):
            self.pause_namesrv(False)  # a paused name server would hold SIGTERM until STOP_TIMEOUT
        for sig in (signal.SIGTERM, signal.SIGKILL):
            try:
                os.killpg(process.pid, sig)
            except ProcessLookupError:
                return
            try:
                process.wait(STOP_TIMEOUT)
                break
            except subprocess.TimeoutExpired:
                continue
        self._kill_leftovers()

    def _kill_leftovers(self) -> None:
        """Whatever of `run`'s session outlived it (a JVM that ignored SIGTERM) gets SIGKILL."""
        for pid in (self.ports.get("namesrv_pid"), self.ports.get("proxy_pid")):
            if pid:
                try:
                    os.kill(pid, signal.SIGKILL)
                except ProcessLookupError:
                    pass

    def restart(self) -> RocketMQ5:
        """Stops both JVMs (SIGTERM: the broker persists what it would at a shutdown) and starts them again on the
        same data folder and ports (a schedule's broker/proxy restart)."""
        self.stop()
        return self.start()

    def kill(self) -> None:
        """`kill -9` of the proxy's JVM: the broker inside it persists nothing (PO-10's crash); `run` then stops its
        name server and exits. `start()` brings both back on the same data folder and ports (the store recovers)."""
        pid = self.ports.get("proxy_pid")
        if pid and self.is_running():
            with contextlib.suppress(ProcessLookupError):
                os.kill(pid, signal.SIGKILL)
            with contextlib.suppress(subprocess.TimeoutExpired):
                self.process.wait(STOP_TIMEOUT)
        self.stop()

    def crash(self) -> RocketMQ5:
        """A crash and a start on the same store (a schedule's proxy_kill)."""
        self.kill()
        return self.start()

    def pause_namesrv(self, paused: bool = True) -> None:
        """Fault: the name server stops answering (SIGSTOP: its connections stay open and every request times out),
        or answers again (SIGCONT). Not a kill: `run` stops the broker as soon as its name server's process ends."""
        pid = self.ports.get("namesrv_pid")
        if pid:
            os.kill(pid, signal.SIGSTOP if paused else signal.SIGCONT)

    def get_persist_times(self) -> dict[str, float]:
        """When the broker last persisted its consumer offsets and its FIFO order info (the files' modification
        times, wall clock seconds; 0 when not yet written): PO-10's persists, every 5 s and every 10 s."""
        config = self.data_dir / "store" / "config"
        return {name: (config / f"{name}.json").stat().st_mtime if (config / f"{name}.json").exists() else 0.0
                for name in ("consumerOffset", "consumerOrderInfo")}

    def get_revive_drops(self, topic: str) -> tuple[tuple[int, int], ...]:
        """(queue id, queue offset) of each message of `topic` whose checkpoint the broker's revive service dropped,
        as its pop.log says (REVIVE_DROP)."""
        log = self.data_dir / "logs" / "rocketmqlogs" / "pop.log"
        text = log.read_text(errors="replace") if log.exists() else ""
        return tuple((int(m[2]), int(m[3])) for m in REVIVE_DROP.finditer(text) if m[1] == topic)

    def is_running(self) -> bool:
        return self.process is not None and self.process.poll() is None

    def __enter__(self) -> RocketMQ5:
        return self

    def __exit__(self, *exc: object) -> None:
        self.stop()


def keep_logs(data_dir: Path, destination: Path) -> Path:
    """Copies `run`'s output, the name server's and proxy's outputs, the configurations it used and the logs."""
    destination.mkdir(parents=True, exist_ok=True)
    for name in ("run.out", "namesrv.out", "proxy.out", "broker.conf", "rmq-proxy.json"):
        if (data_dir / name).exists():
            shutil.copy(data_dir / name, destination / name)
    if (data_dir / "logs").is_dir():
        shutil.copytree(data_dir / "logs", destination / "logs", dirs_exist_ok=True)
    return destination


class RocketMQ5Session:
    """A 5.3.3 backend for one test session: a fresh data folder, removed with the processes at the end; on
    `close(failed=True)` the logs are first copied to `logs_dir`."""

    def __init__(self, logs_dir: Path, broker_conf: dict[str, str] | None = None,
                 proxy_conf: dict[str, str] | None = None, build: Path | None = None) -> None:
        self.data_dir = Path(tempfile.mkdtemp(prefix="rmqspec-rocketmq5-"))
        self.logs_dir = logs_dir
        self.backend = RocketMQ5(build or get_build_dir(), self.data_dir, broker_conf, proxy_conf)

    def open(self) -> RocketMQ5:
        try:
            return self.backend.start()
        except BaseException:
            self.close(failed=True)
            raise

    def close(self, failed: bool) -> Path | None:
        self.backend.stop()
        kept = keep_logs(self.data_dir, self.logs_dir) if failed else None
        shutil.rmtree(self.data_dir, ignore_errors=True)
        return kept


NEED = re.compile(r"^need=\(([^)]*)\)", re.MULTILINE)
TOOLS = ("java", "openssl", "unshare", "ip")


def get_missing_runtime(build: Path) -> list[str]:
    """What `run` would report missing (the Debian jars of its ``need`` list, the tcnative library) and the tools
    the harness needs; empty when nothing is."""
    match = NEED.search((build / "run").read_text())
    jars = [f"/usr/share/java/{name}.jar" for name in (match.group(1).split() if match else ())]
    missing = [jar for jar in jars if not os.path.isfile(jar)]
    missing += [tool for tool in TOOLS if shutil.which(tool) is None]
    listed = subprocess.run(["dpkg", "-L", "libnetty-tcnative-jni"], capture_output=True, text=True, timeout=30)
    if "/libnetty-tcnative.so" not in listed.stdout:
        missing.append("libnetty-tcnative.so (libnetty-tcnative-jni)")
    return missing


def install_runtime(build: Path) -> int:
    """Runs the build's install-runtime (and iproute2/util-linux) when something is missing; names what was."""
    missing = get_missing_runtime(build)
    if not missing:
        return 0
    print(f"missing {', '.join(missing)}: running {build / 'install-runtime'}", file=sys.stderr)
    sudo = [] if os.geteuid() == 0 else ["sudo"]
    env = {**os.environ, "DEBIAN_FRONTEND": "noninteractive"}
    for command in (["apt-get", "update", "-qq"],
                    ["apt-get", "install", "-y", "-qq", "--no-install-recommends", "iproute2", "util-linux"],
                    [str(build / "install-runtime")]):
        subprocess.run([*sudo, *command], check=True, env=env, timeout=1800)
    left = get_missing_runtime(build)
    if left:
        print(f"still missing after install-runtime: {', '.join(left)}", file=sys.stderr)
    return 1 if left else 0


if __name__ == "__main__":
    if sys.argv[1:] != ["--install-runtime"]:
        raise SystemExit("usage: python -m conformance.runner.backends.rocketmq5 --install-runtime")
    raise SystemExit(install_runtime(get_build_dir()))
