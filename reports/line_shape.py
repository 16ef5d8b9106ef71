"""The report line's JSON Schema (reportformat/report-line.schema.json) as Spark columns: why a parsed line breaks
it, or null. The schema decides; this module only translates it (the DuckDB baseline translates the same checks).

Spark's JSON reader reads a field into its declared type (reports/schema.py derives the struct from the schema) and
puts the line in ``_corrupt_record`` when a value does not fit: a list where an object belongs, a text where a
number does. A text field takes any value, though (``["test_case"]`` is read as that text), so a text that could be
another value's JSON (``[...]``, ``{...}``, a number, true, false) is looked at again, as does every corrupt line:
its line parsed as a VARIANT, each named field's JSON type compared with the schema's (a VARIANT holds up to 16 MiB:
a longer line with such a text is taken as text). The checks of each kind of line follow: required fields, enums.
"""

from __future__ import annotations

from pyspark.sql import Column, DataFrame
from pyspark.sql import functions as F

from reportformat.schema import (
    describe_kind,
    describe_types,
    get_field_types,
    get_kind_checks,
    get_kinds,
    get_value_types,
)
from reports.schema import CORRUPT

# schema_of_variant's names of JSON values, as the schema names their types.
VARIANT_TYPES = [("STRING", "string"), ("BOOLEAN", "boolean"), ("VOID", "null"), ("ARRAY", "array")]
VARIANT_TYPES += [("OBJECT", "object"), ("BIGINT", "integer"), ("INT", "integer"), ("SMALLINT", "integer")]
VARIANT_TYPES += [("TINYINT", "integer"), ("DECIMAL", "number"), ("DOUBLE", "number"), ("FLOAT", "number")]
SCHEMA_BROKEN = "a value does not match the report line's schema (reportformat/report-line.schema.json)"


def is_text_field(types: tuple[str, ...]) -> bool:
    return "string" in types and not {"integer", "number", "boolean", "array"} & set(types)


def looks_like_other_value(record: Column) -> Column:
    """Whether a text field holds what could be another JSON value's text (then the line is looked at again):
    its first character a bracket, or the text true, false or a number. Character and string comparisons first,
    the number's conversion last (a regular expression per field of a million lines cost seconds)."""
    texts = [name for name, types in get_field_types().items() if is_text_field(types)]
    return F.greatest(*(F.coalesce(could_be_other_value(record[name]), F.lit(False)) for name in texts))


def could_be_other_value(text: Column) -> Column:
    first = F.substring(text, 1, 1)
    number = first.isin("-", *"0123456789") & text.try_cast("double").isNotNull()
    return first.isin("[", "{") | text.isin("true", "false") | number


def get_json_type(value: Column) -> Column:
    """The JSON type of a VARIANT value (null for SQL's null) as the schema names it."""
    found = F.regexp_extract(F.schema_of_variant(value), "^[A-Z]+", 0)
    return F.element_at(F.create_map(*(F.lit(text) for pair in VARIANT_TYPES for text in pair)), found)


def literal_map(pairs) -> Column:
    return F.create_map(*(F.lit(item) for pair in pairs for item in pair))


