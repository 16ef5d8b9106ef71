"""The Spark aggregate: extract run files -> transform -> load into the Parquet warehouse with each run's partial
aggregates, then combine the partials of every run.

    python -m reports aggregate [INPUT ...] [--warehouse PATH] [--tables PATH] [--out DIR] [--master URL]
                                [--last N] [--strict] [--force]

INPUT, --warehouse and --tables are any paths Spark can read and write (local, hdfs://, s3a://, ...); --out is the
local directory of the Markdown summary, coverage page, HTML page and PNG heat map.
"""

from __future__ import annotations

import argparse
import sys
import threading
from concurrent.futures import ThreadPoolExecutor
from functools import partial
from pathlib import Path

from reports import combine, extract, load, schema, transform
from reports.extract import ReportInputError
from reports.local_frame import create_frame
from reports.results import Results
from reports.session import INTERPRETED, using_conf
from reports.spec_rules import ROOT, Rule, get_cited_rule_ids, get_spec_rules

DEFAULT_INPUT = str(ROOT / "reports" / "runs")
DEFAULT_WAREHOUSE = str(ROOT / "reports" / "warehouse")
DEFAULT_OUT = ROOT / "reports" / "out"
MAX_QUARANTINE_SHOWN = 50


def positive_int(text: str) -> int:
    if not text.isdigit() or int(text) < 1:
        raise argparse.ArgumentTypeError(f"{text!r} is not a positive whole number")
    return int(text)


def add_arguments(parser: argparse.ArgumentParser) -> argparse.ArgumentParser:
    parser.description = __doc__.split("\n\n")[0]
    add = parser.add_argument
    add(
        "inputs",
        nargs="*",
        default=[DEFAULT_INPUT],
        help="run directories or directories of runs (default: %(default)s)",
    )
    add("--warehouse", default=DEFAULT_WAREHOUSE, help="Parquet tables partitioned by run (default: %(default)s)")
    add("--tables", help="where the aggregate Parquet tables go (default: OUT/tables)")
    add("--out", type=Path, default=DEFAULT_OUT, help="local directory for summary, HTML, PNG (default: %(default)s)")
    add("--master", help="Spark master URL (default: the Spark environment's, else local[*])")
    add("--last", type=positive_int, default=20, help="runs shown in the trend (default: %(default)s)")
    add("--strict", action="store_true", help="exit 1 when any input line was quarantined")
    add("--force", action="store_true", help="re-ingest runs even when unchanged")
    add(
        "--lock-timeout",
        type=float,
        default=load.LOCK_TIMEOUT,
        help="seconds to wait while another aggregate holds a local warehouse, then exit 3 (default: %(default)s)",
    )
    return parser


