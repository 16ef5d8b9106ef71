"""The build and the driver of apache/rocketmq-client-go v2 (the tag PINNED names): one push consumer in the adapter
process `conformance/runner/clients/go/src/rmqspec-go-adapter` (adapter protocol v1, JSON lines), built once into a
cache.

Where the sources come from, without Go's module proxy (GOPROXY=off) and without anything outside the repository
at CI time:
- the client: `go/src/github.com/apache/rocketmq-client-go/v2` holds the non-test Go files of the packages a push
  consumer compiles (consumer, internal, internal/remote, internal/utils, primitive, rlog, errors, hooks) at tag
  v2.1.2, unmodified, with the client's LICENSE and NOTICE (Apache-2.0); `go/PINNED.json` names the tag, its
  commit and each file's SHA-256, and the build refuses a copy that differs;
- stathat.com/c/consistent v1.0.0 (one standard-library file, MIT, not packaged by Debian): `go/src/stathat.com/c/
  consistent`, with its LICENSE, pinned the same way;
- everything else from Debian: `golang-go` and the `golang-*-dev` source packages (DEBIAN_PACKAGES), installed by
  `install_packages` (apt-get, only what is missing: the tox env's build step).

The build is GOPATH mode (GO111MODULE=off): `go/` and Debian's /usr/share/gocode are the GOPATH, as Debian's own Go
packages build, so no go.mod of any dependency is needed. CGO_ENABLED=0: no C toolchain. The binary goes to
`go/build/<key>/`, where the key hashes the sources, `go version` and the Debian packages' versions; `built.json`
beside it records what was built (tag, commit, go version, each package's version). A second build with the same key
costs a few dpkg and hash look-ups.

`python -m conformance.runner.clients.golang` installs the packages and builds (the tox env's commands_pre);
`--build-only` never installs (the main job's smoke step: Go is listed with the reason where it is missing).
"""

from __future__ import annotations

import hashlib
import json
import os
import shutil
import subprocess
import sys
from functools import cache
from pathlib import Path

from conformance.runner.clients import driver
from conformance.runner.clients.driver import AdapterConsumer, OutcomeScript, StartRequest

CLIENT_NAME = "rocketmq-client-go"
GO_DIR = Path(__file__).with_name("go")
PINNED = json.loads((GO_DIR / "PINNED.json").read_text(encoding="utf-8"))
CLIENT_VERSION = PINNED["client"]["tag"].removeprefix("v")
ADAPTER_PACKAGE = "rmqspec-go-adapter"
BUILD_DIR = GO_DIR / "build"
DEBIAN_GOPATH = "/usr/share/gocode"
# What the push consumer's packages import (`go list -deps`), as Debian packages them.
DEBIAN_PACKAGES = ("golang-go", "golang-github-emirpasic-gods-dev", "golang-github-golang-mock-dev",
                   "golang-github-json-iterator-go-dev", "golang-github-modern-go-concurrent-dev",
                   "golang-github-modern-go-reflect2-dev", "golang-github-patrickmn-go-cache-dev",
                   "golang-github-pkg-errors-dev", "golang-github-sirupsen-logrus-dev",
                   "golang-github-tidwall-gjson-dev", "golang-github-tidwall-match-dev",
                   "golang-github-tidwall-pretty-dev", "golang-go.uber-atomic-dev", "golang-golang-x-sys-dev",
                   "golang-gopkg-natefinch-lumberjack.v2-dev")
INSTALL_LIMIT_S = 600
BUILD_LIMIT_S = 300


def get_package_versions(packages: tuple[str, ...] = DEBIAN_PACKAGES) -> dict[str, str | None]:
    """Each package's installed version (dpkg), None where it is not installed."""
    versions: dict[str, str | None] = {}
    for package in packages:
        done = subprocess.run(["dpkg-query", "-W", "-f=${Status}\t${Version}", package], capture_output=True,
                              text=True, timeout=30)
        status, _, version = done.stdout.partition("\t")
        versions[package] = version if done.returncode == 0 and status == "install ok installed" else None
    return versions


