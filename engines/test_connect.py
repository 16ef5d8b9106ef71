"""The aggregate through a Spark Connect server (pyspark's own start-connect-server.sh, on loopback) gives the same
tables as local mode; the job's process then has no JVM, so any RDD or JVM-gateway use on that path fails here.
Run by `tox run -e spark-connect`."""

from __future__ import annotations

import subprocess
import sys

import pytest

from engines import launch
from engines.conftest import run_aggregate, run_engine
from reports.spec_rules import ROOT


@pytest.fixture(scope="module")
def server(request):
    yield from run_engine(request, launch.connect_server)


def test_the_aggregate_through_spark_connect_gives_the_same_tables_as_local_mode(server, aggregate_like_local):
    aggregate_like_local("--remote", server.url)


def test_an_incremental_run_through_the_same_server_replaces_only_what_changed(
    server, report_inputs, tmp_path, aggregate_like_local
):
    """Twice into one warehouse: the second ingests nothing and the tables stay the same."""
    run_aggregate(report_inputs, tmp_path, "--remote", server.url)
    aggregate_like_local("--remote", server.url)
    assert len(list((tmp_path / "warehouse" / "_ingested").iterdir())) == 3  # r1, r2 and the generated run


def test_remote_paths_that_the_job_cannot_reach_are_one_line(report_inputs, tmp_path, server):
    command = [sys.executable, "-m", "reports", "aggregate", str(report_inputs), "--remote", server.url]
    command += ["--warehouse", "hdfs://nn/warehouse", "--out", str(tmp_path)]
    done = subprocess.run(command, cwd=ROOT, capture_output=True, text=True, timeout=120)
    assert (done.returncode, done.stderr) == (
        2,
        "error: with --remote, INPUT, --warehouse and --tables must be local paths\n",
    )


def test_the_servers_driver_runs_the_throughput_collector(server):
    """The server's JVM was started with the parallel collector (SERVER_JAVA_OPTIONS): its daemon log opens with
    the java command line that spark-daemon.sh ran."""
    commands = [line for log in server.logs.glob("*.out") for line in log.read_text().splitlines()
                if line.startswith("Spark Command:")]
    assert commands and all("-XX:+UseParallelGC" in line.split() for line in commands), commands
