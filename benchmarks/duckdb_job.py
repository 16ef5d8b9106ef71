"""The Spark job's work done by DuckDB: the baseline of benchmarks/bench_reports.py (not a test, not a product).

`run_job(inputs, work, rules)` does what `job.ingest` + `job.aggregate` do with the same report lines, step by step:

1. records: the files split into numbered lines (empty ones skipped, a final line break ends the last line), a byte
   order mark dropped, each line parsed with the job's explicit schema (reports/schema.py, translated to DuckDB
   types), quarantined with the job's reasons (two JSON records on one line and text after a record included),
   flattened to the warehouse's columns and written as Parquet partitioned by run;
2. the per-run partial tables (reports/transform.py, reports/clients.py) from the records read back, each written
   as Parquet partitioned by run;
3. the output tables combined from the partials (reports/combine.py) and written as Parquet, with the quarantine's
   first rows and its count by reason, as the job collects them.

reports/tests/test_pipeline.py checks that its records and output tables equal the job's on the hand-made sample.
It has no empty run directories to record (DuckDB lists none).
"""

from __future__ import annotations

import json
import shutil
import time
from pathlib import Path

import duckdb
from pyspark.sql import types as T

from reportformat import one_record
from reportformat.lines import CONFIGURATION_FIELDS, REPORT_SCHEMA_VERSION, RUN_PROPERTY, STARTED_FIELDS
from reportformat.schema import describe_kind, get_kind_checks, get_kinds
from reports import schema
from reports.clients import STATUSES
from reports.transform import RULE_ID_PATTERN

DUCKDB_TYPES = {T.StringType: "VARCHAR", T.IntegerType: "INTEGER", T.LongType: "BIGINT", T.DoubleType: "DOUBLE"}
DUCKDB_TYPES[T.BooleanType] = "BOOLEAN"


def get_duckdb_type(spark_type: T.DataType) -> str:
    """A Spark type as DuckDB names it: the job's schemas are declared once, in reports/schema.py."""
    if isinstance(spark_type, T.StructType):
        return "STRUCT(" + ", ".join(f'"{f.name}" {get_duckdb_type(f.dataType)}' for f in spark_type.fields) + ")"
    if isinstance(spark_type, T.MapType):
        return f"MAP({get_duckdb_type(spark_type.keyType)}, {get_duckdb_type(spark_type.valueType)})"
    if isinstance(spark_type, T.ArrayType):
        return f"{get_duckdb_type(spark_type.elementType)}[]"
    return DUCKDB_TYPES[type(spark_type)]


LINES = r"""CREATE VIEW lines AS
    WITH files AS (
        SELECT filename AS file, regexp_extract(filename, '([^/]+)/[^/]+$', 1) AS run_id,
               CASE WHEN contains(content, chr(13)) THEN regexp_split_to_array(content, '\r\n|\r|\n')
                    ELSE string_split(content, chr(10)) END AS pieces
        FROM read_text('{inputs}/*/*.jsonl')),
    numbered AS (
        SELECT file, run_id, len(pieces) - CASE WHEN pieces[-1] = '' THEN 1 ELSE 0 END AS total,
               unnest(range(1, len(pieces) + 1)) AS line, unnest(pieces) AS text
        FROM files)
    SELECT * FROM numbered WHERE text != ''"""
KEPT = {
    **{name: f"r.{name}" for name in ("type", "property", "status", "status_reason")},
    # A line that names no writer (a conformance verdict) has its file's: <writer>.jsonl.
    "writer": r"coalesce(r.writer, regexp_extract(file, '([^/]+?)\.jsonl(\.gz)?$', 1))",
    "nodeid": "coalesce(r.nodeid, r.property)",
    **{name: f"r.{name}" for name in ("representation", "expected_violation", "steps", "title")},
    "reproduction_decorator": "r.metadata.reproduction_decorator",
    "message": "r.message",
    "rule_ids": "list_filter(map_keys(coalesce(r.features, MAP {})), lambda k: regexp_full_match(k, $2))",
    "timing": "r.timing",
    "seconds": "coalesce(list_sum(map_values(r.timing)), 0.0)",
    "content": "CASE WHEN r.type = 'info' THEN TRY(from_json(r.content, $5)) END",
    "rule": "r.rule",
    "client_name": "r.client.name",
    "client_version": "r.client.version",
    **{name: f"r.{name}" for name in ("detail", "counterexample")},
}
# A line is one JSON object: DuckDB's from_json refuses any text after it, where the job's reader keeps the first
# record. Such a line (whose first value is a record) is named by the job's rule (reportformat/one_record.py). Where
# that first value ends: the first bracket outside a string that closes the line's first one (a scan of the line's
# characters, for lines that DuckDB refused only).
FIRST_VALUE_END = r"""CREATE OR REPLACE MACRO first_value_end(text) AS list_reduce(string_split(text, ''),
    lambda s, c: CASE
    WHEN s['end'] > 0 THEN s
    WHEN s['str'] THEN {'depth': s['depth'], 'str': s['esc'] OR c != '"', 'esc': NOT s['esc'] AND c = '\',
                        'end': 0, 'i': s['i'] + 1}
    ELSE {'depth': s['depth'] + CASE WHEN c IN ('{', '[') THEN 1 WHEN c IN ('}', ']') THEN -1 ELSE 0 END,
          'str': c = '"', 'esc': false,
          'end': CASE WHEN c IN ('}', ']') AND s['depth'] = 1 THEN s['i'] + 1 ELSE 0 END, 'i': s['i'] + 1}
    END, {'depth': 0, 'str': false, 'esc': false, 'end': 0, 'i': 0})['end']"""
