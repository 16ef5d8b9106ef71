"""Speed of the 5.x backends: the time from `run` to every port answering (RocketMQ 5.3.3's broker start), and probe
request cases per second on the running 5.3.3 and, beside it, on the model-backed 5.x server (the same wire clients,
conformance/runner/backends/pop_backend.py).

Run: python benchmarks/bench_broker5.py [--starts N] [--cases N] [--model-only]   (prints figures; not a test; as
root unless --model-only). It re-executes itself in a loopback-only network namespace, as tox env
differential-broker-5 does. A case is one message's whole round trip in one fresh topic: remoting — send, POP (no
long polling), ACK, read back the committed offset; gRPC — send, ReceiveMessage, AckMessage through the proxy.
Revive waits are not cases: they are the broker's own intervals (differential/pop_probe.py), the same on any machine.
"""

from __future__ import annotations

import argparse
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from conformance.runner.backends.loopback import get_namespace_command, is_loopback_only  # noqa: E402
from conformance.runner.backends.pop_backend import (  # noqa: E402
    RealPopBackend,
    WirePopBackend,
    open_model_pop_backend,
)
from conformance.runner.backends.rocketmq5 import RocketMQ5Session  # noqa: E402
from differential.pop_probe import LONG_MS, fresh, send_all, set_up  # noqa: E402


def run_remoting_case(backend: WirePopBackend) -> None:
    names = fresh("bench")
    set_up(backend, names)
    send_all(backend, names, ["k0"])
    message = backend.pop(names.group, names.topic, LONG_MS).messages[0]
    assert backend.ack(names.group, names.topic, message.handle) == 0
    backend.committed_offset(names.group, names.topic, 0)


def run_grpc_case(backend: WirePopBackend) -> None:
    names = fresh("benchg")
    set_up(backend, names)
    send_all(backend, names, ["k0"])
    answer = backend.receive(names.group, names.topic, LONG_MS, poll_ms=5000)
    assert backend.grpc_ack(names.group, names.topic, answer.messages[0]) == 20000
    backend.consumers.pop((names.group, names.topic, "*")).close()


def time_cases(case, backend: WirePopBackend, count: int) -> float:
    case(backend)  # warm-up: class loading and JIT of the broker's POP path
    began = time.monotonic()
    for _ in range(count):
        case(backend)
    return count / (time.monotonic() - began)


def time_backend(backend, cases: int) -> tuple[float, float]:
    """(remoting cases/s, gRPC cases/s) on one backend."""
    return time_cases(run_remoting_case, backend, cases), time_cases(run_grpc_case, backend, cases)


def time_real(starts: int, cases: int) -> tuple[list[float], tuple[float, float]]:
    """RocketMQ 5.3.3 started `starts` times (each start timed), the cases timed on the last."""
    times, rates = [], (0.0, 0.0)
    with tempfile.TemporaryDirectory() as logs:
        for attempt in range(starts):
            session = RocketMQ5Session(Path(logs) / str(attempt))
            started = session.open()
            times.append(started.start_seconds)
            try:
                if attempt == starts - 1:
                    backend = RealPopBackend(started.broker_addr, started.proxy_grpc_addr)
                    rates = time_backend(backend, cases)
                    backend.close()
            finally:
                session.close(failed=False)
    return times, rates


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--starts", type=int, default=2)
    parser.add_argument("--cases", type=int, default=30)
    parser.add_argument("--model-only", action="store_true", help="time the model-backed server alone (no JVM)")
    args = parser.parse_args()
    if not args.model_only and not is_loopback_only():
        argv = get_namespace_command([sys.executable, __file__, *sys.argv[1:]])

        raise SystemExit(subprocess.run(argv, check=False).returncode)
    with open_model_pop_backend() as backend:
        model = time_backend(backend, args.cases)
    if not args.model_only:
        starts, real = time_real(args.starts, args.cases)
        print(f"broker start (run -> ready line), {len(starts)} starts: "
              + ", ".join(f"{s:.1f} s" for s in starts) + f"; median {statistics.median(starts):.1f} s")
        print(f"rocketmq-5.3.3 remoting cases (send, pop, ack, offset) per second: {real[0]:.1f} over {args.cases}")
        print(f"rocketmq-5.3.3 gRPC cases (send, receive, ack via the proxy) per second: {real[1]:.1f} over "
              f"{args.cases}")
    print(f"model remoting cases (send, pop, ack, offset) per second: {model[0]:.1f} over {args.cases}")
    print(f"model gRPC cases (send, receive, ack via the proxy) per second: {model[1]:.1f} over {args.cases}")


if __name__ == "__main__":
    main()
