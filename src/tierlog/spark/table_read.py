"""``spark.read.format("tierlog").option("table", TOPIC)``: a topic's Iceberg table, read with no broker.

docs/tables.md has the tables; docs/spark.md the options. The driver opens the catalog
(``storage`` = the remote store, ``catalogUri`` / ``catalogType`` as the brokers'
``tierlog.table.catalog.uri`` / ``.type``, the catalog's other properties and the namespace as the
brokers' ``tierlog.table.catalog.<property>`` and ``tierlog.table.namespace`` options,
``rsm.config.storage.s3.*`` for S3), gives Spark the
table's schema, and plans with pyiceberg: the filters Spark pushes (comparisons,
``IN``, null checks on the table's columns: ``partition``, ``offset``, ``timestamp``
and the value's) become the scan's row filter, so only the data files whose partition
or column statistics can match are read; Spark evaluates every filter again on the
rows, so none is trusted to the statistics. The files go into tasks of at most
``TASK_BYTES_MAX`` (one file per task when larger); a task reads its files through the
table's file IO (a local file memory-mapped) in Parquet row-group batches, columns missing from older files (before
a schema change) as nulls. ``deadLetter=true`` reads the dead-letter table. Needs the
``table`` extra besides ``spark``.
"""

from __future__ import annotations

import datetime
import functools
import urllib.parse
from collections.abc import Iterator, Mapping
from dataclasses import dataclass, replace
from typing import Any

import pyarrow as pa
import pyarrow.parquet as pq
from pyspark.sql.datasource import (
    DataSourceReader,
    EqualTo,
    Filter,
    GreaterThan,
    GreaterThanOrEqual,
    In,
    InputPartition,
    IsNotNull,
    IsNull,
    LessThan,
    LessThanOrEqual,
)
from pyspark.sql.types import StructType

from tierlog.extras import MissingExtraError, require
from tierlog.spark.options import CATALOG_OPTIONS, OptionError, catalog_settings

__all__ = ["TASK_BYTES_MAX", "TablePartition", "TableReadOptions", "TierlogTableReader", "chosen_table_columns",
           "open_data_file", "table_read_options"]

TASK_BYTES_MAX = 128 * 1024 * 1024
_OPTIONS = frozenset({"table", "storage", "cataloguri", "catalogtype", "deadletter", "path"})   # Spark's are
# case-insensitive: compared in lower case
_OPS = {EqualTo: "=", GreaterThan: ">", GreaterThanOrEqual: ">=", LessThan: "<", LessThanOrEqual: "<="}


@dataclass(frozen=True)
class TableReadOptions:
    table: str
    storage: str
    catalog_uri: str = ""
    catalog_type: str = "sql"
    dead_letter: bool = False
    storage_settings: tuple[tuple[str, str], ...] = ()
    catalog_settings: tuple[tuple[str, str], ...] = ()     # tierlog.table.catalog.<property>, tierlog.table.namespace


def table_read_options(options: Mapping[str, str]) -> TableReadOptions:
    """The table read's options; OptionError naming a missing or foreign one."""
    given = {k.lower(): str(v) for k, v in options.items()}
    foreign = sorted(k for k in given if k not in _OPTIONS and not k.startswith(("rsm.config.storage.",
                                                                                 *CATALOG_OPTIONS)))
    if foreign:
        raise OptionError(f"{foreign[0]}: not an option of a table read (table, storage, catalogUri, catalogType, "
                          "deadLetter, rsm.config.storage.*, tierlog.table.catalog.*, tierlog.table.namespace)")
    if not given.get("storage"):
        raise OptionError("storage: a table read needs the remote storage (a directory or s3://BUCKET/PREFIX)")
    dead = given.get("deadletter", "false").strip().lower()
    if dead not in ("true", "false"):
        raise OptionError(f"deadLetter: true or false, got {dead!r}")
    return TableReadOptions(given["table"], given["storage"],
                            given.get("cataloguri") or given.get("tierlog.table.catalog.uri", ""),
                            given.get("catalogtype") or given.get("tierlog.table.catalog.type", "sql"), dead == "true",
                            tuple(sorted((k, v) for k, v in given.items() if k.startswith("rsm.config.storage."))),
                            catalog_settings(given))


