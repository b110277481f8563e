"""Arrow schemas of the tables and the row groups a segment's records become.

``key_value`` (Redpanda's key_value mode's columns): partition int32, offset int64,
timestamp (UTC, microseconds; Kafka's are milliseconds), timestamp_type int32
(Kafka's TimestampType id: 0 CreateTime, 1 LogAppendTime), key binary, value binary,
headers list<struct<key string, value binary>>. ``value_json``: the same without
``value``, then one column per schema property; its dead-letter table is
``key_value``'s columns plus ``error`` string. ``RowGroups`` routes records to the
table (and the dead-letter table) and hands back Arrow tables of at most
``ROW_GROUP_RECORDS`` rows, so a segment is written in bounded pieces.
"""

from __future__ import annotations

from typing import Any

import pyarrow as pa

from tierlog.storage.table_config import KEY_VALUE, VALUE_JSON, ValueSchema

from .json_values import parse_value
from .rows import SegmentRecord

__all__ = ["ROW_GROUP_RECORDS", "RowGroups", "dead_letter_schema", "key_value_schema", "table_schema",
           "value_json_schema"]

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


def table_schema(mode: str, schema: ValueSchema | None) -> pa.Schema:
    if mode == KEY_VALUE:
        return key_value_schema()
    assert mode == VALUE_JSON and schema is not None, mode
    return value_json_schema(schema)


class _Columns:
    def __init__(self, schema: pa.Schema) -> None:
        self.schema = schema
        self.columns: dict[str, list[Any]] = {name: [] for name in schema.names}

    def __len__(self) -> int:
        return len(self.columns["offset"])

    def take(self) -> pa.Table:
        table = pa.table({n: pa.array(v, self.schema.field(n).type) for n, v in self.columns.items()},
                         schema=self.schema)
        for v in self.columns.values():
            v.clear()
        return table


class RowGroups:
    """Records in, Arrow tables out: ``add`` each record, ``full`` / ``take`` when a group is due."""

    def __init__(self, mode: str, partition: int, schema: ValueSchema | None) -> None:
        self.mode, self.partition, self.value_schema = mode, partition, schema
        self.main = _Columns(table_schema(mode, schema))
        self.dead = _Columns(dead_letter_schema()) if mode == VALUE_JSON else None
        self.dead_letters = 0

    def add(self, r: SegmentRecord, main_above: int = -1, dead_above: int = -1) -> None:
        """Route ``r`` to the table or the dead-letter table, unless that one covers it already
        (offsets at or below ``main_above`` / ``dead_above``: an earlier attempt committed them)."""
        if self.mode == KEY_VALUE:
            if r.offset <= main_above:
                return
            _append_meta(self.main, self.partition, r)
            self.main.columns["value"].append(r.value)
            return
        assert self.value_schema is not None and self.dead is not None
        row, error = parse_value(r.value, self.value_schema)
        if row is None:
            if r.offset <= dead_above:
                return
            _append_meta(self.dead, self.partition, r)
            self.dead.columns["value"].append(r.value)
            self.dead.columns["error"].append(error)
            self.dead_letters += 1
            return
        if r.offset <= main_above:
            return
        _append_meta(self.main, self.partition, r)
        for name, v in row.items():
            self.main.columns[name].append(v)

    def full(self) -> bool:
        return len(self.main) >= ROW_GROUP_RECORDS or (self.dead is not None and len(self.dead) >= ROW_GROUP_RECORDS)

    def take(self) -> tuple[pa.Table, pa.Table | None]:
        """The rows gathered since the last take: (table rows, dead-letter rows or None)."""
        return self.main.take(), None if self.dead is None else self.dead.take()


def _append_meta(cols: _Columns, partition: int, r: SegmentRecord) -> None:
    c = cols.columns
    c["partition"].append(partition)
    c["offset"].append(r.offset)
    c["timestamp"].append(r.timestamp * 1000)
    c["timestamp_type"].append(r.timestamp_type)
    c["key"].append(r.key)
    c["headers"].append([{"key": k, "value": v} for k, v in r.headers])
