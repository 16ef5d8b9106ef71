"""The aggregate on a real standalone cluster (a master and a worker from pyspark's own scripts, on loopback) gives
the same tables as local mode. Run by `tox run -e spark-cluster`."""

from __future__ import annotations

import pytest

from engines import launch
from engines.conftest import run_engine


@pytest.fixture(scope="module")
def cluster(request):
    yield from run_engine(request, launch.standalone)


def test_the_aggregate_on_a_standalone_cluster_gives_the_same_tables_as_local_mode(cluster, aggregate_like_local):
    aggregate_like_local("--master", cluster.url)
    app_logs = list((cluster.directory / "work").glob("app-*/*/stderr"))  # an executor's log on the worker
    assert app_logs, "the job ran no executor on the cluster's worker"
