"""Arrow schemas of the tables and the row groups a segment's records become.

``key_value`` (Redpanda's key_value mode's columns): partition int32, offset int64,
timestamp (UTC, microseconds; Kafka's are milliseconds), timestamp_type int32
(Kafka's TimestampType id: 0 CreateTime, 1 LogAppendTime), key binary, value binary,
headers list<struct<key string, value binary>>. ``value_json``: the same without
``value``, then one column per schema property; its dead-letter table is
``key_value``'s columns plus ``error`` string. ``RowGroups`` routes decoded batches
(the vectorised decoder's columns) to the table (and the dead-letter table) and hands
back Arrow tables of about ``ROW_GROUP_RECORDS`` rows, so a segment is written in
bounded pieces; only ``value_json`` parses values one by one (the JSON).
"""

from __future__ import annotations

import numpy as np
import pyarrow as pa

from tierlog.storage.table_config import KEY_VALUE, VALUE_JSON, ValueSchema

from .json_values import parse_value

__all__ = ["ROW_GROUP_RECORDS", "RowGroups", "dead_letter_schema", "key_value_schema", "parquet_options",
           "table_schema", "value_json_schema"]

ROW_GROUP_RECORDS = 65536
_HEADER = pa.struct([pa.field("key", pa.string(), nullable=False), pa.field("value", pa.binary())])
_META = [pa.field("partition", pa.int32(), nullable=False), pa.field("offset", pa.int64(), nullable=False),
         pa.field("timestamp", pa.timestamp("us", tz="UTC"), nullable=False),
         pa.field("timestamp_type", pa.int32(), nullable=False), pa.field("key", pa.binary())]
_HEADERS = pa.field("headers", pa.list_(pa.field("element", _HEADER, nullable=False)), nullable=False)
_TYPES = {"integer": pa.int64(), "number": pa.float64(), "string": pa.string(), "boolean": pa.bool_()}


def key_value_schema() -> pa.Schema:
    return pa.schema([*_META, pa.field("value", pa.binary()), _HEADERS])


def dead_letter_schema() -> pa.Schema:
    return pa.schema([*key_value_schema(), pa.field("error", pa.string(), nullable=False)])


def value_json_schema(schema: ValueSchema) -> pa.Schema:
    return pa.schema([*_META, _HEADERS, *(pa.field(f.name, _TYPES[f.type], nullable=not f.required)
                                          for f in schema.fields)])


_NO_DICTIONARY = ("offset", "timestamp", "value", "headers.list.element.value")   # unique or large per record
_NO_STATISTICS = ("key", "value", "headers.list.element.key", "headers.list.element.value", "error")


def parquet_options(schema: pa.Schema) -> dict[str, object]:
    """The Parquet writer's per-column choices for a table of ``schema``: dictionary encoding only where
    values repeat (a dictionary of unique offsets or values is built, then dropped, for every row group:
    a third of the write), statistics only where a reader prunes by them (offsets, timestamps, the value
    schema's columns; Iceberg takes a data file's bounds from them), none of the record bytes."""
    paths = _leaf_paths(schema)
    return {"compression": "zstd", "use_dictionary": [p for p in paths if p not in _NO_DICTIONARY],
            "write_statistics": [p for p in paths if p not in _NO_STATISTICS]}


def _leaf_paths(schema: pa.Schema) -> list[str]:
    out = []
    for f in schema:
        if f.name == "headers":
            out += ["headers.list.element.key", "headers.list.element.value"]
        else:
            out.append(f.name)
    return out


def table_schema(mode: str, schema: ValueSchema | None) -> pa.Schema:
    if mode == KEY_VALUE:
        return key_value_schema()
    assert mode == VALUE_JSON and schema is not None, mode
    return value_json_schema(schema)


class RowGroups:
    """Decoded batches in (``rows.committed_batches``), Arrow tables out: ``add`` each batch,
    ``full`` / ``take`` when a group is due (the Parquet writer cuts ``ROW_GROUP_RECORDS`` groups)."""

    def __init__(self, mode: str, partition: int, schema: ValueSchema | None) -> None:
        self.mode, self.partition, self.value_schema = mode, partition, schema
        self.schemas = {"main": table_schema(mode, schema), "dead": dead_letter_schema()}
        self.pending: dict[str, list[pa.Table]] = {"main": [], "dead": []}
        self.rows = {"main": 0, "dead": 0}
        self.dead_letters = 0

    def add(self, batch: pa.RecordBatch, main_above: int = -1, dead_above: int = -1) -> None:
        """Route ``batch``'s records to the table or the dead-letter table, unless that one covers them
        already (offsets at or below ``main_above`` / ``dead_above``: an earlier attempt committed them)."""
        rows = _key_value_rows(batch)
        offsets = batch.column("offset").to_numpy()
        if self.mode == KEY_VALUE:
            self._keep("main", rows, offsets > main_above)
            return
        assert self.value_schema is not None
        parsed = [parse_value(v, self.value_schema) for v in batch.column("value").to_pylist()]
        ok = np.fromiter((row is not None for row, _ in parsed), dtype=bool, count=len(parsed))
        main, dead = ok & (offsets > main_above), ~ok & (offsets > dead_above)
        if main.any():
            values = [row for (row, _), m in zip(parsed, main, strict=True) if m and row is not None]
            columns = {f.name: pa.array([v[f.name] for v in values], _TYPES[f.type]) for f in self.value_schema.fields}
            self._keep("main", rows.drop_columns(["value"]), main, columns)
        if dead.any():
            errors = [error for (_, error), d in zip(parsed, dead, strict=True) if d]
            self._keep("dead", rows, dead, {"error": pa.array(errors, pa.string())})
            self.dead_letters += len(errors)

    def _keep(self, which: str, rows: pa.Table, mask: np.ndarray, extra: dict[str, pa.Array] | None = None) -> None:
        if not mask.any():
            return
        kept = rows if mask.all() else rows.filter(pa.array(mask))
        columns = [*kept.columns, *(extra or {}).values()]
        self.pending[which].append(pa.Table.from_arrays(columns, schema=self.schemas[which]))
        self.rows[which] += kept.num_rows

    def full(self) -> bool:
        return max(self.rows.values()) >= ROW_GROUP_RECORDS

    def take(self) -> tuple[pa.Table, pa.Table | None]:
        """The rows gathered since the last take: (table rows, dead-letter rows or None)."""
        main, dead = (pa.concat_tables(self.pending[w]) if self.pending[w] else self.schemas[w].empty_table()
                      for w in ("main", "dead"))
        for w in self.pending:
            self.pending[w].clear()
            self.rows[w] = 0
        return main, dead if self.mode == VALUE_JSON else None


def _key_value_rows(batch: pa.RecordBatch) -> pa.Table:
    """The decoder's columns (``records.arrow_records.KAFKA_SCHEMA_WITH_HEADERS``) as ``key_value``'s:
    headers a list (empty, not null) of non-null entries, the column order of the table."""
    headers = batch.column("headers")
    entries = pa.ListArray.from_arrays(headers.offsets, headers.values.cast(_HEADER), type=_HEADERS.type)
    names = ["partition", "offset", "timestamp", "timestampType", "key", "value"]
    columns = [batch.column(n) for n in names]
    return pa.Table.from_arrays([*columns, entries], schema=key_value_schema())
