"""The main job and the aggregate-only command; `python -m reports --help` for both.

The suite runs over the configuration that the RMQSPEC_* variables select (README, "Configuration of a run");
its report files go to RMQSPEC_REPORTS_DIR (default reports/runs/<run id>/), one per xdist worker.
"""

from __future__ import annotations

import argparse
import os
import subprocess
import sys

from reports import job
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
    return subprocess.run([sys.executable, *SUITE, *pytest_args], cwd=ROOT, env=env, check=False).returncode


def run_clients(run_id: str) -> int:
    """Runs the real clients' conformance runs in a child process with reports on, in the suite's run; returns its
    exit code (1: a run failed; 124: over CLIENTS_LIMIT_S, the child killed)."""
    env = {**os.environ, "RMQSPEC_REPORTS": "1", "RMQSPEC_RUN_ID": run_id}
    print(f"\nmain job: real clients against the model-backed broker, run {run_id}", flush=True)
    try:
        return subprocess.run([sys.executable, *CLIENTS], cwd=ROOT, env=env, timeout=CLIENTS_LIMIT_S).returncode
    except subprocess.TimeoutExpired:
        print(f"main job: the clients' runs took longer than {CLIENTS_LIMIT_S} s: stopped", file=sys.stderr)
        return 124


def main(argv: list[str]) -> int:
    parser = build_parser()
    own, pytest_args = split_pytest_args(argv)
    args = parser.parse_args(own or ["run"])
    if args.command == "aggregate":
        if pytest_args:
            parser.error("arguments after -- go to pytest: only `run` takes them")
        return job.run(args)
    try:
        run_context.check_environment()
        run_id = run_context.get_run_id()
    except run_context.SettingError as error:
        print(f"error: {error}", file=sys.stderr)
        return 2
    code = run_suite(pytest_args, run_id)
    if code in SUITE_DID_NOT_RUN:
        print(f"main job: the property suite did not run to its end (pytest exit code {code}); not aggregating")
        return code
    clients = run_clients(run_id)
    print("\nmain job: Spark aggregate of the reports", flush=True)
    aggregated = job.main([str(run_context.get_reports_dir())] + (["--tuned-jvm"] if args.tuned_jvm else []))
    # pytest 1 = some test failed: the summary above shows it; any code still fails the job.
    return code or clients or aggregated


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
