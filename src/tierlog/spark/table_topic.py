"""``remoteStorage=table``: a topic read served by the topic's Iceberg table where it covers the range.

A read of a topic with ``tierlog.table.mode=key_value`` (docs/tables.md) is planned as
any other (Metadata, ListOffsets at read_committed), then each partition's range is
cut (``table_cover.cut_range``) by what the table's loaded metadata says it holds:
the table's piece is read from its Parquet files, one task per group of files of up
to 128 MiB, and the rest (below the table's first offset, above the last it covers:
the local tail, or segments a backfill has not reached) is planned as
``remoteStorage=auto`` plans it, from remote segments or through the brokers. Every
offset is read once, and the rows are those of a read_committed read: the table holds
no aborted transaction and no control record, so ``remoteStorage=table`` needs
``kafka.isolation.level=read_committed`` (refused otherwise, ``options.py``).

Which tables: the store is found as ``auto`` finds it (the brokers' ``rsm.config.storage.*``,
the source's own ``rsm.config.storage.*`` options winning), the catalog from the
``catalogType`` / ``catalogUri`` options (default: the store's own SQLite catalog, as
the brokers' default). A topic is read from its table only when the table has exactly
the ``key_value`` columns (a ``value_json`` table holds parsed values, not the bytes);
otherwise, or when no store or catalog answers, its ranges go the ``auto`` way (info log).
"""

from __future__ import annotations

import logging
from collections.abc import Iterator
from dataclasses import replace
from typing import Any

import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.parquet as pq
from pyspark.sql.datasource import InputPartition

from tierlog.client import Cluster
from tierlog.records.arrow_records import HEADERS_TYPE, KAFKA_SCHEMA, KAFKA_SCHEMA_WITH_HEADERS
from tierlog.spark.direct_plan import StoreFinder, plan_partitions
from tierlog.spark.options import REMOTE_AUTO, REMOTE_TABLE, OptionError, SourceOptions
from tierlog.spark.planning import OffsetRange
from tierlog.spark.remote_auto import detect
from tierlog.spark.table_cover import DataFile, cut_range, group_files
from tierlog.spark.table_read import TableReadOptions, load_table, open_data_file
from tierlog.storage.table_config import KEY_VALUE_COLUMNS

__all__ = ["TableRangePartition", "plan_with_tables", "read_table_range", "segment_options"]

log = logging.getLogger(__name__)
_BATCH_ROWS = 65536
_TABLE_NAMES = {"timestampType": "timestamp_type"}     # the source's column names the table spells otherwise


class TableRangePartition(InputPartition):
    """``[start, end)`` of one topic partition read from the table's data ``files`` (oldest first)."""

    def __init__(self, r: OffsetRange, files: tuple[str, ...], table: TableReadOptions) -> None:
        super().__init__((r.topic, r.partition, r.start, r.end))
        self.topic, self.partition, self.start, self.end = r.topic, r.partition, r.start, r.end
        self.files, self.table = files, table

    def __repr__(self) -> str:
        return f"TableRangePartition({self.topic}-{self.partition} [{self.start}, {self.end}) {len(self.files)} files)"


def segment_options(opts: SourceOptions) -> SourceOptions:
    """The options the rest of a ``remoteStorage=table`` read is planned with (``auto``)."""
    return replace(opts, remote_storage=REMOTE_AUTO) if opts.remote_storage == REMOTE_TABLE else opts


def plan_with_tables(opts: SourceOptions, cluster: Cluster, ranges: list[OffsetRange],
                     finder: StoreFinder) -> list[InputPartition]:
    """The tasks reading ``ranges``: from the topics' tables where they cover them (``remoteStorage=table``),
    the rest as ``plan_partitions`` plans it (``finder`` made with ``segment_options``)."""
    rest_opts = segment_options(opts)
    ranges = [r for r in ranges if r.size > 0]
    if opts.remote_storage != REMOTE_TABLE or not ranges:
        return [*plan_partitions(rest_opts, cluster, ranges, finder)]
    tables = _open_tables(cluster, sorted({r.topic for r in ranges}), opts)
    parts: list[InputPartition] = []
    rest: list[OffsetRange] = []
    files_of: dict[str, dict[int, list[DataFile]]] = {}
    for r in ranges:
        found = tables.get(r.topic)
        if found is None:
            rest.append(r)
            continue
        spec, table, covered = found
        if r.topic not in files_of:
            files_of[r.topic] = _data_files(table, sorted({x.partition for x in ranges if x.topic == r.topic}))
        cut = cut_range(r, covered.get(r.partition, -1), files_of[r.topic].get(r.partition, []))
        rest += cut.rest
        if cut.table is not None:
            parts += [TableRangePartition(cut.table, tuple(f.path for f in group), spec)
                      for group in group_files(cut.files)]
    return parts + plan_partitions(rest_opts, cluster, rest, finder)


