"""The Spark aggregate: extract the new runs' report lines -> transform them into records and per-run partial
aggregates -> load both into the Parquet warehouse; then combine the partials of every run into the outputs.

    python -m reports aggregate [INPUT ...] [--warehouse PATH] [--tables PATH] [--out DIR]
                                [--master URL | --remote sc://HOST:PORT] [--last N] [--strict] [--force] [--no-site]

INPUT, --warehouse and --tables are any paths Spark can read and write (local, hdfs://, s3a://, ...); --out is the
local directory of the Markdown summary, coverage page, HTML page and PNG heat map.
"""

from __future__ import annotations

import argparse
import csv
import sys
from collections.abc import Sequence
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

from reports import combine, extract, load, schema, site, transform
from reports.cli import EXIT_CODES, OneLineParser
from reports.differential import find_newest_records
from reports.extract import ReportInputError
from reports.heat_map import render_client_heat_map, render_heat_map
from reports.local_frame import create_frame
from reports.render_html import render_html
from reports.render_markdown import render_coverage_page, render_summary
from reports.results import Results
from reports.session import INTERPRETED, get_spark, is_small_local_input, using_conf
from reports.spec_rules import ROOT, Rule, get_cited_rule_ids, get_spec_rules
from runenv.run_context import SettingError, check_directory

DEFAULT_INPUT = str(ROOT / "reports" / "runs")
DEFAULT_WAREHOUSE = str(ROOT / "reports" / "warehouse")
DEFAULT_OUT = ROOT / "reports" / "out"
GRID_FILE = "coverage-by-configuration.csv"
MAX_QUARANTINE_SHOWN = 50


def non_negative_seconds(text: str) -> float:
    try:
        seconds = float(text)
    except ValueError:
        seconds = -1.0
    if not seconds >= 0 or seconds == float("inf"):
        raise argparse.ArgumentTypeError(f"{text!r} is not a number of seconds (0 or more)")
    return seconds


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
    engine = parser.add_mutually_exclusive_group()
    engine.add_argument("--master", help="Spark master URL (default: the Spark environment's, else local[*])")
    engine.add_argument(
        "--remote",
        help="a Spark Connect server's URL (sc://host:port), a long-lived engine; INPUT, --warehouse and --tables "
        "are then local paths that the server sees too",
    )
    add("--last", type=positive_int, default=20, help="runs shown in the trend (default: %(default)s)")
    add("--strict", action="store_true", help="exit 1 when any input line was quarantined")
    add(
        "--max-line-bytes",
        type=positive_int,
        default=extract.MAX_LINE,
        help="a longer line is quarantined with that reason, unread (default: %(default)s; the embedded driver's 1 GB "
        "heap holds a line a few times over)",
    )
    add("--force", action="store_true", help="re-ingest runs even when unchanged")
    add("--no-site", action="store_true", help="skip the documentation site OUT/site (built when mkdocs is installed)")
    add_tuning_argument(parser)
    add(
        "--lock-timeout",
        type=non_negative_seconds,
        default=load.LOCK_TIMEOUT,
        help="seconds to wait while another aggregate holds a local warehouse, then exit 3 (default: %(default)s)",
    )
    return parser


def add_tuning_argument(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "--tuned-jvm",
        action="store_true",
        help="opt-in, embedded driver only: map Spark's classes from a class-data sharing archive (written by the "
        "second such job to ~/.cache/rmqspec) and, for small local inputs, compile with the JIT's first tier and "
        "the serial GC, for larger ones use the parallel GC (benchmarks/bench_reports_jvm.py and bench_reports.py "
        "measure it)",
    )


