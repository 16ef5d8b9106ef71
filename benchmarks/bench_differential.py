"""Speed of the real-broker differential: the broker's start time, differential request cases per second, and the
wall time of the tox env `differential-broker`.

Run: python benchmarks/bench_differential.py [--cases N] [--starts N] [--tox]   (prints figures; not a test; as
root). It re-executes itself in a loopback-only network namespace, as the env does. A case is one drawn request
sequence sent to the broker, with its delayed messages waited for (1 s levels) and everything read back;
"requests" counts the wire requests that took; a model-oracle case is one stored message and one send-back, on
the broker and then on the model. --tox also times the whole env (its own namespace) from outside.
"""

from __future__ import annotations

import argparse
import os
import statistics
import subprocess
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from hypothesis import strategies as st  # noqa: E402

from conformance.runner.backends.loopback import get_namespace_command, is_loopback_only  # noqa: E402
from conformance.runner.backends.remoting_client import RemotingClient  # noqa: E402
from conformance.runner.backends.rocketmq import RocketMQSession  # noqa: E402
from conformance.runner.backends.settings_table import get_real_broker_conf  # noqa: E402


class CountingClient:
    """Counts RemotingClient.call invocations (the wire requests a case sends)."""

    calls = 0

    @classmethod
    def install(cls) -> None:
        original = RemotingClient.call

        def call(self, *args, **kwargs):
            cls.calls += 1
            return original(self, *args, **kwargs)

        RemotingClient.call = call


def measure_starts(starts: int, tmp: Path) -> list[float]:
    seconds = []
    for i in range(starts):
        session = RocketMQSession(get_real_broker_conf(), tmp / f"logs-{i}", namesrv_port=9878, broker_port=10941)
        seconds.append(session.open().start_seconds)
        session.close(failed=False)
    return seconds


def measure_cases(cases: int, tmp: Path, seed: int) -> tuple:
    from differential.compare import Target, run_sequence

    session = RocketMQSession(get_real_broker_conf(), tmp / "logs-cases")
    broker = session.open()
    try:
        target = Target("rocketmq-4.9.8", broker.broker_addr, "broker-a")
        drawn = draw(cases, seed)
        CountingClient.install()
        began = time.perf_counter()
        for sequence in drawn:
            run_sequence([target], sequence)
        wall = time.perf_counter() - began
        requests = CountingClient.calls
        oracle_rate, oracle_wall = measure_oracle_cases(broker.broker_addr, cases, seed)
        both_rate, both_wall = measure_both_backends(target, drawn)
    finally:
        session.close(failed=False)
    steps = sum(len(s) for s in drawn)
    return cases / wall, requests / wall, steps, wall, oracle_rate, oracle_wall, both_rate, both_wall


def measure_both_backends(real, drawn: list) -> tuple[float, float]:
    """The same sequences sent to the real broker and to the model-backed server and compared (as
    differential/test_backends_agree.py does): cases/s, wall seconds."""
    from conformance.runner.backends.settings_table import get_model_broker_settings
    from conformance.runner.server.runner import run_server
    from differential.compare import Target, describe_differences, run_sequence

    with run_server(get_model_broker_settings()) as runner:
        model = Target("model", runner.server.broker_addr, runner.server.settings.broker_name)
        began = time.perf_counter()
        for sequence in drawn:
            describe_differences(*run_sequence([real, model], sequence).items())
        wall = time.perf_counter() - began
    return len(drawn) / wall, wall


def measure_oracle_cases(broker_addr: str, cases: int, seed: int) -> tuple[float, float]:
    """Send-back cases of the model oracle (the real broker answers, then the model): cases/s, wall seconds."""
    from differential import model_oracle as oracle
    from differential.test_model_oracle import CONFIG, send_back_cases

    drawn = draw(cases, seed, send_back_cases)
    began = time.perf_counter()
    for case in drawn:
        oracle.run_send_back_case(broker_addr, CONFIG, case)
    wall = time.perf_counter() - began
    return cases / wall, wall


def draw(cases: int, seed: int, strategy=None) -> list:
    from hypothesis import given, settings
    from hypothesis import seed as fix_seed

    from differential.steps import sequences

    strategy = sequences if strategy is None else strategy
    drawn: list = []

    @fix_seed(seed)
    @settings(max_examples=cases, database=None, deadline=None)
    @given(st.data())
    def collect(data):
        drawn.append(data.draw(strategy))

    collect()
    return drawn[:cases]


def time_tox_env() -> float:
    began = time.perf_counter()
    subprocess.run([str(ROOT / ".venv" / "bin" / "tox"), "run", "-e", "differential-broker"], cwd=ROOT, check=True,
                   timeout=1800)
    return time.perf_counter() - began


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--cases", type=int, default=30)
    parser.add_argument("--starts", type=int, default=3)
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--tox", action="store_true")
    args = parser.parse_args()
    if args.tox and not os.environ.get("RMQSPEC_BENCH_INSIDE"):
        print(f"tox env differential-broker wall time: {time_tox_env():.1f} s")
    if not is_loopback_only():
        argv = get_namespace_command([sys.executable, __file__, *(a for a in sys.argv[1:] if a != "--tox")])
        os.execvpe(argv[0], argv, {**os.environ, "RMQSPEC_BENCH_INSIDE": "1"})
    import tempfile

    tmp = Path(tempfile.mkdtemp(prefix="rmqspec-bench-"))
    starts = measure_starts(args.starts, tmp)
    print(f"broker start (name server + broker answering): median {statistics.median(starts):.2f} s, "
          f"best {min(starts):.2f} s over {len(starts)} starts: {', '.join(f'{s:.2f}' for s in starts)}")
    per_case, per_request, steps, wall, oracle_rate, oracle_wall, both_rate, both_wall = measure_cases(
        args.cases, tmp, args.seed)
    print(f"differential sequences on the real broker: {args.cases} cases ({steps} steps) in {wall:.1f} s: "
          f"{per_case:.2f} cases/s, {per_request:.0f} wire requests/s (seed {args.seed})")
    print(f"model-oracle send-back cases (real broker, then the model): {args.cases} cases in {oracle_wall:.1f} s: "
          f"{oracle_rate:.2f} cases/s")
    print(f"the same sequences on both backends (real broker and model-backed server, compared): {args.cases} cases "
          f"in {both_wall:.1f} s: {both_rate:.2f} cases/s")


if __name__ == "__main__":
    main()