def install_packages(packages: tuple[str, ...] = DEBIAN_PACKAGES) -> str | None:
    """apt-get the packages that are missing (none missing: no apt call at all); None when all are installed after,
    else why not (one line)."""
    if shutil.which("dpkg-query") is None or shutil.which("apt-get") is None:
        return "no dpkg-query or apt-get here: Debian's golang-go and golang-*-dev packages cannot be installed"
    missing = [p for p, version in get_package_versions(packages).items() if version is None]
    if not missing:
        return None
    prefix = [] if os.geteuid() == 0 else ["sudo", "-n"]
    env = {**os.environ, "DEBIAN_FRONTEND": "noninteractive"}
    for command in (["apt-get", "update", "-qq"],
                    ["apt-get", "install", "-y", "-qq", "--no-install-recommends", *missing]):
        done = subprocess.run(prefix + command, capture_output=True, text=True, timeout=INSTALL_LIMIT_S, env=env)
        if done.returncode != 0:
            return f"{' '.join(command[:2])} failed ({done.returncode}): {done.stderr.strip()[-500:]}"
    still = [p for p, version in get_package_versions(missing).items() if version is None]
    return f"still not installed after apt-get: {', '.join(still)}" if still else None


def get_source_files() -> list[Path]:
    """Every file the build compiles or pins: the adapter, the client's pinned copy, stathat's."""
    return sorted(p for p in (GO_DIR / "src").rglob("*") if p.is_file())