RECORDS = """COPY (
    WITH unmarked AS (
        SELECT *, CASE WHEN starts_with(text, chr(65279)) THEN text[2:] ELSE text END AS body FROM lines),
    parsed AS (SELECT *, TRY(from_json(body, $1)) AS r FROM unmarked),
    counted AS (
        SELECT *, CASE WHEN r IS NULL AND starts_with(ltrim(body), '{{') AND json_valid('[' || body || ']')
                            AND list_bool_and(list_transform(json_type('[' || body || ']', '$[*]'),
                                                             lambda t: t = 'OBJECT'))
                       THEN json_array_length('[' || body || ']') END AS objects
        FROM parsed),
    marked AS (
        SELECT *, CASE WHEN r IS NOT NULL OR NOT starts_with(ltrim(body), '{{') THEN false
                       WHEN objects > 1 THEN true
                       WHEN objects IS NULL
                       THEN TRY(from_json(ltrim(body)[:first_value_end(ltrim(body))], $1)) IS NOT NULL
                       ELSE false
                  END AS extra
        FROM counted),
    checked AS (
        SELECT *, CASE WHEN extra AND (objects > 1 OR regexp_matches(body, $3)) THEN $6
                       WHEN extra THEN $7
                       WHEN r.type IS NULL AND line = total THEN 'truncated last line (writer killed?)'
                       WHEN r.type IS NULL THEN 'not a JSON report line'
                       WHEN r.report_schema IS DISTINCT FROM $4 THEN
                           'unknown report schema version ' || coalesce(r.report_schema::VARCHAR, '(none)')
                       ELSE {shape}
                  END AS reason
        FROM marked)
    SELECT file, line, reason, CASE WHEN reason IS NOT NULL THEN text[1:300] END AS text, {kept}, run_id
    FROM checked)
    TO '{warehouse}/records' (FORMAT parquet, PARTITION_BY (run_id), OVERWRITE_OR_IGNORE)"""
RANK = f"coalesce(list_position({[*STATUSES]}, {{status}}), 0)"
STRONGEST = "max({'rank': " + RANK.format(status="status") + ", 'status': status, 'detail': detail})"
SHORTEST = """arg_min(CASE WHEN counterexample != '' THEN {'detail': detail, 'counterexample': counterexample} END,
                      CASE WHEN counterexample != '' THEN length(counterexample) END)"""
