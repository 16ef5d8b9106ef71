"""Benchmark of the Spark aggregate (not a test): prints seconds, rows/s and the ratio to an equivalent DuckDB job.

    python benchmarks/bench_reports.py [--sizes 100000 1000000 5000000] [--work DIR] [--driver-memory 4g]

Generates realistic report lines (the writer's own format and size: run lines, @given and stateful cases with rule
features and timings, a few shrunk failures) in runs of 2 writers x 25k lines over the 11 tox configurations,
then per size: full ingest + aggregate with Spark (JVM start timed separately), and the same pipeline in DuckDB
(read JSON -> Parquet partitioned by run -> the same aggregates -> Parquet), in one process, side by side. Last,
one new run of ~50k lines ingested incrementally into the 100k warehouse plus the aggregate, as the command line
runs it (a fresh process: JVM start included). Needs duckdb (a dev dependency, only the baseline here).
"""

from __future__ import annotations

import argparse
import json
import random
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from reports import job  # noqa: E402
from reports.schema import compact_observation, make_run_line  # noqa: E402

LINES_PER_WRITER = 25_000
CONFIGS = [
    (v, m, c, r)
    for v, m, c, r in [
        ("4.9.8", "clustering", "concurrently", "default"),
        ("4.9.8", "broadcasting", "orderly", "tight"),
        ("4.9.1", "clustering", "orderly", "default"),
        ("4.9.1", "broadcasting", "concurrently", "tight"),
        ("5.0.0", "clustering", "orderly", "tight"),
        ("5.0.0", "broadcasting", "concurrently", "default"),
        ("5.3.3", "clustering", "concurrently", "tight"),
        ("5.3.3", "broadcasting", "orderly", "default"),
        ("4.9.1", "clustering", "orderly", "tight"),
        ("4.9.8", "clustering", "orderly", "tight"),
        ("5.3.3", "clustering", "orderly", "tight"),
    ]
]
RULE_POOL = [
    f"{prefix}-{n:02d}"
    for prefix, count in [
        ("CFG", 6),
        ("SB", 14),
        ("ST", 8),
        ("DT", 10),
        ("PQ", 8),
        ("OS", 8),
        ("PL", 8),
        ("CC", 8),
        ("RB", 8),
        ("OR", 10),
    ]
    for n in range(1, count + 1)
]
MACHINE_RULES = ["consume_fails", "consume_succeeds", "advance_clock", "restart_broker", "rebalance", "pull"]
INVARIANTS = ["offset_never_decreases", "no_message_lost", "retry_bound_holds"]


def make_metadata(failed: bool) -> dict:
    return {
        "traceback": "Traceback ...\nAssertionError" if failed else None,
        "reproduction_decorator": "@reproduce_failure('6.170.15', b'AAEC')" if failed else None,
        "notes": [],
        "predicates": {},
        "backend": {},
        "sys.argv": ["-c"],
        "os.getpid()": 4242,
        "imported_at": 1.7e9,
        "data_status": 3 if failed else 2,
        "phase": "generate",
        "interesting_origin": None,
        "status_reason_location": None,
        "choice_nodes": None,
        "choice_spans": None,
    }


def make_case(rng: random.Random, run_id: str, writer: str, index: int) -> dict:
    """One observation shaped like Hypothesis 6.170's, before the writer compacts it."""
    stateful = rng.random() < 0.3
    failed = rng.random() < 0.002
    rules = rng.sample(RULE_POOL, rng.randint(3, 8) if stateful else rng.randint(1, 2))
    timing = {"execute:test": rng.random() * 1e-3, "overall:gc": 0.0, "generate:data": rng.random() * 1e-4}
    steps = []
    if stateful:
        for name in rng.sample(MACHINE_RULES, 4):
            timing[f"execute:rule:{name}"] = rng.random() * 1e-3
            timing[f"generate:rule:{name}"] = rng.random() * 1e-4
            steps += [f"state.{name}(n={rng.randint(0, 99)})"] * rng.randint(1, 8)
        timing |= {f"execute:invariant:{name}": rng.random() * 1e-4 for name in INVARIANTS}
    machine = "properties/test_chapter.py::TestMachine::runTest"
    nodeid = machine if stateful else f"properties/test_chapter.py::test_property_{index % 40}"
    representation = "state = Machine()\n" + "\n".join(steps) if stateful else f"test_property(n={index})"
    return {
        "type": "test_case",
        "property": nodeid,
        "run_start": 1.7e9,
        "status": "failed" if failed else "passed",
        "status_reason": "AssertionError at properties/test_chapter.py:42" if failed else "",
        "representation": representation,
        "arguments": {"n": index},
        "how_generated": "during generate phase",
        "features": dict.fromkeys(rules, ""),
        "coverage": None,
        "timing": timing,
        "metadata": make_metadata(failed),
    }


