"""A schema given to the reader (``spark.read.format("tierlog").schema("value binary, offset long")``)
picks the columns a read hands to Spark.

Spark's Kafka source refuses a user schema; a Python data source has no column pruning, so
every column of every row crosses to the JVM and is turned into rows there even when the query
uses one. Here a schema naming some of the source's columns (by name, in any order, with their
types) makes the read ship only those: less for the Arrow hand-off and the JVM. The default
schema (``schema()``), or no schema, reads every column; a ``headers`` column in the schema
turns on ``includeHeaders``. A name the source does not have, a type that differs or a name
given twice is an ``OptionError`` naming the source's columns.
"""
from __future__ import annotations

from pyspark.sql.types import (
    ArrayType,
    BinaryType,
    DataType,
    IntegerType,
    LongType,
    StringType,
    StructField,
    StructType,
    TimestampType,
)

from tierlog.spark.options import OptionError

__all__ = ["COLUMNS", "chosen_columns", "default_ddl"]

_HEADER = StructType([StructField("key", StringType()), StructField("value", BinaryType())])
COLUMNS: dict[str, DataType] = {
    "key": BinaryType(), "value": BinaryType(), "topic": StringType(), "partition": IntegerType(),
    "offset": LongType(), "timestamp": TimestampType(), "timestampType": IntegerType(),
    "headers": ArrayType(_HEADER),
}
_DDL = {"key": "binary", "value": "binary", "topic": "string", "partition": "int", "offset": "long",
        "timestamp": "timestamp", "timestampType": "int", "headers": "array<struct<key: string, value: binary>>"}


def chosen_columns(schema: StructType | str | None, include_headers: bool) -> tuple[str, ...] | None:
    """The column names to read, in the schema's order; None for every column (the default schema,
    as Spark passes it, or as ``DataSource.schema()`` gives it: DDL)."""
    if schema is None or isinstance(schema, str) and schema == default_ddl(include_headers):
        return None
    if isinstance(schema, str):
        raise OptionError(f"schema: give a StructType, or the source's own schema ({default_ddl(include_headers)})")
    names = tuple(f.name for f in schema.fields)
    default = tuple(n for n in COLUMNS if include_headers or n != "headers")
    if names == default and all(_same(f) for f in schema.fields):
        return None
    if len(set(names)) != len(names):
        raise OptionError(f"schema: a column is named twice in ({', '.join(names)}); {_offer()}")
    for f in schema.fields:
        if f.name not in COLUMNS:
            raise OptionError(f"schema: tierlog has no column {f.name!r}; {_offer()}")
        if not _same(f):
            raise OptionError(f"schema: column {f.name!r} is {_DDL[f.name]}, not {f.dataType.simpleString()}; "
                              f"{_offer()}")
    return names


def default_ddl(include_headers: bool) -> str:
    """The source's schema as ``DataSource.schema()`` gives it."""
    return ", ".join(f"{n} {t}" for n, t in _DDL.items() if include_headers or n != "headers")


def _same(f: StructField) -> bool:
    want = COLUMNS.get(f.name)
    if want is None:
        return False
    if isinstance(want, ArrayType):                 # the headers: compare the element's fields, not nullability
        return (isinstance(f.dataType, ArrayType) and isinstance(f.dataType.elementType, StructType)
                and [(x.name, x.dataType) for x in f.dataType.elementType.fields] ==
                [(x.name, x.dataType) for x in _HEADER.fields])
    return f.dataType == want


def _offer() -> str:
    return "its columns are " + default_ddl(include_headers=True)