def load_table(opts: TableReadOptions) -> Any:
    """The pyiceberg table the options name, as the catalog has it now (OptionError when there is none)."""
    try:
        require("table", "spark.read.format('tierlog').option('table', ...)")
    except MissingExtraError as e:
        raise OptionError(f"table: {e}") from None
    from tierlog.tiered import RemoteStorageConfigError, RemoteStorageError
    try:
        table = _catalog(replace(opts, table="", dead_letter=False)).load(opts.table, dead_letter=opts.dead_letter)
    except (RemoteStorageConfigError, RemoteStorageError) as e:
        raise OptionError(f"table: {e}") from None
    if table is None:
        raise OptionError(f"table: no {'dead-letter ' if opts.dead_letter else ''}table of topic {opts.table!r} "
                          f"in {opts.storage}")
    return table


@functools.lru_cache(maxsize=8)
def _catalog(where: TableReadOptions) -> Any:
    """The catalog of a store, opened once per Python process (a planning worker Spark reuses plans
    each read with it: the engine, the catalog's own tables and namespaces are not made again)."""
    from tierlog.tiered import object_store_from_config, object_store_from_location
    from tierlog.tiered.table.catalog import TableCatalog, s3_io, table_settings
    # storage "": the rsm.config.storage.* settings say where (remoteStorage=table)
    store = object_store_from_location(where.storage, dict(where.storage_settings)) if where.storage else \
        object_store_from_config(dict(where.storage_settings))
    settings = table_settings(store, {**dict(where.catalog_settings), "tierlog.table.catalog.type": where.catalog_type,
                                      "tierlog.table.catalog.uri": where.catalog_uri}, s3_io(store))
    catalog = TableCatalog(settings)
    _ = catalog.catalog         # opened now: a failure is not cached (lru_cache keeps only results)
    return catalog


def arrow_schema(table: Any) -> pa.Schema:
    """The table's columns as Spark takes them (plain, not large, strings, binaries and lists)."""
    return pa.schema([pa.field(f.name, _plain(f.type), f.nullable) for f in table.schema().as_arrow()])


def _plain(t: pa.DataType) -> pa.DataType:
    if pa.types.is_large_string(t):
        return pa.string()
    if pa.types.is_large_binary(t):
        return pa.binary()
    if pa.types.is_large_list(t) or pa.types.is_list(t):
        return pa.list_(pa.field("element", _plain(t.value_type), t.value_field.nullable))
    if pa.types.is_struct(t):
        return pa.struct([pa.field(t.field(i).name, _plain(t.field(i).type), t.field(i).nullable)
                          for i in range(t.num_fields)])
    return t


@dataclass(frozen=True)
class TablePartition(InputPartition):
    files: tuple[str, ...]


class TierlogTableReader(DataSourceReader):
    def __init__(self, opts: TableReadOptions, schema: pa.Schema) -> None:
        self.opts, self.schema = opts, schema
        self.row_filter = ""        # pyiceberg's filter syntax, from pushFilters

    def pushFilters(self, filters: list[Filter]) -> Iterator[Filter]:
        """Use what maps onto the table for planning; give every filter back (Spark checks the rows)."""
        clauses = [c for c in (_clause(f, self.schema) for f in filters) if c]
        self.row_filter = " and ".join(clauses)
        yield from filters

    def partitions(self) -> list[TablePartition]:
        table = load_table(self.opts)
        scan = table.scan(row_filter=self.row_filter) if self.row_filter else table.scan()
        groups: list[list[str]] = []
        size = TASK_BYTES_MAX
        for task in sorted(scan.plan_files(), key=lambda t: (t.file.partition[0], t.file.file_path)):
            if size + task.file.file_size_in_bytes > TASK_BYTES_MAX:
                groups.append([])
                size = 0
            groups[-1].append(task.file.file_path)
            size += task.file.file_size_in_bytes
        return [TablePartition(tuple(g)) for g in groups]

    def read(self, partition: InputPartition) -> Iterator[pa.RecordBatch]:
        if not isinstance(partition, TablePartition):
            return          # PySpark's stand-in partition of an empty plan
        wanted = set(self.schema.names)
        for path in partition.files:
            with open_data_file(path, self.opts) as f:
                parquet = pq.ParquetFile(f)
                columns = [n for n in parquet.schema_arrow.names if n in wanted]    # only what the schema names
                for batch in parquet.iter_batches(batch_size=65536, columns=columns):
                    yield _conform(batch, self.schema)


