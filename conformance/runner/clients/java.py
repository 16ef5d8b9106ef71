"""The driver of Apache RocketMQ's own Java push consumer (the reference, rocketmq-client 4.9.8 by default): one
DefaultMQPushConsumer in a JVM speaking adapter protocol v1 (conformance/runner/clients/java/Adapter.java).

The adapter is compiled with `javac` at test time against the client's classpath, into a cache directory keyed by
the source, the classpath and the compiler (`<RMQSPEC_CACHE_DIR or ~/.cache/rmqspec>/java-adapter/<key>`), so a
second run does not compile again. The classpath is RMQSPEC_JAVA_CLIENT_CLASSPATH (entries joined by `:`, a
`dir/*` entry meaning every jar in dir, as `java -cp` reads it: e.g. the official artefacts of any RocketMQ version
from a Maven repository, with their fastjson, netty and the rest), else the provided jar and fastjson under
`shared/clients/java` in the nearest parent folder and Debian's jars under /usr/share/java
(.ci/install-rocketmq-runtime installs them).

Each run gets its own client state: `user.home` and the BROADCASTING local offset store
(`rocketmq.client.localOffsetStoreDir`) under the run's log directory (else one temporary directory per harness
process; instance names are fresh per run, and a restarted consumer of the same run finds its offsets), the
client's own log file in the log directory.
"""

from __future__ import annotations

import atexit
import glob
import hashlib
import os
import shutil
import subprocess
import tempfile
import zipfile
from pathlib import Path

from conformance.runner.backends.rocketmq5 import find_build_dir
from conformance.runner.clients import driver
from conformance.runner.clients.driver import AdapterConsumer, OutcomeScript, StartRequest
from runenv.run_context import SettingError, get_cache_dir

CLIENT_NAME = "rocketmq-client-java"
CLASSPATH_VARIABLE = "RMQSPEC_JAVA_CLIENT_CLASSPATH"
CLIENT_DIR = "shared/clients/java"
CLIENT_JARS = ("rocketmq-client-4.9.8.jar", "fastjson-1.2.69.jar")
# The client's run-time libraries from Debian (shared/clients/java/README.md): every netty module it links, listed
# one by one (netty-all.jar is an empty shell there).
DEBIAN_JARS = (
    "netty-buffer", "netty-codec", "netty-common", "netty-handler", "netty-resolver", "netty-transport",
    "netty-transport-native-epoll", "netty-transport-native-unix-common", "commons-lang3", "commons-validator",
    "commons-collections3", "slf4j-api", "lz4-java", "zstd-jni",
)
DEBIAN_DIR = "/usr/share/java"
CONSUMER_CLASS = "org/apache/rocketmq/client/consumer/DefaultMQPushConsumer.class"
SOURCE = Path(__file__).with_name("java") / "Adapter.java"
MAIN_CLASS = "Adapter"
VALID_CLASSPATH = (f"existing jars or directories joined by '{os.pathsep}' (a 'dir/*' entry: every jar in dir), "
                   "one of them holding org.apache.rocketmq.client.consumer.DefaultMQPushConsumer")
# The JVM starts in well under a second; the first start may also compile the adapter (a few seconds).
JVM_OPTIONS = ("-XX:+UseSerialGC", "-XX:TieredStopAtLevel=1", "-Xss512k", "-Xmx256m")
# The model-backed server listens on one port; a client's VIP channel (port - 2, RocketMQ's fastListenPort) would
# reach nothing, so the inner producer's fallback send to %RETRY% would fail for a reason no broker has. 4.9.8 has
# it off by default (ClientConfig L61), older clients on: off for whatever version is on the classpath.
CLIENT_PROPERTIES = ("-Dcom.rocketmq.sendMessageWithVIPChannel=false",)


def expand_classpath(classpath: list[str]) -> list[str]:
    """The jars and directories a `java -cp` classpath names (a `dir/*` entry expanded)."""
    found = []
    for entry in classpath:
        found.extend(sorted(glob.glob(os.path.join(entry[:-1], "*.jar"))) if entry.endswith("*") else [entry])
    return found


def has_consumer_class(classpath: list[str]) -> bool:
    for entry in expand_classpath(classpath):
        if os.path.isdir(entry) and os.path.isfile(os.path.join(entry, CONSUMER_CLASS)):
            return True
        if os.path.isfile(entry) and zipfile.is_zipfile(entry):
            with zipfile.ZipFile(entry) as jar:
                if CONSUMER_CLASS in jar.namelist():
                    return True
    return False