STARTED = STARTED_FIELDS
PARTIALS = {
    "client_verdicts": f"""
        SELECT client_name, client_version, rule_id, top.status, verdicts,
               coalesce(example.detail, top.detail) AS detail, example.counterexample, run_id
        FROM (SELECT run_id, client_name, client_version, rule AS rule_id, {STRONGEST} AS top,
                     count(*) AS verdicts, {SHORTEST} AS example
              FROM records WHERE reason IS NULL AND type IN ('conformance_verdict', 'conformance_client')
              GROUP BY ALL)""",
    "runs": f"""
        SELECT writer, {", ".join(f"started.{name} AS {name}" for name in STARTED)}, finished_at, interrupted,
               run_id
        FROM (SELECT run_id, writer, any_value(CASE WHEN title = 'run started' THEN content END) AS started,
                     max(CASE WHEN title = 'run finished' THEN content.finished_at END) AS finished_at,
                     bool_or(title = 'run interrupted' OR coalesce(content.interrupted, false)) AS interrupted
              FROM records WHERE type = 'info' AND property = '{RUN_PROPERTY}' GROUP BY ALL)""",
    "failures": """
        SELECT writer, nodeid, status_reason, message, expected_violation, representation, reproduction_decorator,
               steps, rule_ids, run_id
        FROM (SELECT *, row_number() OVER (PARTITION BY run_id, writer, nodeid, status_reason ORDER BY line DESC) AS n
              FROM observations WHERE status = 'failed') WHERE n = 1""",
    "rule_hits": """
        SELECT writer, rule_id, count(*) AS test_cases, sum(steps) AS steps, sum(seconds) AS seconds,
               sum(CASE WHEN rule_id IS NOT NULL THEN seconds / rule_count END) AS attributed_seconds, run_id
        FROM (SELECT run_id, writer, unnest(list_append(rule_ids, NULL)) AS rule_id, coalesce(steps, 0) AS steps,
                     seconds, len(rule_ids) AS rule_count FROM observations)
        GROUP BY run_id, writer, rule_id""",
    "machine_cost": r"""
        SELECT regexp_replace(nodeid, '\[.*$', '') AS machine, timing_key, sum(seconds) AS seconds,
               sum(test_cases) AS test_cases, run_id
        FROM (SELECT run_id, nodeid, e.key AS timing_key, sum(e.value) AS seconds, count(*) AS test_cases
              FROM (SELECT run_id, nodeid, unnest(map_entries(timing)) AS e FROM observations) GROUP BY ALL)
        GROUP BY run_id, machine, timing_key""",
    "quarantine": "SELECT file, line, reason, text, run_id FROM records WHERE reason IS NOT NULL",
}
CONFIGURATION = "coalesce(concat_ws('/', {}), 'unknown')".format(", ".join(CONFIGURATION_FIELDS))


def write_records(db, inputs: Path, warehouse: Path) -> None:
    db.execute(LINES.format(inputs=inputs))
    kept = ", ".join(f"CASE WHEN reason IS NULL THEN {expr} END AS {name}" for name, expr in KEPT.items())
    structure = json.dumps({f.name: get_duckdb_type(f.dataType) for f in schema.RAW_LINE.fields})
    run = json.dumps({f.name: get_duckdb_type(f.dataType) for f in schema.RUN_CONTENT.fields})
    parameters = [structure, RULE_ID_PATTERN.strip("^$"), one_record.TWO_RECORDS_PATTERN, REPORT_SCHEMA_VERSION, run]
    parameters += [one_record.TWO_RECORDS, one_record.TEXT_AFTER]
    db.execute(FIRST_VALUE_END)
    db.execute(RECORDS.format(warehouse=warehouse, kept=kept, shape=get_shape_checks()), parameters)

def get_shape_checks() -> str:
    """The checks of each kind of line (reportformat/schema.py, as reports/line_shape.py makes them in Spark):
    an unknown kind, a required field missing, a value outside its enum; null when none fails."""
    kinds = ", ".join(sql_text(kind) for kind in get_kinds())
    no_type, unknown, quote = sql_text("a line without 'type'"), sql_text("unknown record type '"), sql_text("'")
    cases = [f"WHEN r.type IS NULL THEN {no_type}", f"WHEN r.type NOT IN ({kinds}) THEN {unknown} || r.type || {quote}"]
    for kind, field, values in get_kind_checks():
        if values is None:
            missing = sql_text(f"{describe_kind(kind)} without '{field}'")
            cases.append(f"WHEN r.type = '{kind}' AND r.{field} IS NULL THEN {missing}")
            continue
        allowed = ", ".join(sql_text(value) for value in values)
        start = sql_text(f"field '{field}' of {describe_kind(kind)} is '")
        end = sql_text(f"', expected one of {', '.join(values)}")
        cases.append(f"WHEN r.type = '{kind}' AND r.{field} NOT IN ({allowed}) THEN {start} || r.{field} || {end}")
    return "CASE " + " ".join(cases) + " END"


def sql_text(text: str) -> str:
    return "'" + text.replace("'", "''") + "'"



def read_table(db, warehouse: Path, name: str, spark_schema: T.StructType) -> None:
    """A view of a table the job wrote, partitioned by run; empty (with the table's columns) where it has no rows."""
    if any((warehouse / name).glob("*/*.parquet")):
        files = f"read_parquet('{warehouse}/{name}/*/*.parquet', hive_partitioning = true, hive_types_autocast = false)"
        db.execute(f"CREATE OR REPLACE VIEW {name} AS SELECT * FROM {files}")
        return
    columns = ", ".join(f'NULL::{get_duckdb_type(f.dataType)} AS "{f.name}"' for f in spark_schema.fields)
    db.execute(f"CREATE OR REPLACE VIEW {name} AS SELECT {columns} LIMIT 0")


