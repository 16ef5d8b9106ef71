"""The rule x client matrix: the conformance verdicts of real clients (records that conformance/report.py writes
beside the suite's, `conformance-<writer>.jsonl`) with the model itself as one column.

At ingest each run's verdict records become a partial table (compute_client_verdicts: per client and rule, the
strongest status and the shortest counterexample of a deviation); the aggregate combines the partials of every run
(combine_client_matrix) and adds the model's column from the rule coverage (a rule its properties exercised, or a
gap). reports/render_clients.py draws it for the Markdown summary, the HTML page and a PNG heat map.
"""

from __future__ import annotations

from pyspark.sql import DataFrame
from pyspark.sql import functions as F

from reports.results import EXERCISED, GAP

VERDICT, CLIENT = "conformance_verdict", "conformance_client"
# Weakest first: over runs a rule's status for a client is the strongest seen (one deviating run makes it deviate).
STATUSES = ("unavailable", "not judged", "not applicable", "conforms", "deviates")
MODEL = "model"  # the client name of the model's column


def rank(column):
    return F.array_position(F.array(*(F.lit(s) for s in STATUSES)), column)


def strongest(status: str = "status"):
    """The (rank, status, detail) struct of the strongest status in a group."""
    return F.max(F.struct(rank(F.col(status)).alias("rank"), F.col(status).alias("status"), F.col("detail")))


def shortest_counterexample():
    """The (detail, counterexample) struct of the deviation with the shortest counterexample, so that the two
    shown together come from one verdict."""
    deviating = F.col("counterexample").isNotNull() & (F.col("counterexample") != "")
    example = F.struct(F.col("detail"), F.col("counterexample"))
    return F.min_by(F.when(deviating, example), F.when(deviating, F.length("counterexample")))


def get_detail():
    """A deviating cell shows the detail of its counterexample's verdict; any other the strongest verdict's."""
    return F.coalesce(F.col("example.detail"), F.col("top.detail")).alias("detail")


def compute_client_verdicts(records: DataFrame) -> DataFrame:
    """[partial] Per run, client and rule: the strongest verdict, how many, the shortest counterexample."""
    verdicts = records.where(F.col("reason").isNull() & F.col("type").isin(VERDICT, CLIENT))
    keys = ["run_id", "client_name", "client_version", F.col("rule").alias("rule_id")]
    grouped = verdicts.groupBy(*keys).agg(
        strongest().alias("top"), F.count(F.lit(1)).alias("verdicts"), shortest_counterexample().alias("example")
    )
    return grouped.select(
        "client_name",
        "client_version",
        "rule_id",
        "top.status",
        "verdicts",
        get_detail(),
        "example.counterexample",
        "run_id",
    )


def combine_client_matrix(client_verdicts: DataFrame, coverage: DataFrame) -> DataFrame:
    """Client x rule over every run, plus the model's column for the rules some client was judged on: exercised
    (its properties' test cases, summed over configurations) or a gap."""
    keys = ["client_name", "client_version", "rule_id"]
    grouped = client_verdicts.groupBy(*keys).agg(
        strongest().alias("top"),
        F.sum("verdicts").alias("verdicts"),
        F.countDistinct("run_id").alias("runs"),
        shortest_counterexample().alias("example"),
    )
    clients = grouped.select(*keys, "top.status", get_detail(), "verdicts", "runs", "example.counterexample")
    rules = clients.where(F.col("rule_id").isNotNull()).select("rule_id").distinct()
    cases = coverage.groupBy("rule_id").agg(F.sum("test_cases").alias("verdicts"), F.max("runs").alias("runs"))
    model = (
        rules.join(cases, "rule_id", "left")
        .fillna(0, subset=["verdicts", "runs"])
        .select(
            F.lit(MODEL).alias("client_name"),
            F.lit("").alias("client_version"),
            "rule_id",
            F.when(F.col("verdicts") > 0, F.lit(EXERCISED)).otherwise(F.lit(GAP)).alias("status"),
            F.lit(None).cast("string").alias("detail"),
            F.col("verdicts").cast("long").alias("verdicts"),
            F.col("runs").cast("long").alias("runs"),
            F.lit(None).cast("string").alias("counterexample"),
        )
    )
    return clients.unionByName(model)