def find_wrong_type(probe: Column) -> Column:
    """``field 'steps' is a string, expected an integer or null``: the first field (in the schema's order) whose JSON
    type the schema does not admit, or null. Looked up over the line's fields by higher-order functions, evaluated
    for suspect lines only: a column per field made most of the query's generated code (benchmarks/NOTES.md, "the
    JVM's first job")."""
    fields = get_field_types()
    pairs = ((F.lit(name), F.array(*map(F.lit, types))) for name, types in fields.items())
    allowed = F.create_map(*(part for pair in pairs for part in pair))
    expected = literal_map((name, f", expected {describe_types(types)}") for name, types in fields.items())
    order = literal_map((name, position) for position, name in enumerate(fields))

    def describe(entry: Column) -> Column:
        found = get_json_type(entry["value"])
        article = F.when(found == "null", F.lit("")).when(found.isin("integer", "object", "array"), F.lit("an "))
        text = F.concat(F.lit("field '"), entry["key"], F.lit("' is "), F.coalesce(article, F.lit("a ")), found,
                        F.element_at(expected, entry["key"]))
        wrong = ~F.array_contains(F.element_at(allowed, entry["key"]), found)
        return F.when(wrong, F.struct(F.element_at(order, entry["key"]).alias("at"), text.alias("reason")))

    entries = F.map_entries(F.try_variant_get(probe, "$", "map<string,variant>"))
    known = F.filter(entries, lambda entry: F.map_contains_key(allowed, entry["key"]))
    first = F.array_min(F.filter(F.transform(known, describe), lambda found: found.isNotNull()))["reason"]
    reasons = [first]
    for field, types in get_value_types().items():
        others = "|".join(prefix for prefix, name in VARIANT_TYPES if name not in types)
        values = F.schema_of_variant(F.variant_get(probe, f"$.{field}", "variant"))
        wrong = F.lit(f"field '{field}' has a value that is not {describe_types(types)}")
        reasons.append(F.when(values.startswith("OBJECT") & values.rlike(f": ({others})[,>]"), wrong))
    return F.coalesce(*reasons)


def find_unknown_kind(record: Column) -> Column:
    kind = record["type"]
    return F.when(kind.isNull(), F.lit("a line without 'type'")).when(
        ~kind.isin(*get_kinds()), F.concat(F.lit("unknown record type '"), kind, F.lit("'"))
    )


def find_kind_problem(record: Column) -> Column:
    """The first check of the line's kind it fails (a required field missing, a value not among the enum's), or
    null. Only the checks of the line's own kind are evaluated (one comparison of its type per kind, not per check)."""
    kind = record["type"]
    by_kind: dict[str, list[Column]] = {}
    for name, field, values in get_kind_checks():
        value, checks = record[field], by_kind.setdefault(name, [])
        if values is None:
            checks.append(F.when(value.isNull(), F.lit(f"{describe_kind(name)} without '{field}'")))
            continue
        start, end = f"field '{field}' of {describe_kind(name)} is '", f"', expected one of {', '.join(values)}"
        checks.append(F.when(~value.isin(*values), F.concat(F.lit(start), value, F.lit(end))))
    found = None
    for name, reasons in by_kind.items():
        problem = F.coalesce(*reasons) if len(reasons) > 1 else reasons[0]
        found = F.when(kind == name, problem) if found is None else found.when(kind == name, problem)
    return found


def with_shape_problem(parsed: DataFrame, body: Column, record: str = "record", run: str = "run") -> DataFrame:
    """`parsed` with ``shape``: why its parsed `record` of the line `body` breaks the schema, or null; `run` is its
    content parsed as a run line's (for run lines). Each step is a column of its own, computed once per line."""
    line = F.col(record)
    suspect = line[CORRUPT].isNotNull() | looks_like_other_value(line)
    probed = parsed.withColumn("_probe", F.when(suspect, F.try_parse_json(body)))
    corrupt = F.when(line[CORRUPT].isNotNull(), F.lit(SCHEMA_BROKEN))
    checked = F.col("_probe").isNotNull() | line[CORRUPT].isNotNull()
    wrong = F.when(checked, F.coalesce(find_wrong_type(F.col("_probe")), corrupt))
    content = F.col(run)
    bad_run = (line["type"] == "info") & content.isNotNull() & (
        content[CORRUPT].isNotNull() | content["run_id"].isNull() | content["writer"].isNull()
    )
    shape = F.coalesce(
        find_unknown_kind(line),
        wrong,
        find_kind_problem(line),
        F.when(bad_run, F.lit("the run line's content does not match the schema's run (run_id, writer, times)")),
    )
    return probed.withColumn("shape", shape).drop("_probe")
