"""The Iceberg data file entry of a Parquet file the writer has just written, from its own footer.

pyiceberg's ``add_files`` opens every file it adds again (through the table's file IO, on
a thread of its own pool) to read the Parquet footer it derives the entry from: the
column statistics Iceberg plans with (offset and timestamp bounds), the row count, the
partition value. The writer holds that footer already (``pyarrow.parquet.ParquetWriter``
keeps it after ``close``) and the file's size from its verification, so the entry is
built from them, with the checks and statistics ``add_files`` applies (pyiceberg 0.12's
``parquet_file_to_data_file``; the version is pinned in pyproject.toml), and the table's
name mapping set as ``add_files`` sets it (the files carry no Iceberg field ids).
"""

from __future__ import annotations

from dataclasses import dataclass, replace
from typing import Any

import pyarrow.parquet as pq
from pyiceberg.io.pyarrow import (
    MetricModeTypes,
    MetricsMode,
    StatisticsCollector,
    _check_pyarrow_schema_compatible,
    compute_statistics_plan,
    data_file_statistics_from_parquet_metadata,
    parquet_path_to_id_mapping,
)
from pyiceberg.manifest import DataFile, DataFileContent, FileFormat
from pyiceberg.table import TableProperties, Transaction
from pyiceberg.table.metadata import TableMetadata

__all__ = ["PLANS_KEPT", "WrittenFile", "append_written"]

PLANS_KEPT = 64         # statistics plans kept (one per table schema and file schema); all dropped past it
_NO_METRICS = MetricsMode(MetricModeTypes.NONE)
_PLANS: dict[tuple[Any, ...], tuple[dict[int, StatisticsCollector], dict[str, int]]] = {}


@dataclass(frozen=True, slots=True)
class WrittenFile:
    """A Parquet file in the store: where readers open it, its footer and its size."""

    uri: str
    footer: pq.FileMetaData
    size: int


def data_file(metadata: TableMetadata, written: WrittenFile) -> DataFile:
    """The table's data file entry for ``written`` (ValueError if its columns do not fit the table)."""
    schema = metadata.schema()
    plan, mapping = _plan(metadata, written.footer)
    statistics = data_file_statistics_from_parquet_metadata(
        parquet_metadata=written.footer, stats_columns=plan, parquet_column_mapping=mapping)
    return DataFile.from_args(content=DataFileContent.DATA, file_path=written.uri, file_format=FileFormat.PARQUET,
                              partition=statistics.partition(metadata.spec(), schema),
                              file_size_in_bytes=written.size, sort_order_id=None, spec_id=metadata.default_spec_id,
                              equality_ids=None, key_metadata=None, **statistics.to_serialized_dict())


def _plan(metadata: TableMetadata, footer: pq.FileMetaData) -> tuple[dict[int, StatisticsCollector], dict[str, int]]:
    """The statistics plan and column ids for files like ``footer`` in the table, once per table schema
    and file schema (checked compatible then). Columns the file has no statistics for (the writer keeps
    none of the record bytes: ``arrow.parquet_options``) get no metrics, rather than a warning per
    column and file from pyiceberg."""
    arrow_schema = footer.schema.to_arrow_schema()
    unset = frozenset(c.path_in_schema for c in (footer.row_group(0).column(i) for i in range(footer.num_columns))
                      if not c.is_stats_set) if footer.num_row_groups else frozenset()
    key = (metadata.table_uuid, metadata.current_schema_id, metadata.format_version, arrow_schema, unset)
    found = _PLANS.get(key)
    if found is None:
        schema = metadata.schema()
        _check_pyarrow_schema_compatible(schema, arrow_schema, format_version=metadata.format_version)
        plan, mapping = compute_statistics_plan(schema, metadata.properties), parquet_path_to_id_mapping(schema)
        for path in unset:
            if mapping.get(path) in plan:
                plan[mapping[path]] = replace(plan[mapping[path]], mode=_NO_METRICS)
        if len(_PLANS) >= PLANS_KEPT:
            _PLANS.clear()
        found = _PLANS[key] = (plan, mapping)
    return found


def append_written(tx: Transaction, files: list[WrittenFile], snapshot_properties: dict[str, str]) -> None:
    """``tx.add_files`` of ``files`` without reading them again: one append, merging the table's
    manifests once 100 or more have gathered (``catalog.TABLE_PROPERTIES``)."""
    if tx.table_metadata.name_mapping() is None:
        tx.set_properties({TableProperties.DEFAULT_NAME_MAPPING:
                           tx.table_metadata.schema().name_mapping.model_dump_json()})
    entries = [data_file(tx.table_metadata, f) for f in files]
    with tx.update_snapshot(snapshot_properties=snapshot_properties).merge_append() as append:
        for entry in entries:
            append.append_data_file(entry)