def sha256(path: Path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()


def get_source_problems() -> list[str]:
    """Where the pinned copies differ from PINNED.json (a file changed, missing or added): empty when they agree."""
    problems = []
    for name in ("client", "consistent"):
        root = GO_DIR / "src" / PINNED[name]["path"]
        pinned = PINNED[name]["files"]
        present = {str(p.relative_to(root)): p for p in root.rglob("*") if p.is_file()}
        problems += [f"{name}: {f} is missing" for f in sorted(set(pinned) - set(present))]
        problems += [f"{name}: {f} is not pinned" for f in sorted(set(present) - set(pinned))]
        problems += [f"{name}: {f} differs from its pinned SHA-256" for f in sorted(set(pinned) & set(present))
                     if sha256(present[f]) != pinned[f]]
    return problems


def get_go_version() -> str | None:
    if shutil.which("go") is None:
        return None
    done = subprocess.run(["go", "version"], capture_output=True, text=True, timeout=30)
    return done.stdout.strip() if done.returncode == 0 else None


def get_build_key(go_version: str, packages: dict[str, str | None]) -> str:
    """The cache key of one build: the sources' contents, the compiler and the Debian packages' versions."""
    digest = hashlib.sha256(go_version.encode())
    digest.update(json.dumps(packages, sort_keys=True).encode())
    for path in get_source_files():
        digest.update(str(path.relative_to(GO_DIR)).encode() + b"\0" + path.read_bytes())
    return digest.hexdigest()[:16]


def get_build_env(gocache: Path) -> dict[str, str]:
    """GOPATH mode over the repository's copies and Debian's sources; no module proxy, no network, no C."""
    return {**os.environ, "GO111MODULE": "off", "GOPROXY": "off", "GOFLAGS": "", "CGO_ENABLED": "0",
            "GOPATH": f"{GO_DIR}{os.pathsep}{DEBIAN_GOPATH}", "GOCACHE": str(gocache), "GOTOOLCHAIN": "local"}


def build(timeout_s: float = BUILD_LIMIT_S) -> tuple[Path | None, str | None]:
    """(the adapter binary, None) built or found in the cache; (None, why not) when it cannot be built."""
    packages = get_package_versions()
    missing = [p for p, version in packages.items() if version is None]
    go_version = get_go_version()
    if missing or go_version is None:
        return None, f"Debian packages not installed: {', '.join(missing) or 'golang-go (no `go`)'}: " \
                     "`python -m conformance.runner.clients.golang` (tox run -e conformance-go) installs them"
    problems = get_source_problems()
    if problems:
        return None, f"the pinned sources differ from go/PINNED.json: {'; '.join(problems[:3])}"
    target = BUILD_DIR / get_build_key(go_version, packages)
    binary = target / ADAPTER_PACKAGE
    if binary.is_file():
        return binary, None
    target.mkdir(parents=True, exist_ok=True)
    pinned = PINNED["client"]
    flags = f"-X main.clientVersion={CLIENT_VERSION} -X main.clientCommit={pinned['commit']}"
    done = subprocess.run(["go", "build", "-o", str(binary) + ".tmp", "-ldflags", flags, ADAPTER_PACKAGE],
                          capture_output=True, text=True, timeout=timeout_s, cwd=GO_DIR,
                          env=get_build_env(BUILD_DIR / "gocache"))
    if done.returncode != 0:
        return None, f"go build failed ({done.returncode}): {done.stderr.strip()[-800:]}"
    built = {"tag": pinned["tag"], "commit": pinned["commit"], "consistent": PINNED["consistent"]["tag"],
             "go": go_version, "debian": packages}
    (target / "built.json").write_text(json.dumps(built, indent=1) + "\n", encoding="utf-8")
    os.replace(str(binary) + ".tmp", binary)
    return binary, None


@cache
def get_adapter() -> tuple[Path | None, str | None]:
    """The built adapter of this process (built at the first call if the packages are there), or why not."""
    if not sys.platform.startswith("linux"):
        return None, f"the build uses Debian's Go packages: this is {sys.platform}"
    return build()


def get_unavailable_reason() -> str | None:
    """Why this machine cannot run the Go client (no Go packages, a failed build), or None."""
    return get_adapter()[1]


def install_client() -> str | None:
    """The tox env's build step: install the missing Debian packages, then build (or find the cached build)."""
    reason = install_packages()
    if reason is not None:
        return reason
    get_adapter.cache_clear()
    return get_unavailable_reason()


def find_adapter_processes(parent: int | None = None) -> list[int]:
    """Pids of Go adapter processes whose parent is `parent` (default: this process)."""
    return driver.find_adapter_processes(ADAPTER_PACKAGE.encode(), parent)


class GoConsumer(AdapterConsumer):
    """rocketmq-client-go's push consumer in the built `rmqspec-go-adapter`."""

    client_name = CLIENT_NAME
    # A listener's panic in the orderly consume loop is not recovered: the process dies under the harness.
    reports_early_exit = True

    def get_env(self) -> dict[str, str]:
        """BROADCASTING offsets go to a file under rocketmq.client.localOffsetStoreDir ($HOME/.rocketmq_client_go by
        default): the run's log directory, which a restarted instance of the same run reads again."""
        env = super().get_env()
        if self.log_dir:
            env["rocketmq.client.localOffsetStoreDir"] = os.path.join(self.log_dir, "offsets")
        return env

    def get_argv(self) -> list[str]:
        binary, reason = get_adapter()
        if binary is None:
            raise RuntimeError(f"{CLIENT_NAME} cannot run: {reason}")
        return [str(binary)]


def open_go_consumer(request: StartRequest, script: OutcomeScript, log_dir: str | None) -> GoConsumer:
    """The glue's way to make this client's consumer (conformance/runner/run.py's OpenClient)."""
    return GoConsumer(request, script, log_dir=log_dir)


def main(argv: list[str]) -> int:
    reason = get_unavailable_reason() if argv == ["--build-only"] else install_client()
    if reason is not None:
        print(f"{CLIENT_NAME}: {reason}", file=sys.stderr)
        return 1
    binary = get_adapter()[0]
    print(f"{CLIENT_NAME} {CLIENT_VERSION}: {binary} ({(binary.parent / 'built.json').read_text().strip()})")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
