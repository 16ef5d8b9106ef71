"""The main job and the aggregate-only command.

    python -m reports [PYTEST ARGS]   # property suite with reports on, then the Spark aggregate and its summary
    python -m reports aggregate ...   # only aggregate existing reports (e.g. collected from many CI runs);
                                      # see `python -m reports aggregate --help`

The suite runs over the configuration that the RMQSPEC_* variables select (README, "Configuration of a run");
its report files go to RMQSPEC_REPORTS_DIR (default reports/runs/<run id>/), one per xdist worker.
"""

from __future__ import annotations

import os
import subprocess
import sys

from reports import run_context
from reports.spec_rules import ROOT

SUITE = ["-m", "pytest", "-n", "auto", "--dist", "loadfile", "properties"]


def run_suite(pytest_args: list[str]) -> tuple[int, str]:
    """Runs the property suite in a child process (pytest's own progress is shown); returns (exit code, run id)."""
    run_id = run_context.get_run_id()
    env = {**os.environ, "RMQSPEC_REPORTS": "1", "RMQSPEC_RUN_ID": run_id}
    print(f"main job: property suite, run {run_id}, reports in {run_context.get_reports_dir(env) / run_id}", flush=True)
    done = subprocess.run([sys.executable, *SUITE, *pytest_args], cwd=ROOT, env=env, check=False)
    return done.returncode, run_id


def main(argv: list[str]) -> int:
    from reports import job

    if argv[:1] == ["aggregate"]:
        return job.main(argv[1:])
    code, _ = run_suite(argv)
    print("\nmain job: Spark aggregate of the reports", flush=True)
    inputs = [str(run_context.get_reports_dir())]
    aggregated = job.main(inputs)
    # pytest 1 = some test failed: the summary above shows it; any code still fails the job.
    return code or aggregated


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