def check_classpath(value: str) -> list[str]:
    """RMQSPEC_JAVA_CLIENT_CLASSPATH's entries, checked: SettingError (one line) when one is missing or no entry
    holds the push consumer."""
    entries = value.split(os.pathsep)
    missing = [e for e in entries if not e or not os.path.exists(e[:-1] if e.endswith("*") else e)]
    if missing or not has_consumer_class(entries):
        raise SettingError(CLASSPATH_VARIABLE, value, VALID_CLASSPATH)
    return entries


def check_environment(environ=os.environ) -> None:
    """The Java client's setting, checked when a pytest session starts (conftest.py)."""
    if environ.get(CLASSPATH_VARIABLE):
        check_classpath(environ[CLASSPATH_VARIABLE])


def find_client_dir(start: Path) -> Path | None:
    """`shared/clients/java` holding the provided jars, in `start` or the nearest parent folder that has it."""
    for folder in (start, *start.parents):
        if all((folder / CLIENT_DIR / jar).is_file() for jar in CLIENT_JARS):
            return folder / CLIENT_DIR
    return None


def get_classpath(environ=os.environ) -> list[str] | None:
    """The client's classpath: the setting, else the provided jars and Debian's; None when the default's jars are
    not all there (get_unavailable_reason says which)."""
    if environ.get(CLASSPATH_VARIABLE):
        return check_classpath(environ[CLASSPATH_VARIABLE])
    client = find_client_dir(Path(__file__).resolve())
    debian = [f"{DEBIAN_DIR}/{name}.jar" for name in DEBIAN_JARS]
    if client is None or not all(os.path.isfile(jar) for jar in debian):
        return None
    return [*(str(client / jar) for jar in CLIENT_JARS), *debian]


def get_unavailable_reason(environ=os.environ) -> str | None:
    """Why this machine cannot run the Java client (no JDK, no jars), or None."""
    for tool in ("java", "javac"):
        if shutil.which(tool) is None:
            return f"no `{tool}` on PATH: the Java client's adapter needs a JDK (17: .ci/install-rocketmq-runtime)"
    if environ.get(CLASSPATH_VARIABLE):
        return None  # checked at session start: a bad value stops the session with one line
    if find_client_dir(Path(__file__).resolve()) is None:
        return f"no {CLIENT_DIR}/{CLIENT_JARS[0]} in a parent folder and no {CLASSPATH_VARIABLE}"
    missing = [name for name in DEBIAN_JARS if not os.path.isfile(f"{DEBIAN_DIR}/{name}.jar")]
    if missing:
        return f"Debian's run-time jars of the client are missing ({', '.join(missing)}): run " \
               ".ci/install-rocketmq-runtime, or set " + CLASSPATH_VARIABLE
    return None


def get_javac_version() -> str:
    done = subprocess.run(["javac", "-version"], capture_output=True, text=True, timeout=60, check=True)
    return (done.stdout + done.stderr).strip()


def compile_adapter(classpath: list[str], environ=os.environ) -> Path:
    """The directory of the compiled adapter for this source, classpath and javac: compiled once, then reused.
    Compiled into a fresh directory that is renamed into place, so two processes never see half a compilation."""
    key = hashlib.sha256("\n".join([SOURCE.read_text(), os.pathsep.join(classpath), get_javac_version()])
                         .encode()).hexdigest()[:20]
    target = get_cache_dir(environ) / "java-adapter" / key
    if (target / f"{MAIN_CLASS}.class").is_file():
        return target
    target.parent.mkdir(parents=True, exist_ok=True)
    scratch = Path(tempfile.mkdtemp(prefix=f"{key}-", dir=target.parent))
    argv = ["javac", "-encoding", "UTF-8", "-Xlint:all,-path", "-Werror", "-d", str(scratch),
            "-cp", os.pathsep.join(classpath), str(SOURCE)]
    done = subprocess.run(argv, capture_output=True, text=True, timeout=180)
    if done.returncode != 0:
        shutil.rmtree(scratch, ignore_errors=True)
        raise RuntimeError(f"javac failed on {SOURCE.name} against {CLASSPATH_VARIABLE or 'the classpath'}: "
                           f"{done.stdout}{done.stderr}"[:4000])
    try:
        scratch.rename(target)
    except OSError:  # another process renamed its copy first: the same classes
        shutil.rmtree(scratch, ignore_errors=True)
    return target


_PROCESS_STATE: list[str] = []