def write_partials(db, warehouse: Path) -> None:
    """The per-run partial tables from the records read back (columnar), as job.load_partials computes them."""
    read_table(db, warehouse, "records", schema.RECORDS)
    db.execute("CREATE OR REPLACE VIEW observations AS SELECT * FROM records WHERE type = 'test_case'")
    for name, query in PARTIALS.items():
        target = f"{warehouse}/{name}"
        db.execute(f"COPY ({query}) TO '{target}' (FORMAT parquet, PARTITION_BY (run_id), OVERWRITE_OR_IGNORE)")


def ingest(db, inputs: Path, warehouse: Path) -> None:
    write_records(db, inputs, warehouse)
    write_partials(db, warehouse)


def with_configuration(name: str) -> str:
    """The rows of a partial table with their writer's configuration, seed, profile and start (combine.py)."""
    meta = f"SELECT run_id, writer, {CONFIGURATION} AS configuration, seed, hypothesis_profile, started_at FROM runs"
    return f"""SELECT p.*, coalesce(m.configuration, 'unknown') AS configuration, m.seed, m.hypothesis_profile,
                      m.started_at
               FROM {name} p LEFT JOIN ({meta}) m ON m.run_id = p.run_id AND m.writer = p.writer"""


COMBINED = {
    "hits": """SELECT run_id, configuration, rule_id, sum(test_cases) AS test_cases, sum(steps) AS steps,
                      sum(seconds) AS seconds, sum(attributed_seconds) AS attributed_seconds
               FROM configured_hits GROUP BY ALL""",
    "counted": """SELECT rule_id, configuration, sum(test_cases) AS test_cases, sum(steps) AS steps, count(*) AS runs
                  FROM hits WHERE rule_id IS NOT NULL GROUP BY ALL""",
    "failed": """SELECT rule_id, configuration, count(*) FILTER (WHERE expected_violation IS NULL) AS failures,
                        count(expected_violation) AS expected_failures
                 FROM (SELECT unnest(rule_ids) AS rule_id, configuration, expected_violation FROM configured_failures)
                 GROUP BY ALL""",
}
OUTPUTS = {
    "coverage": """
        WITH every_rule AS (
            SELECT rule_id, chapter FROM rules
            UNION ALL SELECT DISTINCT rule_id, NULL FROM counted WHERE rule_id NOT IN (SELECT rule_id FROM rules))
        SELECT e.rule_id, e.chapter, c.configuration, coalesce(n.test_cases, 0) AS test_cases,
               coalesce(n.steps, 0) AS steps, coalesce(n.runs, 0) AS runs, coalesce(f.failures, 0) AS failures,
               coalesce(f.expected_failures, 0) AS expected_failures
        FROM every_rule e CROSS JOIN (SELECT DISTINCT configuration FROM hits) c
        LEFT JOIN counted n ON n.rule_id = e.rule_id AND n.configuration = c.configuration
        LEFT JOIN failed f ON f.rule_id = e.rule_id AND f.configuration = c.configuration""",
    "failures": """
        SELECT run_id, started_at, configuration, hypothesis_profile, seed, nodeid, status_reason, message,
               expected_violation, representation, reproduction_decorator, steps, rule_ids
        FROM configured_failures
        ORDER BY started_at DESC NULLS LAST, run_id DESC, writer, nodeid""",
    "runs_covered": """SELECT count(DISTINCT run_id) AS runs, min(started_at) AS first_started_at,
                              max(started_at) AS last_started_at,
                              list_sort(coalesce(list(DISTINCT run_id) FILTER (WHERE interrupted), []))
                                  AS interrupted_runs FROM runs""",
    "machine_cost": """SELECT machine, timing_key, sum(seconds) AS seconds, sum(test_cases) AS test_cases
                       FROM machine_cost GROUP BY ALL""",
    "rule_cost": """SELECT rule_id, sum(test_cases) AS test_cases, sum(seconds) AS seconds,
                           sum(attributed_seconds) AS attributed_seconds
                    FROM hits WHERE rule_id IS NOT NULL GROUP BY ALL""",
    "trend": f"""
        WITH meta AS (
            SELECT run_id, min(started_at) AS started_at, any_value(git_commit) AS git_commit,
                   count(DISTINCT ({", ".join(CONFIGURATION_FIELDS)}))
                       FILTER (WHERE {" AND ".join(f"{c} IS NOT NULL" for c in CONFIGURATION_FIELDS)})
                       AS configurations,
                   count(*) AS writers, count(finished_at) AS writers_finished,
                   coalesce(bool_or(interrupted), false) AS interrupted
            FROM runs GROUP BY run_id),
        totals AS (SELECT run_id, sum(test_cases) AS test_cases, sum(seconds) AS seconds FROM hits
                   WHERE rule_id IS NULL GROUP BY run_id),
        exercised AS (SELECT run_id, count(DISTINCT rule_id) AS rules_exercised FROM hits GROUP BY run_id),
        failing AS (SELECT run_id, count(*) FILTER (WHERE expected_violation IS NULL) AS failures,
                           count(expected_violation) AS expected_failures FROM configured_failures GROUP BY run_id)
        SELECT m.run_id, m.started_at, m.git_commit, m.configurations, m.writers, m.writers_finished,
               coalesce(t.test_cases, 0) AS test_cases, coalesce(t.seconds, 0.0) AS seconds,
               coalesce(e.rules_exercised, 0) AS rules_exercised, coalesce(f.failures, 0) AS failures,
               coalesce(f.expected_failures, 0) AS expected_failures, m.interrupted
        FROM meta m LEFT JOIN totals t USING (run_id) LEFT JOIN exercised e USING (run_id)
        LEFT JOIN failing f USING (run_id)
        ORDER BY m.started_at DESC LIMIT $last""",
    "client_matrix": f"""
        WITH clients AS (
            SELECT client_name, client_version, rule_id, top.status, coalesce(example.detail, top.detail) AS detail,
                   verdicts, runs, example.counterexample
            FROM (SELECT client_name, client_version, rule_id, {STRONGEST} AS top, sum(verdicts) AS verdicts,
                         count(DISTINCT run_id) AS runs, {SHORTEST} AS example
                  FROM client_verdicts GROUP BY ALL)),
        cases AS (SELECT rule_id, sum(test_cases) AS verdicts, max(runs) AS runs FROM coverage_table GROUP BY ALL)
        SELECT * FROM clients
        UNION ALL BY NAME
        SELECT 'model' AS client_name, '' AS client_version, r.rule_id,
               CASE WHEN coalesce(c.verdicts, 0) > 0 THEN 'exercised' ELSE 'gap' END AS status,
               NULL::VARCHAR AS detail, coalesce(c.verdicts, 0)::BIGINT AS verdicts,
               coalesce(c.runs, 0)::BIGINT AS runs, NULL::VARCHAR AS counterexample
        FROM (SELECT DISTINCT rule_id FROM clients WHERE rule_id IS NOT NULL) r LEFT JOIN cases c USING (rule_id)""",
}