@functools.lru_cache(maxsize=8)
def _file_io(opts: TableReadOptions) -> Any:
    """The table's file IO, once per Python worker (the tasks it runs share it)."""
    return load_table(opts).io


def open_data_file(path: str, opts: TableReadOptions) -> Any:
    """A data file as a pyarrow file: a local one (fs store) memory-mapped, so the worker needs no
    catalog and no pyiceberg import (seconds on a busy worker) and pyarrow reads it without a Python
    call per read (a Python file object made a 16 MiB file's read 5x slower); others through the
    table's file IO."""
    if path.startswith("file://"):
        return pa.memory_map(urllib.parse.unquote(urllib.parse.urlsplit(path).path))
    return _file_io(opts).new_input(path).open()


def chosen_table_columns(schema: StructType, table_schema: pa.Schema) -> pa.Schema:
    """The table's columns a user schema names (``.schema("customer string, amount double")``: column
    pruning, only those are read from the Parquet files), in the schema's order; the whole table's
    schema as Spark passes it when none was given. OptionError for a name the table does not have or a
    type that differs."""
    from pyspark.sql.pandas.types import from_arrow_type

    def ddl(field: pa.Field) -> str:
        return from_arrow_type(field.type).simpleString()

    def refused(why: str) -> OptionError:
        return OptionError(f"schema: {why}; its columns are " + ", ".join(f"{t.name} {ddl(t)}" for t in table_schema))
    fields = []
    for f in schema.fields:
        index = table_schema.get_field_index(f.name)
        if index < 0:
            raise refused(f"the table has no column {f.name!r}")
        field = table_schema.field(index)
        if ddl(field) != f.dataType.simpleString():     # nullability aside
            raise refused(f"column {f.name!r} is {ddl(field)}, not {f.dataType.simpleString()}")
        if field.nullable and not f.nullable:
            raise OptionError(f"schema: column {f.name!r} may be null in the table; declare it without NOT NULL")
        fields.append(field.with_nullable(f.nullable))      # as Spark checks the batches
    return pa.schema(fields)


def _conform(batch: pa.RecordBatch, schema: pa.Schema) -> pa.RecordBatch:
    """``batch`` with ``schema``'s columns in its order: cast where present, nulls where a file predates one."""
    columns = []
    for field in schema:
        index = batch.schema.get_field_index(field.name)
        columns.append(batch.column(index).cast(field.type) if index >= 0 else pa.nulls(batch.num_rows, field.type))
    return pa.RecordBatch.from_arrays(columns, schema=schema)


def _clause(f: Filter, schema: pa.Schema) -> str | None:
    """``f`` in pyiceberg's filter syntax when it is on a top-level column with a literal it can say."""
    attribute: tuple[str, ...] = tuple(getattr(f, "attribute", ()))
    if len(attribute) != 1 or attribute[0] not in schema.names:
        return None
    name = attribute[0]
    if not name.replace("_", "").isalnum():
        return None
    if isinstance(f, IsNull | IsNotNull):
        return f"{name} is {'not ' if isinstance(f, IsNotNull) else ''}null"
    if isinstance(f, In):
        values = [_literal(v) for v in f.value]
        return None if None in values or not values else f"{name} in ({', '.join(v for v in values if v)})"
    op = _OPS.get(type(f))
    value = _literal(getattr(f, "value", None))
    return None if op is None or value is None else f"{name} {op} {value}"


def _literal(v: Any) -> str | None:
    if isinstance(v, bool):
        return "true" if v else "false"
    if isinstance(v, int | float):
        return repr(v)
    if isinstance(v, str) and "'" not in v:
        return f"'{v}'"
    if isinstance(v, datetime.datetime):
        aware = v if v.tzinfo else v.replace(tzinfo=datetime.UTC)
        return f"'{aware.isoformat()}'"
    return None
