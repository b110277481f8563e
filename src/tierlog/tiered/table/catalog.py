"""The Iceberg catalog of a cluster's topic tables (pyiceberg), and what each table records of the log.

Where things are (docs/tables.md):

- the warehouse is ``tierlog-tables/`` in the remote store (``file:///<root>/tierlog-tables`` or
  ``s3://<bucket>/<prefix>tierlog-tables``); a topic's table at ``topics/<topic>``, its
  dead-letter table at ``dead-letter/<topic>``;
- the catalog: ``tierlog.table.catalog.type`` ``sql`` (default) or ``rest`` at
  ``tierlog.table.catalog.uri``; on the fs store the default is pyiceberg's SQL catalog
  on SQLite at ``<root>/tierlog-tables/catalog.db`` (no server; every broker sharing the
  directory shares it, as they share the store); on S3 there is no default (each
  broker's own SQLite file would be a different catalog of the same files): the
  URI of a catalog every broker reaches is required;
- identifiers ``tierlog.<topic>`` and ``tierlog_dead_letter.<topic>`` (the topic name
  is one identifier part, dots and all); partitioned by the Kafka partition (identity).

What a table holds of the log: table property ``tierlog.last-offset.<partition>``, the
last log offset the table covers for that partition (control and aborted offsets
included), set in the same commit as the data files; each commit's snapshot summary
carries the same key with ``tierlog.segment-id``, ``tierlog.start-offset``. A
commit touches only its partition's key, so pyiceberg's retry of a commit that
lost a race with another partition's leader re-applies it unchanged.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pyarrow as pa
from pyiceberg.catalog import Catalog, load_catalog
from pyiceberg.conversions import from_bytes
from pyiceberg.exceptions import NoSuchTableError, TableAlreadyExistsError
from pyiceberg.io.pyarrow import pyarrow_to_schema
from pyiceberg.partitioning import PartitionField, PartitionSpec
from pyiceberg.schema import Schema
from pyiceberg.table import Table
from pyiceberg.table.name_mapping import MappedField, NameMapping
from pyiceberg.transforms import IdentityTransform
from pyiceberg.types import LongType

from tierlog.tiered.object_store import ObjectStore, RemoteStorageError

__all__ = ["CATALOG_TYPE", "CATALOG_URI", "DEAD_LETTER_NAMESPACE", "LAST_OFFSET_PREFIX", "LOG_START_PREFIX",
           "NAMESPACE", "NO_PYICEBERG_RETRY", "WAREHOUSE_KEY",
           "TableCatalog", "TableSettings", "covered_offsets", "offset_bounds", "s3_io", "store_uri", "table_settings"]

CATALOG_TYPE = "tierlog.table.catalog.type"
CATALOG_URI = "tierlog.table.catalog.uri"
WAREHOUSE_KEY = "tierlog-tables"
NAMESPACE, DEAD_LETTER_NAMESPACE = "tierlog", "tierlog_dead_letter"
LAST_OFFSET_PREFIX = "tierlog.last-offset."
LOG_START_PREFIX = "tierlog.log-start-offset."
NO_PYICEBERG_RETRY = {"commit.retry.num-retries": "0"}   # the writer retries, checking what is covered (writer.py)
_PARTITION_FIELD_ID = 1000
_OPEN_ATTEMPTS = 5


def store_uri(store: ObjectStore, key: str) -> str:
    """The URI an Iceberg reader opens for ``key`` of ``store`` (``file://...`` or ``s3://...``)."""
    where = store.describe()
    if where.startswith("s3://"):
        return where.rstrip("/") + "/" + key
    return Path(where).resolve().as_uri() + "/" + key


@dataclass(frozen=True, slots=True)
class TableSettings:
    catalog: dict[str, str]                 # pyiceberg load_catalog properties
    warehouse: str                          # URI of tierlog-tables/
    local_catalog_dir: Path | None = None   # the SQLite file's directory, made on first use
    io: dict[str, str] = field(default_factory=dict)


def table_settings(store: ObjectStore, broker_config: Mapping[str, Any],
                   s3_io: Mapping[str, str] | None = None) -> TableSettings:
    """The catalog for ``store``; RemoteStorageError naming the setting when none can be chosen."""
    kind = str(broker_config.get(CATALOG_TYPE) or "sql").strip().lower()
    uri = str(broker_config.get(CATALOG_URI) or "").strip()
    warehouse = store_uri(store, WAREHOUSE_KEY)
    local_dir = None
    if kind not in ("sql", "rest"):
        raise RemoteStorageError(f"{CATALOG_TYPE} must be sql or rest, got {kind!r}")
    if not uri:
        if kind == "rest" or warehouse.startswith("s3://"):
            raise RemoteStorageError(f"{CATALOG_URI} is required for tables on {store.describe()} (a catalog every "
                                     "broker shares: a SQL database URI or a REST catalog)")
        local_dir = Path(store.describe()).resolve() / WAREHOUSE_KEY
        uri = f"sqlite:///{local_dir / 'catalog.db'}"
    io = dict(s3_io or {})
    return TableSettings({"type": kind, "uri": uri, "warehouse": warehouse, **io}, warehouse, local_dir, io)


def s3_io(store: ObjectStore) -> dict[str, str]:
    """pyiceberg's S3 file IO properties for an S3 store's own settings (credentials: the AWS chain)."""
    s3 = getattr(store, "settings", None)
    if s3 is None or not store.describe().startswith("s3://"):
        return {}
    out = {}
    if s3.endpoint_url:
        out["s3.endpoint"] = s3.endpoint_url
    if s3.region:
        out["s3.region"] = s3.region
    if s3.path_style:
        out["s3.force-virtual-addressing"] = "false"
    return out


def offset_bounds(table: Table, partitions: Sequence[int]) -> list[tuple[str, int, int, int, int]]:
    """The data files of ``partitions`` as (path, partition, lowest offset, highest offset, bytes), from
    the files' statistics in the table's current snapshot."""
    field_id = table.schema().find_field("offset").field_id
    listed = ", ".join(str(int(p)) for p in partitions)
    out = []
    for task in table.scan(row_filter=f"partition in ({listed})").plan_files():
        f = task.file
        lower, upper = f.lower_bounds.get(field_id), f.upper_bounds.get(field_id)
        if lower is None or upper is None:
            raise RemoteStorageError(f"{f.file_path}: no offset bounds in the table's statistics")
        out.append((f.file_path, int(f.partition[0]), int(from_bytes(LongType(), lower)),
                    int(from_bytes(LongType(), upper)), int(f.file_size_in_bytes)))
    return out


def covered_offsets(table: Table) -> dict[int, int]:
    """Per partition, the last log offset the table covers (from its properties)."""
    return {int(k[len(LAST_OFFSET_PREFIX):]): int(v) for k, v in table.properties.items()
            if k.startswith(LAST_OFFSET_PREFIX)}


class TableCatalog:
    """Open (create, evolve) a topic's table and dead-letter table."""

    def __init__(self, settings: TableSettings) -> None:
        self.settings = settings
        self._catalog: Catalog | None = None
        self._lock = threading.Lock()       # copier threads open it at once

    @property
    def catalog(self) -> Catalog:
        with self._lock:
            if self._catalog is None:
                self._catalog = self._open()
            return self._catalog

    def _open(self) -> Catalog:
        if self.settings.local_catalog_dir is not None:
            self.settings.local_catalog_dir.mkdir(parents=True, exist_ok=True)
        for attempt in range(_OPEN_ATTEMPTS):     # brokers opening one SQLite file at once race on its tables
            try:
                catalog = load_catalog("tierlog", **self.settings.catalog)
                for ns in (NAMESPACE, DEAD_LETTER_NAMESPACE):
                    catalog.create_namespace_if_not_exists(ns)
                return catalog
            except Exception as e:
                if attempt == _OPEN_ATTEMPTS - 1:
                    raise RemoteStorageError(f"table catalog {self.settings.catalog['uri']}: {e}") from e
                time.sleep(0.1 * (attempt + 1))
        raise AssertionError("unreachable")

    def table(self, topic: str, schema: pa.Schema, dead_letter: bool = False) -> Table:
        """The table of ``topic`` with at least the columns of ``schema`` (created or evolved)."""
        ns, folder = (DEAD_LETTER_NAMESPACE, "dead-letter") if dead_letter else (NAMESPACE, "topics")
        ident = (ns, topic)
        try:
            table = self.catalog.load_table(ident)
        except NoSuchTableError:
            try:
                table = self.catalog.create_table(ident, _iceberg_schema(schema),
                                                  location=f"{self.settings.warehouse}/{folder}/{topic}",
                                                  partition_spec=_by_partition(),
                                                  properties={"tierlog.topic": topic, **NO_PYICEBERG_RETRY})
            except TableAlreadyExistsError:       # another broker's leader made it first
                table = self.catalog.load_table(ident)
        missing = [f for f in schema if f.name not in table.schema().column_names]
        if missing:                           # the value schema gained properties: Iceberg schema evolution
            with table.update_schema() as update:
                update.union_by_name(_iceberg_schema(pa.schema(missing)))
            table = self.catalog.load_table(ident)
        return table

    def load(self, topic: str, dead_letter: bool = False) -> Table | None:
        """The table of ``topic`` as it is (None when there is none)."""
        try:
            return self.catalog.load_table((DEAD_LETTER_NAMESPACE if dead_letter else NAMESPACE, topic))
        except NoSuchTableError:
            return None

    def list_tables(self) -> list[tuple[str, ...]]:
        return [tuple(t) for ns in (NAMESPACE, DEAD_LETTER_NAMESPACE) for t in self.catalog.list_tables(ns)]


def _iceberg_schema(schema: pa.Schema) -> Schema:
    """An Iceberg schema of ``schema``'s columns (ids assigned in order)."""
    fields, next_id = [], 1

    def mapped(name: str, children: list[MappedField] | None = None) -> MappedField:
        nonlocal next_id
        out = MappedField.model_validate({"field-id": next_id, "names": [name], "fields": children or []})
        next_id += 1
        return out

    for f in schema:
        fields.append(mapped(f.name, _children(f.type, mapped)))
    return pyarrow_to_schema(schema, name_mapping=NameMapping(fields))


def _children(kind: pa.DataType, mapped: Callable[..., MappedField]) -> list[MappedField]:
    if pa.types.is_list(kind):
        return [mapped("element", _children(kind.value_type, mapped))]
    if pa.types.is_struct(kind):
        return [mapped(kind.field(i).name, _children(kind.field(i).type, mapped)) for i in range(kind.num_fields)]
    return []


def _by_partition() -> PartitionSpec:
    return PartitionSpec(PartitionField(source_id=1, field_id=_PARTITION_FIELD_ID, transform=IdentityTransform(),
                                        name="partition"))
