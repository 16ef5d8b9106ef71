"""The model-backed 5.x server as the 5.x client suites use a deployment (pop_suite.PopTarget is the real 5.3.3):
`backend` (a ModelPopBackend: topics, groups, sends, reads over the wire), `namesrv`, `endpoints` (the server's
gRPC proxy), `restart()` for a proxy_restart fault — the broker and its local proxy stopped gracefully and
started again on their ports (core.Server.restart_proxy), as RocketMQ5.restart stops and starts 5.3.3 —, `crash()`
for a proxy_kill (core.Server.crash_proxy, as RocketMQ5.crash) and `set_fault` for the lasting ones: every fault
the 5.x workloads make on RocketMQ 5.3.3."""

from __future__ import annotations

import contextlib

from conformance.runner.backends import admin
from conformance.runner.backends.pop_backend import ModelPopBackend, get_model_pop_settings
from conformance.runner.server.runner import run_server

RESTART_TIMEOUT_S = 30.0


class ModelPopTarget:
    """A running model-backed 5.x server (a ServerThread) as the runs use it."""

    def __init__(self, runner) -> None:
        self.runner = runner
        server = runner.server
        self.namesrv, self.endpoints = server.namesrv_addr, server.proxy_addr
        self.backend = self.connect()

    def connect(self) -> ModelPopBackend:
        return ModelPopBackend(self.runner.server.broker_addr, self.endpoints)

    def restart(self) -> None:
        self.backend.close()
        self.runner.run(self.runner.server.restart_proxy, timeout=RESTART_TIMEOUT_S)
        self.backend = self.connect()

    def reconnect(self) -> ModelPopBackend:
        self.backend.close()
        self.backend = self.connect()
        return self.backend

    def crash(self) -> None:
        """A proxy_kill fault: the broker with its local proxy killed and started again on its ports and store
        (core.Server.crash_proxy: what was committed since the last persist is lost, PO-10)."""
        self.backend.close()
        self.runner.run(self.runner.server.crash_proxy, timeout=RESTART_TIMEOUT_S)
        self.backend = self.connect()

    def set_fault(self, kind: str, on: bool) -> None:
        """A lasting fault on or off, as PopTarget makes it on RocketMQ 5.3.3: broker_read_only (brokerPermission 4,
        else 6, over the wire: UPDATE_BROKER_CONFIG), namesrv_stop (the name server paused: its connections stay
        open and nothing is answered until it resumes, core.Server.pause_endpoint)."""
        if kind == "broker_read_only":
            self.backend.set_broker_config(brokerPermission=admin.PERM_READ if on else admin.PERM_READ_WRITE)
        elif kind == "namesrv_stop":
            self.runner.call(self.runner.server.pause_endpoint, "namesrv", on)
        else:
            raise ValueError(f"not a lasting fault: {kind!r}; lasting ones: broker_read_only, namesrv_stop")

    def get_findings(self) -> list[dict]:
        """What the server could not answer so far (unsupported requests, handler errors, bad frames)."""
        return self.runner.call(lambda: list(self.runner.server.findings))

    def close(self) -> None:
        self.backend.close()


@contextlib.contextmanager
def open_model_pop_target(proxy_conf: dict[str, str] | None = None):
    """`with open_model_pop_target(conf) as target:` a started model-backed 5.x server with the real session's
    proxy settings and `conf` over them, always stopped."""
    with run_server(get_model_pop_settings(proxy_conf)) as runner:
        target = ModelPopTarget(runner)
        try:
            yield target
        finally:
            target.close()