def _open_tables(cluster: Cluster, topics: list[str], opts: SourceOptions) -> dict[str, tuple[TableReadOptions, Any,
                                                                                         dict[int, int]]]:
    """Each topic's key_value table as loaded now, with the offsets it covers per partition."""
    found = detect(cluster, topics, segment_options(opts))
    if found is None:
        log.info("tierlog: remoteStorage=table: no store found for %s: read as remoteStorage=auto", ", ".join(topics))
        return {}
    storage = tuple((k, v) for k, v in found[0].settings if k.startswith("rsm.config.storage."))
    catalog_type, catalog_uri, catalog = opts.table_catalog
    from tierlog.tiered.table.catalog import covered_offsets
    out = {}
    for topic in topics:
        spec = TableReadOptions(topic, "", catalog_uri, catalog_type, storage_settings=storage, catalog_settings=catalog)
        try:
            table = load_table(spec)
        except OptionError as exc:
            log.info("tierlog: remoteStorage=table reads %s as remoteStorage=auto: %s", topic, exc)
            continue
        if [f.name for f in table.schema().fields] != list(KEY_VALUE_COLUMNS):
            log.info("tierlog: remoteStorage=table reads %s as remoteStorage=auto: its table is not key_value's "
                     "(it does not hold the values' bytes)", topic)
            continue
        out[topic] = (spec, table, covered_offsets(table))
    return out


def _data_files(table: Any, partitions: list[int]) -> dict[int, list[DataFile]]:
    """The table's data files of ``partitions`` with their offset bounds (from the files' statistics)."""
    from tierlog.tiered.table.catalog import offset_bounds
    out: dict[int, list[DataFile]] = {}
    for path, partition, lower, upper, size in offset_bounds(table, partitions):
        out.setdefault(partition, []).append(DataFile(path, lower, upper, size))
    return out


def read_table_range(part: TableRangePartition, include_headers: bool,
                     columns: tuple[str, ...] | None = None) -> Iterator[pa.RecordBatch]:
    """The rows of ``part``'s offsets from its files, in the source's schema (``KAFKA_SCHEMA``), or
    only ``columns`` of it (a user schema, ``spark/columns.py``): then only those are read from the
    Parquet files (and ``offset``, to cut a range's first and last file), so a query without the
    values never decompresses them."""
    names = columns or tuple(f.name for f in (KAFKA_SCHEMA_WITH_HEADERS if include_headers else KAFKA_SCHEMA))
    wanted = {_TABLE_NAMES.get(n, n) for n in names} | {"offset"}
    read = [c for c in KEY_VALUE_COLUMNS if c in wanted]
    for path in part.files:
        with open_data_file(path, part.table) as f:
            for batch in pq.ParquetFile(f).iter_batches(batch_size=_BATCH_ROWS, columns=read):
                rows = _topic_rows(batch, part, names)
                if rows.num_rows:
                    yield rows


def _topic_rows(batch: pa.RecordBatch, part: TableRangePartition, names: tuple[str, ...]) -> pa.RecordBatch:
    """``batch``'s rows of ``part``'s offsets as the source's columns ``names``; a batch wholly inside
    them (all but a range's first and last file) is not filtered: a filter copies every column, values too."""
    bounds = pc.min_max(batch.column("offset"))
    if batch.num_rows and (bounds["min"].as_py() < part.start or bounds["max"].as_py() >= part.end):
        offsets = batch.column("offset")
        batch = batch.filter(pc.and_(pc.greater_equal(offsets, part.start), pc.less(offsets, part.end)))
    fields = [KAFKA_SCHEMA_WITH_HEADERS.field(n) for n in names]
    return pa.RecordBatch.from_arrays([_column(batch, n, part.topic) for n in names], schema=pa.schema(fields))


def _column(batch: pa.RecordBatch, name: str, topic: str) -> pa.Array:
    """The source's column ``name`` from the table's ``batch``."""
    if name == "topic":
        return pa.repeat(pa.scalar(topic, pa.string()), batch.num_rows)
    column = batch.column(_TABLE_NAMES.get(name, name))
    if name == "headers":
        return _headers(column)
    return column.cast(KAFKA_SCHEMA_WITH_HEADERS.field(name).type)


def _headers(table_headers: pa.Array) -> pa.Array:
    """The table's headers as the source gives them: a record without headers has null (Kafka does not
    tell an empty list from none; the table keeps an empty list)."""
    h = table_headers.cast(HEADERS_TYPE)
    return pa.ListArray.from_arrays(h.offsets, h.values, type=HEADERS_TYPE, mask=pc.equal(pc.list_value_length(h), 0))
