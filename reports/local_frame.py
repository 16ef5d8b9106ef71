"""Rows the driver holds (collected aggregates, the spec's rules) as a DataFrame, built inside the JVM.

PySpark's ``createDataFrame`` of a Python list parallelizes pickled rows, and Spark unpickles them in Python worker
processes: a worker daemon (a Python start and ``import pyspark``) and a worker per task, for a few hundred rows.
Here the rows travel as one JSON Lines literal that the JVM splits and parses with the table's schema: one Spark
plan, no Python process (the 50k-line incremental run started 39 of them before)."""

from __future__ import annotations

import json

from pyspark.sql import DataFrame, SparkSession
from pyspark.sql import functions as F
from pyspark.sql.types import ArrayType, DataType, MapType, StructType


def create_frame(spark: SparkSession, rows: list, struct: StructType) -> DataFrame:
    """`rows` (Rows, tuples in field order, or dicts by field name) as a DataFrame of `struct`; values are
    converted as Spark's JSON reader converts them (NaN and infinities included)."""
    if not rows:
        return spark.range(0).select(*(F.lit(None).cast(f.dataType).alias(f.name) for f in struct.fields))
    text = "\n".join(json.dumps(to_json_value(row, struct)) for row in rows)
    # json.dumps escapes line breaks inside strings, so every "\n" of `text` ends a row.
    lines = spark.range(1).select(F.explode(F.split(F.lit(text), "\n")).alias("value"))
    return lines.select(F.from_json("value", struct).alias("row")).select(*(F.col(f"row.{n}") for n in struct.names))


def to_json_value(value, data_type: DataType):
    """A value as JSON holds it for `data_type`: a struct (a Row, a tuple in field order, or a dict) as an object."""
    if value is None:
        return None
    if isinstance(data_type, StructType):
        if not isinstance(value, dict):
            value = dict(zip(data_type.names, value, strict=True))
        return {f.name: to_json_value(value.get(f.name), f.dataType) for f in data_type.fields}
    if isinstance(data_type, ArrayType):
        return [to_json_value(item, data_type.elementType) for item in value]
    if isinstance(data_type, MapType):
        return {key: to_json_value(item, data_type.valueType) for key, item in value.items()}
    return value
