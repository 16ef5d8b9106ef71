"""Combine: the per-run partial tables of every run (reports/transform.py computes them at ingest) into the tables
the summary shows. DataFrame -> DataFrame, no I/O; every input is small (a few hundred rows per run).

Each partial is grouped by run_id among its keys, so a sum over runs is the sum over all cases, and the number of
runs that hit a rule in a configuration is the number of partial rows of that rule and configuration."""

from __future__ import annotations

from pyspark.sql import DataFrame
from pyspark.sql import functions as F
from pyspark.sql import types as T

from reportformat.lines import CONFIGURATION_FIELDS
from reports.clients import combine_client_matrix
from reports.transform import UNKNOWN, sum_by

OUTPUT_COLUMNS = {
    "failures": ("run_id", "started_at", "configuration", "hypothesis_profile", "seed", "nodeid", "status_reason")
    + ("message", "expected_violation", "representation", "reproduction_decorator", "steps", "rule_ids"),
    "trend": ("run_id", "started_at", "git_commit", "configurations", "writers", "writers_finished", "test_cases")
    + ("seconds", "rules_exercised", "failures", "expected_failures", "interrupted"),
}


def with_configuration(rows: DataFrame, runs: DataFrame) -> DataFrame:
    """Adds ``configuration`` (version/model/mode/preset), ``seed``, ``hypothesis_profile`` and ``started_at`` from
    the run metadata of each row's writer (the partials are keyed by writer; a few hundred rows per run meet a few
    rows per run)."""
    label = F.concat_ws("/", *(F.col(name) for name in CONFIGURATION_FIELDS))
    configuration = F.coalesce(label, F.lit(UNKNOWN)).alias("configuration")
    meta = runs.select("run_id", "writer", configuration, "seed", "hypothesis_profile", "started_at")
    joined = rows.join(F.broadcast(meta), ["run_id", "writer"], "left")
    return joined.withColumn("configuration", F.coalesce("configuration", F.lit(UNKNOWN)))


def select_rules(hits: DataFrame) -> DataFrame:
    """The rule hits proper (without the rows of cases that marked no rule)."""
    return hits.where(F.col("rule_id").isNotNull())


def compute_coverage(hits: DataFrame, failures: DataFrame, rules: DataFrame) -> DataFrame:
    """Rule x configuration: test cases, steps, runs that hit it, failing tests (unexpected and expected).

    Every spec rule appears for every configuration seen, with zeros where nothing exercised it (a gap); rule ids
    that are not in spec/ appear with a null chapter."""
    counted = (
        select_rules(hits)
        .groupBy("rule_id", "configuration")
        .agg(F.sum("test_cases").alias("test_cases"), F.sum("steps").alias("steps"), F.count(F.lit(1)).alias("runs"))
    )
    failed = (
        failures.select(F.explode("rule_ids").alias("rule_id"), "configuration", "expected_violation")
        .groupBy("rule_id", "configuration")
        .agg(
            F.count(F.when(F.col("expected_violation").isNull(), 1)).alias("failures"),
            F.count("expected_violation").alias("expected_failures"),
        )
    )
    # Rule ids that tests marked but spec/ does not define (a typo, a stale spec) join the grid with no chapter.
    unknown = counted.select("rule_id").distinct().join(rules, "rule_id", "left_anti")
    every_rule = rules.select("rule_id", "chapter").union(unknown.select("rule_id", F.lit(None).cast(T.StringType())))
    grid = every_rule.crossJoin(hits.select("configuration").distinct())
    counts = ["test_cases", "steps", "runs", "failures", "expected_failures"]
    joined = grid.join(counted, ["rule_id", "configuration"], "left").join(failed, ["rule_id", "configuration"], "left")
    return joined.fillna(0, subset=counts).select("rule_id", "chapter", "configuration", *counts)


def compute_rule_cost(hits: DataFrame) -> DataFrame:
    """Per rule id: the cases that exercised it, their time, and that time shared evenly among each case's rules."""
    return sum_by(select_rules(hits), ["rule_id"], ["test_cases", "seconds", "attributed_seconds"])


def compute_trend(hits: DataFrame, failures: DataFrame, runs: DataFrame, last: int) -> DataFrame:
    """The last `last` runs by start time: test cases, rules exercised, failing tests, time, configurations."""
    totals = sum_by(hits.where(F.col("rule_id").isNull()), ["run_id"], ["test_cases", "seconds"])
    rules = select_rules(hits).groupBy("run_id").agg(F.countDistinct("rule_id").alias("rules_exercised"))
    failing = failures.groupBy("run_id").agg(
        F.count(F.when(F.col("expected_violation").isNull(), 1)).alias("failures"),
        F.count("expected_violation").alias("expected_failures"),
    )
    meta = runs.groupBy("run_id").agg(
        F.min("started_at").alias("started_at"),
        F.first("git_commit", ignorenulls=True).alias("git_commit"),
        F.countDistinct(*CONFIGURATION_FIELDS).alias("configurations"),
        F.count(F.lit(1)).alias("writers"),
        F.count("finished_at").alias("writers_finished"),
        F.coalesce(F.max("interrupted"), F.lit(False)).alias("interrupted"),
    )
    joined = meta.join(totals, "run_id", "left").join(rules, "run_id", "left").join(failing, "run_id", "left")
    counts = ["test_cases", "rules_exercised", "failures", "expected_failures"]
    filled = joined.fillna(0, subset=counts).fillna(0.0, subset=["seconds"])
    return filled.select(*OUTPUT_COLUMNS["trend"]).orderBy(F.col("started_at").desc()).limit(last)


def combine(partials: dict[str, DataFrame], rules: DataFrame, last: int) -> dict[str, DataFrame]:
    """The output tables from the partial tables of every run; the trend shows the `last` runs by start time."""
    runs = partials["runs"]
    sums = ["test_cases", "steps", "seconds", "attributed_seconds"]
    hits = sum_by(with_configuration(partials["rule_hits"], runs), ["run_id", "configuration", "rule_id"], sums)
    failures = with_configuration(partials["failures"], runs)
    coverage = compute_coverage(hits, failures, rules)
    return {
        "coverage": coverage,
        "client_matrix": combine_client_matrix(partials["client_verdicts"], coverage),
        "failures": order_failures(failures),
        "runs_covered": count_runs(runs),
        "machine_cost": sum_by(partials["machine_cost"], ["machine", "timing_key"], ["seconds", "test_cases"]),
        "rule_cost": compute_rule_cost(hits),
        "trend": compute_trend(hits, failures, runs, last),
    }


def order_failures(failures: DataFrame) -> DataFrame:
    """Newest run first (the summary lists the first ones), then by the failures' keys, without the writer."""
    ordered = failures.orderBy(F.col("started_at").desc_nulls_last(), F.col("run_id").desc(), "writer", "nodeid")
    return ordered.select(*OUTPUT_COLUMNS["failures"])


def count_runs(runs: DataFrame) -> DataFrame:
    """One row: how many runs the warehouse holds, and the first and last start."""
    return runs.agg(
        F.countDistinct("run_id").alias("runs"),
        F.min("started_at").alias("first_started_at"),
        F.max("started_at").alias("last_started_at"),
        F.sort_array(F.collect_set(F.when(F.col("interrupted"), F.col("run_id")))).alias("interrupted_runs"),
    )