def get_state_dir(log_dir: str | None) -> str:
    """Where the client keeps its state (user.home, the local offset store) for a run with this log directory."""
    if log_dir:
        return os.path.join(log_dir, "java-client-state")
    if not _PROCESS_STATE:
        _PROCESS_STATE.append(tempfile.mkdtemp(prefix="rmqspec-java-"))
        atexit.register(shutil.rmtree, _PROCESS_STATE[0], True)
    return _PROCESS_STATE[0]


def find_adapter_processes(parent: int | None = None) -> list[int]:
    """Pids of Java adapter JVMs whose parent is `parent` (default: this process)."""
    return driver.find_adapter_processes(str(SOURCE.parent).encode(), parent)


class JavaConsumer(AdapterConsumer):
    """RocketMQ's Java DefaultMQPushConsumer in `java -cp <adapter>:<classpath> Adapter`."""

    client_name = CLIENT_NAME
    ready_timeout_s = 60.0  # a JVM start, and the first time a compilation

    def get_argv(self) -> list[str]:
        classpath = get_classpath()
        if classpath is None:
            raise RuntimeError(str(get_unavailable_reason()))
        return self.get_java_argv(classpath)

    def get_java_argv(self, classpath: list[str]) -> list[str]:
        classes = compile_adapter(classpath)
        state = get_state_dir(self.log_dir)
        os.makedirs(state, exist_ok=True)
        logs = self.log_dir or state
        properties = [f"-Duser.home={state}", f"-Drocketmq.client.localOffsetStoreDir={state}/offsets",
                      f"-Drocketmq.client.logRoot={logs}", f"-Drocketmq.client.logFileName={self.request.instance}.log",
                      f"-Dadapter.source={SOURCE.parent}", *CLIENT_PROPERTIES]
        return ["java", *JVM_OPTIONS, *properties, "-cp", os.pathsep.join([str(classes), *classpath]), MAIN_CLASS]


def open_java_consumer(request: StartRequest, script: OutcomeScript, log_dir: str | None) -> JavaConsumer:
    """The glue's way to make this client's consumer (conformance/runner/run.py's OpenClient)."""
    return JavaConsumer(request, script, log_dir=log_dir)


# RocketMQ 5.3.3's own remoting client, the 5.x reference for POP (chapter 18): the build's jars beside the project
# (shared/brokers/rocketmq-5.3.3/jars, examples/PopConsumerExample.java names the class path) and these Debian jars.
POP_DEBIAN_JARS = (
    "netty-buffer", "netty-codec", "netty-common", "netty-resolver", "netty-transport", "netty-transport-native-epoll",
    "netty-transport-native-unix-common", "commons-lang3", "commons-codec", "commons-validator",
    "commons-collections3", "guava", "slf4j-api", "jul-to-slf4j",
)
POP_CLIENT_VERSION = "5.3.3"


def get_pop_classpath() -> list[str] | None:
    """The 5.3.3 client's classpath (the build's jars/*, Debian's), or None when a part is missing."""
    build = find_build_dir(Path(__file__).resolve())
    debian = [f"{DEBIAN_DIR}/{name}.jar" for name in POP_DEBIAN_JARS]
    if build is None or not all(os.path.isfile(jar) for jar in debian):
        return None
    return [str(build / "jars" / "*"), *debian]


def get_pop_unavailable_reason() -> str | None:
    """Why this machine cannot run the 5.3.3 client in POP mode, or None."""
    for tool in ("java", "javac"):
        if shutil.which(tool) is None:
            return f"no `{tool}` on PATH: the Java client's adapter needs a JDK (17: .ci/install-rocketmq-runtime)"
    if get_pop_classpath() is None:
        missing = [name for name in POP_DEBIAN_JARS if not os.path.isfile(f"{DEBIAN_DIR}/{name}.jar")]
        return f"no shared/brokers/rocketmq-5.3.3 beside the project, or Debian jars missing: {missing} " \
               "(python -m conformance.runner.backends.rocketmq5 --install-runtime)"
    return None


class JavaPopConsumer(JavaConsumer):
    """RocketMQ 5.3.3's DefaultMQPushConsumer, the same Adapter.java compiled against the 5.3.3 jars."""

    def get_argv(self) -> list[str]:
        classpath = get_pop_classpath()
        if classpath is None:
            raise RuntimeError(str(get_pop_unavailable_reason()))
        return self.get_java_argv(classpath)


def open_java_pop_consumer(request: StartRequest, script: OutcomeScript, log_dir: str | None) -> JavaPopConsumer:
    return JavaPopConsumer(request, script, log_dir=log_dir)