def build_parser() -> argparse.ArgumentParser:
    parser = OneLineParser(
        prog="python -m reports aggregate", epilog=EXIT_CODES, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    return add_arguments(parser)


def ingest(
    spark, inputs: list[str], warehouse: str, force: bool = False, max_line: int = extract.MAX_LINE
) -> tuple[list[str], list[str]]:
    """Ingests new or changed runs (replacing earlier copies) with their partial tables; returns (ingested,
    unchanged) run ids."""
    runs = extract.find_runs(extract.get_lister(spark), inputs)
    known = load.read_markers(spark, warehouse)
    pending = extract.select_pending(runs, known, force)
    todo = list(pending)
    if known and not load.has_partials(spark, warehouse):
        # A warehouse from before the partial tables (or their present format): rebuilt once from its records.
        load.delete_partials(spark, warehouse)
        load_partials(spark, warehouse, sorted(set(known) - set(todo)))
    if todo:
        load.delete_runs(spark, warehouse, todo)
        lines = extract.read_lines(spark, [file for run_id in todo for file in runs[run_id].files], max_line=max_line)
        records = transform.select_records(transform.parse_lines(lines, max_line))
        load.append_runs(with_problems(spark, records, [runs[run_id] for run_id in todo]), warehouse)
        load_partials(spark, warehouse, todo)
        load.write_markers(spark, warehouse, pending)
    return todo, sorted(set(runs) - set(todo))


def with_problems(spark, records, runs: list[extract.Run]):
    """The records, and one quarantined record (line 0) for each problem found while listing the runs
    (extract.Run.problems)."""
    empty = [
        {"file": path, "line": 0, "reason": reason, "run_id": run.run_id}
        for run in runs
        for path, reason in run.problems
    ]
    if not empty:
        return records  # a union with no rows still costs its (empty) tasks
    return records.unionByName(create_frame(spark, empty, schema.RECORDS))


def load_partials(spark, warehouse: str, run_ids: list[str]) -> None:
    """Computes the runs' partial tables from their records (read back: columnar, and parsed only once) and
    appends them to the warehouse."""
    records = load.read_table(spark, warehouse, load.RECORDS, run_ids)
    partials = transform.compute_partials(records)
    # Six small jobs over the same records, each into its own table: submitted together, Spark overlaps one's
    # planning and scheduling with another's tasks (benchmarks/NOTES.md, "Engines").
    with ThreadPoolExecutor(len(partials)) as pool:
        list(pool.map(lambda name: load.append_runs(partials[name], warehouse, name), partials))
    load.mark_partials(spark, warehouse)


def collect(frame) -> list[dict]:
    return [row.asDict(recursive=True) for row in frame.collect()]


def compute_output(spark, frame, tables: str, name: str) -> list[dict]:
    """An output table is small: computed once (collected) and written from the driver's copy."""
    rows = frame.collect()
    load.write_output(create_frame(spark, rows, frame.schema), tables, name)
    return [row.asDict(recursive=True) for row in rows]


def aggregate(spark, warehouse: str, tables: str, last: int, rules: list[Rule] | None = None) -> Results:
    """Every aggregate, combined from the runs' partial tables, written as Parquet under `tables` and returned for
    rendering."""
    rules = get_spec_rules() if rules is None else rules
    rules_frame = create_frame(spark, [(r.rule_id, r.title, r.chapter) for r in rules], schema.SPEC_RULES)
    # Cached for the job: every output query (coverage, rule cost and trend all read rule_hits) would otherwise
    # list and read every run's partition of the partial tables again (benchmarks/NOTES.md, "Engines").
    partials = {name: load.read_table(spark, warehouse, name).cache() for name in schema.PARTIALS}
    quarantine = partials["quarantine"]
    try:
        with using_conf(spark, INTERPRETED):
            outputs = combine.combine(partials, rules_frame, last)
            found = {name: compute_output(spark, frame, tables, name) for name, frame in outputs.items()}
            shown = collect(quarantine.orderBy("file", "line").limit(MAX_QUARANTINE_SHOWN))
            by_reason = {row["reason"]: row["count"] for row in collect(quarantine.groupBy("reason").count())}
    finally:
        for frame in partials.values():
            frame.unpersist()
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
        client_matrix=found["client_matrix"],
    )


def select_spec_coverage(coverage: list[dict]) -> list[dict]:
    """The coverage rows of spec rules (a rule id that spec/ does not define has no chapter)."""
    return [row for row in coverage if row["chapter"] is not None]


def write_site(
    results: Results, out: Path, tables: str, sections: Sequence[tuple[str, str]] = (), docs: bool = True
) -> str:
    """Writes summary.md, coverage.md, results.json, coverage.png, clients.png, the documentation site (with
    `docs`, when mkdocs-material is installed) and index.html under `out`; returns the summary. `sections`: further
    (heading, HTML) parts of index.html."""
    out.mkdir(parents=True, exist_ok=True)
    (out / "clients.png").write_bytes(render_client_heat_map(results.client_matrix))
    heat_map = render_heat_map(results.rules, results.coverage)
    (out / "coverage.png").write_bytes(heat_map)
    (out / "coverage.md").write_text(render_coverage_page(results), encoding="utf-8")
    (out / site.RESULTS).write_text(results.to_json(), encoding="utf-8")
    paths = {"HTML": str(out / "index.html"), "heat map (PNG)": str(out / "coverage.png"),
             "rule x client heat map (PNG)": str(out / "clients.png"),
             "rule x configuration table (CSV)": str(write_grid(results, out))}
    site_link = None
    if not docs:
        paths["documentation site"] = "not built (--no-site)"
    elif site.is_mkdocs_installed():
        try:
            paths["documentation site"] = str(site.write_site(results, out, heat_map) / "index.html")
            site_link = site.SITE
        except Exception as error:  # mkdocs' strict mode: a broken link in spec/ (the tests and tox env docs fail)
            print(f"documentation site not built: {type(error).__name__}: {error}", file=sys.stderr)
    else:
        paths["documentation site"] = "not built: mkdocs-material is not installed (pip install -e '.[docs]')"
    (out / "index.html").write_text(render_html(results, heat_map, site_link, sections), encoding="utf-8")
    paths |= {"coverage page": str(out / "coverage.md"), "Parquet tables": tables}
    summary = render_summary(results, paths)
    (out / "summary.md").write_text(summary + "\n", encoding="utf-8")
    return summary


