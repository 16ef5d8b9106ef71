"""The main job and the aggregate-only command; `python -m reports --help` for both.

The suite runs over the configuration that the RMQSPEC_* variables select (README, "Configuration of a run");
its report files go to RMQSPEC_REPORTS_DIR (default reports/runs/<run id>/), one per xdist worker.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import time
from pathlib import Path

from reportformat.lines import RUN_INTERRUPTED, make_run_line
from reports import job
from reports.children import Interrupted, run_child
from reports.cli import EXIT_CODES, OneLineParser
from reports.spec_rules import ROOT
from runenv import run_context

SUITE = ["-m", "pytest", "-n", "auto", "--dist", "loadfile", "properties"]
# The real clients' conformance runs (conformance/smoke.py): their verdicts join the run for the rule x client matrix.
CLIENTS = ["-m", "conformance.smoke"]
CLIENTS_LIMIT_S = 300
# pytest's exit codes when the suite did not run to its end: interrupted, internal error, usage error (a bad
# RMQSPEC_* value or pytest argument), no tests collected. The job then stops before aggregating.
SUITE_DID_NOT_RUN = (2, 3, 4, 5)
# Written into the run's directory when the job is interrupted (a report file: the aggregate reads it).
INTERRUPTED_FILE = "interrupted-main.jsonl"


def build_parser() -> argparse.ArgumentParser:
    formatter = argparse.RawDescriptionHelpFormatter
    parser = OneLineParser(prog="python -m reports", description=__doc__, epilog=EXIT_CODES, formatter_class=formatter)
    commands = parser.add_subparsers(dest="command", metavar="{run,aggregate}", parser_class=OneLineParser)
    run = commands.add_parser(
        "run",
        help="(the default) the property suite with reports on, then the Spark aggregate and its summary",
        description="The property suite (pytest -n auto) with reports on, then `aggregate` over RMQSPEC_REPORTS_DIR. "
        "Arguments after `--` go to pytest, e.g. `python -m reports run -- -k orderly`.",
        epilog=EXIT_CODES,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    job.add_tuning_argument(run)
    aggregate = commands.add_parser(
        "aggregate",
        help="only aggregate existing reports (e.g. collected from many CI runs)",
        epilog=EXIT_CODES,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    job.add_arguments(aggregate)
    return parser


def split_pytest_args(argv: list[str]) -> tuple[list[str], list[str]]:
    """(the job's own arguments, pytest's: those after the first `--`)."""
    if "--" not in argv:
        return argv, []
    at = argv.index("--")
    return argv[:at], argv[at + 1 :]


def run_suite(pytest_args: list[str], run_id: str) -> int:
    """Runs the property suite in a child process (pytest's own progress is shown); returns its exit code."""
    env = {**os.environ, "RMQSPEC_REPORTS": "1", "RMQSPEC_RUN_ID": run_id}
    print(f"main job: property suite, run {run_id}, reports in {run_context.get_reports_dir(env) / run_id}", flush=True)
    return run_child([sys.executable, *SUITE, *pytest_args], cwd=ROOT, env=env)


def run_clients(run_id: str) -> int:
    """Runs the real clients' conformance runs in a child process with reports on, in the suite's run; returns its
    exit code (1: a run failed; 124: over CLIENTS_LIMIT_S, the child killed)."""
    env = {**os.environ, "RMQSPEC_REPORTS": "1", "RMQSPEC_RUN_ID": run_id}
    print(f"\nmain job: real clients against the model-backed broker, run {run_id}", flush=True)
    code = run_child([sys.executable, *CLIENTS], timeout=CLIENTS_LIMIT_S, cwd=ROOT, env=env)
    if code == 124:
        print(f"main job: the clients' runs took longer than {CLIENTS_LIMIT_S} s: stopped", file=sys.stderr)
    return code


def mark_interrupted(run_id: str, step: str) -> Path:
    """The run's report file that says it was interrupted (in `step`): the aggregate marks the run so."""
    path = run_context.get_reports_dir() / run_id / INTERRUPTED_FILE
    path.parent.mkdir(parents=True, exist_ok=True)
    now = time.time()
    run = {"run_id": run_id, "writer": path.stem, "started_at": None, "finished_at": now, "interrupted": True}
    line = make_run_line(RUN_INTERRUPTED, run, now) | {"step": step}
    with path.open("a", encoding="utf-8") as out:
        out.write(json.dumps(line) + "\n")
    return path


def run_steps(args, pytest_args: list[str], run_id: str) -> int:
    """The suite, the clients' runs, the aggregate; Interrupted (naming the step) on Ctrl-C."""
    step = "the property suite"
    try:
        code = run_suite(pytest_args, run_id)
        if code in SUITE_DID_NOT_RUN:
            print(f"main job: the property suite did not run to its end (pytest exit code {code}); not aggregating")
            return code
        step = "the clients' runs"
        clients = run_clients(run_id)
    except (Interrupted, KeyboardInterrupt):
        mark_interrupted(run_id, step)
        raise Interrupted(step) from None
    print("\nmain job: Spark aggregate of the reports", flush=True)
    aggregated = job.main([str(run_context.get_reports_dir())] + (["--tuned-jvm"] if args.tuned_jvm else []))
    # pytest 1 = some test failed: the summary above shows it; any code still fails the job.
    return code or clients or aggregated


def main(argv: list[str]) -> int:
    parser = build_parser()
    own, pytest_args = split_pytest_args(argv)
    args = parser.parse_args(own or ["run"])
    if args.command == "aggregate":
        if pytest_args:
            parser.error("arguments after -- go to pytest: only `run` takes them")
        try:
            return job.run(args)
        except KeyboardInterrupt:
            print("\naggregate: interrupted (Ctrl-C); runs whose ingest did not finish are ingested again next time",
                  file=sys.stderr)
            return 130
    try:
        run_context.check_environment()
        run_id = run_context.get_run_id()
    except run_context.SettingError as error:
        print(f"error: {error}", file=sys.stderr)
        return 2
    try:
        return run_steps(args, pytest_args, run_id)
    except Interrupted as stopped:
        where = f"in {stopped.args[0]}; run {run_id} is marked interrupted" if stopped.args else "in the aggregate"
        print(f"\nmain job: interrupted (Ctrl-C) {where}; every child process stopped", file=sys.stderr)
        return 130
    except KeyboardInterrupt:
        print("\nmain job: interrupted (Ctrl-C) in the aggregate; nothing of it was kept", file=sys.stderr)
        return 130


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