def write_run(directory: Path, run_id: str, lines: int, seed: int) -> None:
    rng = random.Random(seed)
    (directory / run_id).mkdir(parents=True)
    for worker in range(max(1, lines // LINES_PER_WRITER)):
        version, model, mode, preset = CONFIGS[(seed + worker) % len(CONFIGS)]
        writer = f"v-{worker}-gw{worker % 2}"
        run = {
            "run_id": run_id,
            "writer": writer,
            "git_commit": "0" * 40,
            "tox_env": writer,
            "version": version,
            "message_model": model,
            "consume_mode": mode,
            "retry_preset": preset,
            "hypothesis_profile": "deep",
            "seed": str(seed),
            "started_at": 1.7e9 + seed,
            "finished_at": None,
        }
        stamp = {"run_id": run_id, "writer": writer, "expected_violation": None}
        with open(directory / run_id / f"{writer}.jsonl", "w", encoding="utf-8") as out:
            out.write(json.dumps(make_run_line("run started", run, 1.7e9)) + "\n")
            for index in range(min(lines, LINES_PER_WRITER) - 2):
                case = make_case(rng, run_id, writer, index)
                line = compact_observation(case, stamp | {"nodeid": case["property"]})
                out.write(json.dumps(line) + "\n")
            out.write(json.dumps(make_run_line("run finished", run | {"finished_at": 1.8e9}, 1.8e9)) + "\n")


def generate(directory: Path, rows: int) -> None:
    per_run = 2 * LINES_PER_WRITER
    for number in range(max(1, rows // per_run)):
        write_run(directory, f"bench-{number:04d}", min(rows, per_run), number)


DUCKDB_COLUMNS = {
    "report_schema": "INTEGER",
    "type": "VARCHAR",
    "run_id": "VARCHAR",
    "writer": "VARCHAR",
    "nodeid": "VARCHAR",
    "status": "VARCHAR",
    "status_reason": "VARCHAR",
    "representation": "VARCHAR",
    "steps": "INTEGER",
    "features": "MAP(VARCHAR, VARCHAR)",
    "timing": "MAP(VARCHAR, DOUBLE)",
    "expected_violation": "VARCHAR",
    "metadata": "STRUCT(reproduction_decorator VARCHAR)",
    "title": "VARCHAR",
    "content": "STRUCT(version VARCHAR, message_model VARCHAR, consume_mode VARCHAR, retry_preset VARCHAR, "
    "seed VARCHAR, git_commit VARCHAR, started_at DOUBLE, finished_at DOUBLE)",
}
DUCKDB_AGGREGATES = {
    "coverage": """
        WITH hits AS (SELECT unnest(rule_ids) AS rule_id, configuration, steps, run_id FROM cases)
        SELECT r.rule_id, c.configuration, count(h.rule_id) AS test_cases, coalesce(sum(h.steps), 0) AS steps,
               count(DISTINCT h.run_id) AS runs
        FROM rules r CROSS JOIN (SELECT DISTINCT configuration FROM cases) c
        LEFT JOIN hits h ON h.rule_id = r.rule_id AND h.configuration = c.configuration
        GROUP BY ALL""",
    "failures": """
        SELECT * EXCLUDE (rank) FROM (
            SELECT run_id, configuration, seed, nodeid, status_reason, expected_violation, representation, rule_ids,
                   row_number() OVER (PARTITION BY run_id, writer, nodeid, status_reason ORDER BY line DESC) AS rank
            FROM cases WHERE status = 'failed') WHERE rank = 1""",
    "machine_cost": """
        SELECT regexp_replace(nodeid, '\\[.*$', '') AS machine, e.key AS timing_key, sum(e.value) AS seconds,
               count(*) AS test_cases
        FROM (SELECT nodeid, unnest(map_entries(timing)) AS e FROM cases) GROUP BY ALL""",
    "rule_cost": """
        SELECT rule_id, count(*) AS test_cases, sum(seconds) AS seconds, sum(share) AS attributed_seconds
        FROM (SELECT unnest(rule_ids) AS rule_id, seconds, seconds / len(rule_ids) AS share FROM cases
              WHERE len(rule_ids) > 0) GROUP BY ALL""",
    "trend": """
        SELECT run_id, min(started_at) AS started_at, count(*) AS test_cases,
               len(list_distinct(flatten(list(rule_ids)))) AS rules_exercised, sum(seconds) AS seconds
        FROM cases GROUP BY run_id ORDER BY started_at DESC LIMIT 20""",
}


def run_duckdb(inputs: Path, work: Path) -> float:
    """The same pipeline in DuckDB: JSON -> Parquet partitioned by run -> the aggregates -> Parquet."""
    import duckdb

    (work / "tables").mkdir(parents=True, exist_ok=True)
    started = time.perf_counter()
    db = duckdb.connect()
    columns = "{" + ", ".join(f"'{k}': '{v}'" for k, v in DUCKDB_COLUMNS.items()) + "}"
    db.execute(f"""COPY (SELECT *, regexp_extract(filename, '([^/]+)/[^/]+$', 1) AS run_dir, 0 AS line
        FROM read_json('{inputs}/*/*.jsonl', format='newline_delimited', columns={columns}, filename=true,
                       ignore_errors=true, maximum_object_size=16777216))
        TO '{work}/records' (FORMAT parquet, PARTITION_BY (run_dir), OVERWRITE_OR_IGNORE)""")
    db.execute(
        f"CREATE VIEW records AS SELECT * FROM read_parquet('{work}/records/*/*.parquet', hive_partitioning=true)"
    )
    db.execute("""CREATE TABLE runs AS SELECT run_dir AS run_id, writer, content.seed AS seed,
        content.started_at AS started_at, concat_ws('/', content.version, content.message_model,
        content.consume_mode, content.retry_preset) AS configuration
        FROM records WHERE type = 'info' AND title = 'run started'""")
    db.execute("""CREATE TABLE cases AS SELECT r.run_dir AS run_id, r.writer, r.nodeid, r.status, r.status_reason,
        r.representation, r.expected_violation, r.steps, r.line, r.timing, m.configuration, m.seed, m.started_at,
        list_filter(map_keys(r.features), lambda k: regexp_full_match(k, '[A-Z]{2,5}-[0-9]{2,3}')) AS rule_ids,
        list_sum(map_values(r.timing)) AS seconds
        FROM records r LEFT JOIN runs m ON m.run_id = r.run_dir AND m.writer = r.writer
        WHERE r.type = 'test_case' AND r.report_schema = 1""")
    db.execute("CREATE TABLE rules AS SELECT unnest(?) AS rule_id", [RULE_POOL])
    for name, query in DUCKDB_AGGREGATES.items():
        db.execute(f"COPY ({query}) TO '{work}/tables/{name}.parquet' (FORMAT parquet)")
    db.close()
    return time.perf_counter() - started


def run_spark(spark, inputs: Path, work: Path) -> float:
    from reports.spec_rules import Rule

    rules = [Rule(rule_id, "", "bench.md", 1) for rule_id in RULE_POOL]
    started = time.perf_counter()
    job.ingest(spark, [str(inputs)], str(work / "warehouse"), force=True)
    job.aggregate(spark, str(work / "warehouse"), str(work / "tables"), 20, rules)
    return time.perf_counter() - started


def run_incremental(base_inputs: Path, warehouse: Path, work: Path) -> float:
    """One new ~50k-line run through the command line, in a fresh process (JVM start included)."""
    new = work / "new-runs"
    shutil.rmtree(new, ignore_errors=True)
    write_run(new, "bench-incremental", 2 * LINES_PER_WRITER, 9999)
    command = [
        sys.executable,
        "-m",
        "reports",
        "aggregate",
        str(base_inputs),
        str(new),
        "--warehouse",
        str(warehouse),
        "--out",
        str(work / "site"),
    ]
    started = time.perf_counter()
    subprocess.run(command, cwd=ROOT, check=True, capture_output=True)
    return time.perf_counter() - started


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--sizes", type=int, nargs="+", default=[100_000, 1_000_000, 5_000_000])
    parser.add_argument("--work", type=Path, default=None, help="scratch directory (default: a temporary one)")
    parser.add_argument("--driver-memory", default="4g")
    args = parser.parse_args()
    work = args.work or Path(tempfile.mkdtemp(prefix="bench-reports-"))
    from reports.session import get_spark

    started = time.perf_counter()
    spark = get_spark(conf={"spark.driver.memory": args.driver_memory})
    print(f"JVM + SparkSession start: {time.perf_counter() - started:.1f} s")
    print(f"{'rows':>10} {'MB':>7} {'spark s':>8} {'duckdb s':>9} {'spark/duckdb':>13} {'spark rows/s':>13}")
    for rows in args.sizes:
        inputs = work / f"in-{rows}"
        if not inputs.exists():
            generate(inputs, rows)
        megabytes = sum(f.stat().st_size for f in inputs.rglob("*.jsonl")) / 1e6
        spark_s = run_spark(spark, inputs, work / f"spark-{rows}")
        duck_s = run_duckdb(inputs, work / f"duck-{rows}")
        ratio = spark_s / duck_s
        print(f"{rows:>10} {megabytes:>7.0f} {spark_s:>8.1f} {duck_s:>9.1f} {ratio:>13.2f} {rows / spark_s:>13.0f}")
    spark.stop()
    smallest = min(args.sizes)
    seconds = run_incremental(work / f"in-{smallest}", work / f"spark-{smallest}" / "warehouse", work)
    print(
        f"incremental: one 50k-line run into the {smallest}-row warehouse + aggregate, fresh process: {seconds:.1f} s"
    )
    if args.work is None:
        shutil.rmtree(work, ignore_errors=True)


if __name__ == "__main__":
    main()