def write_grid(results: Results, out: Path) -> Path:
    """The heat map's data as a table: a row per spec rule (spec order), a column per configuration, the test cases
    that exercised the rule there (0: a gap); written to `out`/coverage-by-configuration.csv, whose path it returns."""
    path = out / GRID_FILE
    configurations = results.configurations
    with path.open("w", newline="", encoding="utf-8") as handle:
        writer = csv.writer(handle)
        writer.writerow(["rule_id", "chapter", *configurations])
        for rule in results.rules:
            cells = (results.get_cell(rule.rule_id, name) or {} for name in configurations)
            writer.writerow([rule.rule_id, rule.chapter, *(cell.get("test_cases", 0) for cell in cells)])
    return path


def main(argv: list[str] | None = None, spark=None) -> int:
    return run(build_parser().parse_args(argv), spark)


def check_arguments(args: argparse.Namespace) -> str | None:
    """What is wrong with the local paths of the command line, before anything starts (the JVM, the warehouse's
    lock): a missing input, a file where a directory must be; None when nothing is."""
    for given in args.inputs:
        if load.is_local(given):
            try:
                extract.list_local_directory(given)
            except ReportInputError as error:
                return str(error)
    outputs = [("--warehouse", args.warehouse), ("--out", str(args.out))]
    outputs += [("--tables", args.tables)] if args.tables else []
    for option, given in outputs:
        if load.is_local(given):
            try:
                check_directory(option, given.removeprefix("file:"))
            except SettingError as error:
                return str(error)
    return None


def run(args: argparse.Namespace, spark=None) -> int:
    """The job over parsed arguments; one aggregate at a time holds a local warehouse."""
    problem = check_arguments(args)
    if problem:
        print(f"error: {problem}", file=sys.stderr)
        return 2
    try:
        with load.locked(args.warehouse, args.lock_timeout):
            return run_locked(args, spark)
    except load.WarehouseBusy as error:
        print(f"error: {error}", file=sys.stderr)
        return 3


def run_locked(args: argparse.Namespace, spark=None) -> int:
    tables = args.tables or str(args.out / "tables")
    if args.remote and not all(map(load.is_local, [*args.inputs, args.warehouse, tables])):
        print("error: with --remote, INPUT, --warehouse and --tables must be local paths", file=sys.stderr)
        return 2
    if spark is None and args.remote:
        spark = get_spark(remote=args.remote)
    if spark is None:
        # Opt-in JVM tuning of the embedded driver (benchmarks/NOTES.md, "reports/"): the JIT/GC flags of a short
        # job when the runs to ingest are local and small, and the class-data sharing archive.
        quick_start = args.tuned_jvm and is_small_local_input(args.inputs, args.warehouse, args.force)
        spark = get_spark(args.master, quick_start=quick_start, class_archive=args.tuned_jvm)
    try:
        ingested, skipped = ingest(spark, args.inputs, args.warehouse, args.force, args.max_line_bytes)
        print(f"ingested {len(ingested)} new or changed runs, {len(skipped)} unchanged; aggregating", file=sys.stderr)
        results = aggregate(spark, args.warehouse, tables, args.last)
    except ReportInputError as error:
        print(f"error: {error}", file=sys.stderr)
        return 2
    results.ingested, results.skipped = ingested, skipped
    results.differential_run = find_newest_records(args.inputs)
    print(write_site(results, args.out, tables, docs=not args.no_site))
    if args.strict and results.quarantine_by_reason:
        print(f"--strict: {sum(results.quarantine_by_reason.values())} input lines quarantined", file=sys.stderr)
        return 1
    return 0
