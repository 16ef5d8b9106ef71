"""The model-backed 5.x server as the 5.x client suites use a deployment (pop_suite.PopTarget is the real 5.3.3):
`backend` (a ModelPopBackend: topics, groups, sends, reads over the wire), `namesrv`, `endpoints` (the server's
gRPC proxy) and `restart()` for a proxy_restart fault — the broker and its local proxy stopped gracefully and
started again on their ports (core.Server.restart_proxy), as RocketMQ5.restart stops and starts 5.3.3."""

from __future__ import annotations

import contextlib

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
        raise NotImplementedError("proxy_kill: the model-backed server has no crash of its POP state on the wire "
                                  "(pop_suite.MODEL_MISSING_FAULTS)")

    def set_fault(self, kind: str, on: bool) -> None:
        raise NotImplementedError(f"{kind}: the model-backed server cannot make this fault "
                                  "(pop_suite.MODEL_MISSING_FAULTS)")

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