def aggregate(db, warehouse: Path, tables: Path, rules: list[tuple[str, str]], last: int, shown: int) -> dict:
    """The output tables from the partials of every run, as job.aggregate combines them; returns the quarantine's
    first `shown` rows and its count by reason, as the job collects them."""
    for name, partial_schema in schema.PARTIALS.items():
        read_table(db, warehouse, name, partial_schema)
    db.execute("CREATE OR REPLACE TABLE rules (rule_id VARCHAR, chapter VARCHAR)")
    db.executemany("INSERT INTO rules VALUES (?, ?)", rules)
    db.execute(f"CREATE OR REPLACE TABLE configured_hits AS {with_configuration('rule_hits')}")
    db.execute(f"CREATE OR REPLACE TABLE configured_failures AS {with_configuration('failures')}")
    for name, query in COMBINED.items():
        db.execute(f"CREATE OR REPLACE TABLE {name} AS {query}")
    tables.mkdir(parents=True, exist_ok=True)
    for name, query in OUTPUTS.items():
        db.execute(f"CREATE OR REPLACE TABLE {name}_table AS {query}", {"last": last} if "$last" in query else {})
        db.execute(f"COPY {name}_table TO '{tables}/{name}.parquet' (FORMAT parquet)")
    first = db.execute("SELECT * FROM quarantine ORDER BY file, line LIMIT ?", [shown]).fetchall()
    by_reason = dict(db.execute("SELECT reason, count(*) FROM quarantine GROUP BY reason").fetchall())
    return {"quarantine": first, "quarantine_by_reason": by_reason}


def run_job(inputs: Path, work: Path, rules: list[tuple[str, str]], last: int = 20, shown: int = 50) -> float:
    """Seconds for the whole job under `work` (warehouse/ and tables/): ingest, then the aggregate."""
    shutil.rmtree(work, ignore_errors=True)  # a partition of an earlier layout would not match
    (work / "warehouse").mkdir(parents=True)
    started = time.perf_counter()
    db = duckdb.connect()
    try:
        ingest(db, inputs, work / "warehouse")
        aggregate(db, work / "warehouse", work / "tables", rules, last, shown)
    finally:
        db.close()
    return time.perf_counter() - started
