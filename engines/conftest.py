"""The engines' tests: the same reports aggregated in local mode (in this process) and on the engine (the command
line in a child process), and the two outputs compared as data."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest
from pyspark.testing import assertDataFrameEqual

from benchmarks.bench_reports import write_run
from reports import job
from reports.session import get_spark
from reports.spec_rules import ROOT
from reports.tests.conftest import allow_dataframe_asserts_without_pandas_on_spark
from reports.tests.sample import write_sample

JOB_LIMIT = 600  # seconds for one aggregate on an engine (a cluster's executors start cold)


@pytest.fixture(scope="session")
def spark():
    allow_dataframe_asserts_without_pandas_on_spark()
    session = get_spark("local[2]", app_name="rmqspec-engines-tests")
    yield session
    session.stop()


@pytest.fixture(scope="session")
def report_inputs(tmp_path_factory) -> Path:
    """The hand-made runs (bad lines of every kind, an empty run) and one generated 5,000-line run."""
    root = tmp_path_factory.mktemp("engines")
    runs = write_sample(root)
    write_run(runs, "generated", 5_000, 7)
    return runs


@pytest.fixture(scope="session")
def local_outputs(spark, report_inputs, tmp_path_factory) -> Path:
    """The aggregate of the inputs in local mode: its directory (warehouse/, out/, out/tables/)."""
    root = tmp_path_factory.mktemp("local")
    assert job.main(get_arguments(report_inputs, root), spark=spark) == 0
    return root


def run_engine(request, start):
    """A module fixture's engine from `start()` (engines/launch.py), stopped after the module; its logs are kept
    when a test of the module failed."""
    failed_before = request.session.testsfailed
    with start() as engine:
        yield engine
        engine.keep_logs = request.session.testsfailed > failed_before


def get_arguments(inputs: Path, root: Path) -> list[str]:
    return [str(inputs), "--warehouse", str(root / "warehouse"), "--out", str(root / "out")]


def run_aggregate(inputs: Path, root: Path, *engine_arguments: str) -> Path:
    """`python -m reports aggregate` over the inputs on an engine; returns its directory (as local_outputs)."""
    command = [sys.executable, "-m", "reports", "aggregate", *get_arguments(inputs, root), *engine_arguments]
    environ = {**os.environ, "PYTHONPATH": str(ROOT), "SPARK_LOCAL_IP": "127.0.0.1"}
    done = subprocess.run(command, cwd=ROOT, env=environ, capture_output=True, text=True, timeout=JOB_LIMIT)
    assert done.returncode == 0, done.stderr[-3000:]
    return root


def assert_same_outputs(spark, expected: Path, found: Path) -> None:
    """The warehouse's records and every output table (Parquet, read back) hold the same rows, and the rule x
    configuration grid is the same."""
    names = sorted(path.name for path in (expected / "out" / "tables").iterdir())
    assert names == sorted(path.name for path in (found / "out" / "tables").iterdir())
    assert {"coverage", "failures", "machine_cost", "rule_cost", "trend", "runs_covered"} <= set(names)
    tables = [Path("warehouse", "records"), *(Path("out", "tables", name) for name in names)]
    for table in tables:
        assertDataFrameEqual(spark.read.parquet(str(found / table)), spark.read.parquet(str(expected / table)))
    assert (found / "out" / job.GRID_FILE).read_text() == (expected / "out" / job.GRID_FILE).read_text()


@pytest.fixture
def aggregate_like_local(spark, report_inputs, local_outputs, tmp_path):
    """Runs the aggregate over the inputs with the engine's arguments into `tmp_path` and checks it against local
    mode; returns its directory."""

    def check(*engine_arguments: str) -> Path:
        found = run_aggregate(report_inputs, tmp_path, *engine_arguments)
        assert_same_outputs(spark, local_outputs, found)
        return found

    return check