def build_parser() -> argparse.ArgumentParser:
    from reports.__main__ import EXIT_CODES, OneLineParser

    parser = OneLineParser(
        prog="python -m reports aggregate", epilog=EXIT_CODES, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    return add_arguments(parser)


def ingest(spark, inputs: list[str], warehouse: str, force: bool = False) -> tuple[list[str], list[str]]:
    """Ingests new or changed runs (replacing earlier copies) with their partial tables; returns (ingested,
    unchanged) run ids."""
    runs = extract.find_runs(extract.get_lister(spark), inputs)
    known = load.read_markers(spark, warehouse)
    pending = extract.select_pending(runs, known, force)
    todo = list(pending)
    if known and not load.has_partials(spark, warehouse):
        # A warehouse from before the partial tables (or their present format): rebuilt once from its records.
        load.delete_partials(spark, warehouse)
        write_partials(spark, warehouse, sorted(set(known) - set(todo)))
    if todo:
        load.delete_runs(spark, warehouse, todo)
        load.append_runs(extract_records(spark, [runs[r] for r in todo]), warehouse)
        write_partials(spark, warehouse, todo)
        load.write_markers(spark, warehouse, pending)
    return todo, sorted(set(runs) - set(todo))


def extract_records(spark, runs: list[extract.Run]):
    """The records of the runs' files, and one quarantined record (line 0) for each problem found while listing them
    (extract.Run.problems)."""
    files = [file for run in runs for file in run.files]
    records = transform.select_records(transform.parse_lines(extract.read_lines(spark, files)))
    empty = [
        {"file": path, "line": 0, "reason": reason, "run_id": run.run_id}
        for run in runs
        for path, reason in run.problems
    ]
    if not empty:
        return records  # a union with no rows still costs its (empty) tasks: ~1 s of a 50k-line ingest
    return records.unionByName(create_frame(spark, empty, schema.RECORDS))


def write_partials(spark, warehouse: str, run_ids: list[str]) -> None:
    """Computes the runs' partial tables from their records (read back: columnar, and parsed only once)."""
    records = load.read_table(spark, warehouse, load.RECORDS, run_ids)
    builders = transform.compute_partials(records)
    run_side_by_side({name: partial(append_built, build, warehouse, name) for name, build in builders.items()})
    load.mark_partials(spark, warehouse)


def append_built(build, warehouse: str, name: str) -> None:
    load.append_runs(build(), warehouse, name)


def run_side_by_side(tasks: dict, workers: int = 4) -> dict:
    """Runs independent Spark actions from threads of the driver: one's planning and code generation (most of a
    small job's time in a fresh JVM) overlaps the others' tasks (measured: the 50k-line incremental aggregate phase
    4.0-4.4 s -> 2.9-3.8 s). Returns name -> result; the first error raises."""
    with ThreadPoolExecutor(max_workers=workers) as pool:
        futures = {name: pool.submit(task) for name, task in tasks.items()}
        return {name: future.result() for name, future in futures.items()}


def collect(frame) -> list[dict]:
    return [row.asDict(recursive=True) for row in frame.collect()]


def compute_output(spark, build, tables: str, name: str, collected=None) -> list[dict]:
    """An output table (`build()` makes its DataFrame) is small: computed once (collected) and written from the
    driver's copy; `collected(rows)` is called before the write."""
    frame = build()
    rows = frame.collect()
    found = [row.asDict(recursive=True) for row in rows]
    if collected is not None:
        collected(found)
    load.write_output(create_frame(spark, rows, frame.schema), tables, name)
    return found


def aggregate(
    spark, warehouse: str, tables: str, last: int, rules: list[Rule] | None = None, on_coverage=None
) -> Results:
    """Every aggregate, combined from the runs' partial tables, written as Parquet under `tables` and returned for
    rendering. `on_coverage(rules, coverage)` is called with the spec rules' coverage (Results.coverage) as soon as
    it is in, while the other outputs are still being computed."""
    rules = get_spec_rules() if rules is None else rules
    rules_frame = create_frame(spark, [(r.rule_id, r.title, r.chapter) for r in rules], schema.SPEC_RULES)
    partials = {name: load.read_table(spark, warehouse, name) for name in schema.PARTIALS}
    builders = combine.combine(partials, rules_frame, last)
    quarantine = partials["quarantine"]
    told = {"coverage": partial(tell_spec_coverage, on_coverage, rules)} if on_coverage is not None else {}
    tasks = {
        name: partial(compute_output, spark, build, tables, name, told.get(name)) for name, build in builders.items()
    }
    tasks["quarantine"] = partial(collect, quarantine.orderBy("file", "line").limit(MAX_QUARANTINE_SHOWN))
    tasks["by_reason"] = partial(collect, quarantine.groupBy("reason").count())
    with using_conf(spark, INTERPRETED):
        found = run_side_by_side(tasks)
    shown = found["quarantine"]
    by_reason = {row["reason"]: row["count"] for row in found["by_reason"]}
    return Results(
        rules=rules,
        coverage=select_spec_coverage(found["coverage"]),
        failures=found["failures"],
        machine_cost=found["machine_cost"],
        rule_cost=found["rule_cost"],
        trend=found["trend"],
        unknown_rules=sorted({row["rule_id"] for row in found["coverage"] if row["chapter"] is None}),
        runs_covered=found["runs_covered"][0],
        quarantine=shown,
        quarantine_by_reason=by_reason,
        cited_by_tests=set(get_cited_rule_ids(ROOT / "properties")),
    )


def select_spec_coverage(coverage: list[dict]) -> list[dict]:
    """The coverage rows of spec rules (a rule id that spec/ does not define has no chapter)."""
    return [row for row in coverage if row["chapter"] is not None]


def tell_spec_coverage(on_coverage, rules: list[Rule], coverage: list[dict]) -> None:
    on_coverage(rules, select_spec_coverage(coverage))


def write_site(results: Results, out: Path, tables: str, heat_map: bytes | None = None) -> str:
    """Writes summary.md, coverage.md, index.html and coverage.png (`heat_map`, drawn here when not given) under
    `out`; returns the summary."""
    from reports.render_html import render_heat_map, render_html
    from reports.render_markdown import render_coverage_page, render_summary

    out.mkdir(parents=True, exist_ok=True)
    heat_map = render_heat_map(results.rules, results.coverage) if heat_map is None else heat_map
    (out / "coverage.png").write_bytes(heat_map)
    (out / "index.html").write_text(render_html(results, heat_map), encoding="utf-8")
    (out / "coverage.md").write_text(render_coverage_page(results), encoding="utf-8")
    paths = {
        "HTML": str(out / "index.html"),
        "heat map (PNG)": str(out / "coverage.png"),
        "coverage page": str(out / "coverage.md"),
        "Parquet tables": tables,
    }
    summary = render_summary(results, paths)
    (out / "summary.md").write_text(summary + "\n", encoding="utf-8")
    return summary


def aggregate_and_draw(
    spark, warehouse: str, tables: str, last: int, rules: list[Rule] | None = None
) -> tuple[Results, bytes]:
    """aggregate, with the heat map drawn as soon as the coverage is in: its ~0.5 s of Python then runs while Spark
    computes the other outputs."""
    from reports.render_html import render_heat_map

    with ThreadPoolExecutor(max_workers=1) as renderer:
        drawn = []

        def draw(rules: list[Rule], coverage: list[dict]) -> None:
            drawn.append(renderer.submit(render_heat_map, rules, coverage))

        results = aggregate(spark, warehouse, tables, last, rules, on_coverage=draw)
        return results, drawn[0].result()


def import_slow_modules() -> None:
    """matplotlib's pyplot (~0.6 s), and what PySpark imports when the SparkContext starts: its py4j argument
    converter imports pyspark.testing.utils, which imports pandas and pyarrow where they are installed (~0.3 s)."""
    import pyspark.testing.utils  # noqa: F401

    from reports.render_html import import_pyplot

    import_pyplot()


def main(argv: list[str] | None = None, spark=None) -> int:
    return run(build_parser().parse_args(argv), spark)


def run(args: argparse.Namespace, spark=None) -> int:
    """The job over parsed arguments; one aggregate at a time holds a local warehouse."""
    try:
        with load.locked(args.warehouse, args.lock_timeout):
            return run_locked(args, spark)
    except load.WarehouseBusy as error:
        print(f"error: {error}", file=sys.stderr)
        return 3


def run_locked(args: argparse.Namespace, spark=None) -> int:
    tables = args.tables or str(args.out / "tables")
    if spark is None:
        from reports.session import get_spark, is_small_local_input

        threading.Thread(target=import_slow_modules, daemon=True).start()  # while the JVM starts
        quick_start = is_small_local_input(args.inputs, args.warehouse, args.force)
        spark = get_spark(args.master, quick_start=quick_start)
    try:
        ingested, skipped = ingest(spark, args.inputs, args.warehouse, args.force)
        print(f"ingested {len(ingested)} new or changed runs, {len(skipped)} unchanged; aggregating", file=sys.stderr)
        results, heat_map = aggregate_and_draw(spark, args.warehouse, tables, args.last)
    except ReportInputError as error:
        print(f"error: {error}", file=sys.stderr)
        return 2
    results.ingested, results.skipped = ingested, skipped
    print(write_site(results, args.out, tables, heat_map))
    if args.strict and results.quarantine_by_reason:
        print(f"--strict: {sum(results.quarantine_by_reason.values())} input lines quarantined", file=sys.stderr)
        return 1
    return 0
