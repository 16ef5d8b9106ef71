"""Replay one workload with one real client, judged: the command a full run's shrunk failure prints.

    python -m conformance.suite.replay --client cpp 'Workload((MessageSpec("m0", "TagA"),)), -1'
    python -m conformance.runner.backends.loopback \\
        python -m conformance.suite.replay --client cpp --backend rocketmq-4.9.8 '<source>'

The source is a case in COUNTEREXAMPLES' format (conformance/checker/deviations.py): the workload and the client's
maxReconsumeTimes. It runs once on a fresh model-backed server (or RocketMQ 4.9.8's own broker, started for the
replay and stopped after it; only in a loopback-only network namespace), and every deviation prints with the
declared causes that explain it (UNDECLARED where none does), then each problem. Exit 0: no problem; 1: a problem
(an undeclared deviation, a declared one that did not happen, a harness fault); 2: the client cannot run here.
"""

from __future__ import annotations

import argparse
import contextlib
import sys
import tempfile
from collections.abc import Iterator
from pathlib import Path

from conformance.harness import find_problems
from conformance.runner.backends import BACKENDS
from conformance.runner.backends.model import open_model_backend
from conformance.runner.run import OpenBackend
from conformance.suite.full_run import CLIENTS, parse_counterexample, run_case

MAX_DETAIL_CHARS = 200


@contextlib.contextmanager
def open_backend(name: str, log_dir: Path) -> Iterator[OpenBackend]:
    """How to open the backend `name` for one run: the model-backed server, or a real broker started here and
    always stopped (its logs kept in `log_dir` if it failed to start)."""
    if name == "model":
        yield open_model_backend
        return
    from conformance.runner.backends.real_run import open_real_backend
    from conformance.runner.backends.rocketmq import RocketMQSession
    from conformance.runner.backends.settings_table import get_real_broker_conf

    session = RocketMQSession(get_real_broker_conf(), log_dir / "rocketmq-logs")
    broker = session.open()
    try:
        yield lambda settings, workload: open_real_backend(broker, settings, workload)
    finally:
        session.close(False)


def format_verdicts(verdicts: list, problems: list[str]) -> list[str]:
    """One line per deviating or indefinite rule (a deviation with its causes), a count of the conforming ones,
    then one line per problem."""
    lines = []
    for verdict in verdicts:
        if verdict.status == "deviates":
            lines.append(f"{verdict.rule} deviates ({verdict.cause or 'UNDECLARED'}) for "
                         f"{', '.join(k or 'the run' for k in verdict.keys)}: {verdict.detail[:MAX_DETAIL_CHARS]}")
        elif verdict.status == "indefinite":
            lines.append(f"{verdict.rule} indefinite: {verdict.detail[:MAX_DETAIL_CHARS]}")
    conforming = sum(verdict.status == "conforms" for verdict in verdicts)
    lines.append(f"{conforming} rules conform")
    return lines + [f"problem: {problem}" for problem in problems]


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m conformance.suite.replay", description=__doc__.split("\n")[0])
    parser.add_argument("--client", required=True, choices=sorted(CLIENTS))
    parser.add_argument("--backend", choices=BACKENDS, default="model")
    parser.add_argument("source", help='a case: \'Workload((MessageSpec("m0", "TagA"),)), -1\'')
    args = parser.parse_args(argv)
    workload, client_max = parse_counterexample(args.source)
    open_client, get_unavailable_reason = CLIENTS[args.client]
    reason = get_unavailable_reason()
    if reason is not None:
        print(f"{args.client} cannot run here: {reason}")
        return 2
    with tempfile.TemporaryDirectory(prefix="replay-") as tmp, open_backend(args.backend, Path(tmp)) as opener:
        run = run_case(open_client, workload, client_max, tmp, "replay", opener, args.backend != "model")
    verdicts, problems = find_problems(run, args.source)
    print(f"{args.client} on {args.backend}: {args.source}")
    for line in format_verdicts(verdicts, problems):
        print(line)
    return 1 if problems else 0


if __name__ == "__main__":
    sys.exit(main())
