"""Speed of the RocketMQ 5.3.3 backend: the time from `run` to every port answering (broker start), and probe
request cases per second on the running backend.

Run: python benchmarks/bench_broker5.py [--starts N] [--cases N]   (prints figures; not a test; as root). It
re-executes itself in a loopback-only network namespace, as tox env differential-broker-5 does. A case is one
message's whole round trip in one fresh topic: remoting — send, POP (no long polling), ACK, read back the committed
offset; gRPC — send, ReceiveMessage, AckMessage through the proxy. Revive waits are not cases: they are the broker's
own intervals (differential/pop_probe.py), the same on any machine.
"""

from __future__ import annotations

import argparse
import statistics
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from conformance.runner.backends.loopback import get_namespace_command, is_loopback_only  # noqa: E402
from conformance.runner.backends.pop_backend import RealPopBackend  # noqa: E402
from conformance.runner.backends.rocketmq5 import RocketMQ5Session  # noqa: E402
from differential.pop_probe import LONG_MS, fresh, send_all, set_up  # noqa: E402


def run_remoting_case(backend: RealPopBackend) -> None:
    names = fresh("bench")
    set_up(backend, names)
    send_all(backend, names, ["k0"])
    message = backend.pop(names.group, names.topic, LONG_MS).messages[0]
    assert backend.ack(names.group, names.topic, message.handle) == 0
    backend.committed_offset(names.group, names.topic, 0)


def run_grpc_case(backend: RealPopBackend) -> None:
    names = fresh("benchg")
    set_up(backend, names)
    send_all(backend, names, ["k0"])
    answer = backend.receive(names.group, names.topic, LONG_MS, poll_ms=5000)
    assert backend.grpc_ack(names.group, names.topic, answer.messages[0]) == 20000
    backend.consumers.pop((names.group, names.topic, "*")).close()


def time_cases(case, backend: RealPopBackend, count: int) -> float:
    case(backend)  # warm-up: class loading and JIT of the broker's POP path
    began = time.monotonic()
    for _ in range(count):
        case(backend)
    return count / (time.monotonic() - began)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--starts", type=int, default=2)
    parser.add_argument("--cases", type=int, default=30)
    args = parser.parse_args()
    if not is_loopback_only():
        argv = get_namespace_command([sys.executable, __file__, *sys.argv[1:]])
        import subprocess

        raise SystemExit(subprocess.run(argv, check=False).returncode)
    starts = []
    with tempfile.TemporaryDirectory() as logs:
        for attempt in range(args.starts):
            session = RocketMQ5Session(Path(logs) / str(attempt))
            started = session.open()
            starts.append(started.start_seconds)
            try:
                if attempt == args.starts - 1:
                    backend = RealPopBackend(started.broker_addr, started.proxy_grpc_addr)
                    remoting = time_cases(run_remoting_case, backend, args.cases)
                    grpc = time_cases(run_grpc_case, backend, args.cases)
                    backend.close()
            finally:
                session.close(failed=False)
    print(f"broker start (run -> ready line), {len(starts)} starts: "
          + ", ".join(f"{s:.1f} s" for s in starts) + f"; median {statistics.median(starts):.1f} s")
    print(f"remoting cases (send, pop, ack, offset) per second: {remoting:.1f} over {args.cases}")
    print(f"gRPC cases (send, receive, ack via the proxy) per second: {grpc:.1f} over {args.cases}")


if __name__ == "__main__":
    main()
