"""The aggregate on a real standalone cluster (a master and a worker from pyspark's own scripts, on loopback) gives
the same tables as local mode. Run by `tox run -e spark-cluster`."""

from __future__ import annotations

import pytest

from engines import launch
from engines.conftest import assert_same_outputs, run_aggregate


@pytest.fixture(scope="module")
def cluster(request):
    failed_before = request.session.testsfailed
    with launch.standalone() as engine:
        yield engine
        engine.keep_logs = request.session.testsfailed > failed_before


def test_the_aggregate_on_a_standalone_cluster_gives_the_same_tables_as_local_mode(
    spark, cluster, report_inputs, local_outputs, tmp_path
):
    found = run_aggregate(report_inputs, tmp_path, "--master", cluster.url)
    assert_same_outputs(spark, local_outputs, found)
    app_logs = list((cluster.directory / "work").glob("app-*/*/stderr"))
    assert app_logs, "the job ran no executor on the cluster's worker"
