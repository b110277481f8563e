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
  URI of a catalog every broker reaches is required. A SQL catalog's tables are made at
  the locations above; a REST catalog chooses its tables' locations (their metadata files
  go there; the data files are still the writer's, under ``tierlog-tables/``);
- identifiers ``<namespace>.<topic>`` and ``<namespace>_dead_letter.<topic>``, the namespace
  ``tierlog.table.namespace`` (default ``tierlog``; dots separate its levels, e.g.
  ``bronze.tierlog`` for a catalog that wants tables under a namespace of its own; the
  topic name is one identifier part, dots and all); partitioned by the Kafka partition
  (identity).

What a table holds of the log: table property ``tierlog.last-offset.<partition>``, the
last log offset the table covers for that partition (control and aborted offsets
included), set in the same commit as the data files; each commit's snapshot summary
carries, per partition in it, the same key with ``tierlog.start-offset.<p>`` and
``tierlog.segment-id.<p>`` (writer.py, group_commit.py).
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

__all__ = ["CATALOG_PREFIX", "CATALOG_TYPE", "CATALOG_URI", "DEAD_LETTER_SUFFIX", "LAST_OFFSET_PREFIX",
           "LOG_START_PREFIX", "METADATA_VERSIONS_MAX", "NAMESPACE", "NAMESPACE_CONFIG", "TABLE_PROPERTIES",
           "WAREHOUSE_KEY", "TableCatalog", "TableSettings", "catalog_properties", "covered_offsets", "offset_bounds",
           "s3_io", "store_uri", "table_settings"]

CATALOG_PREFIX = "tierlog.table.catalog."
CATALOG_TYPE = CATALOG_PREFIX + "type"
CATALOG_URI = CATALOG_PREFIX + "uri"
WAREHOUSE_KEY = "tierlog-tables"
NAMESPACE_CONFIG = "tierlog.table.namespace"
NAMESPACE, DEAD_LETTER_SUFFIX = "tierlog", "_dead_letter"     # the default; its dead-letter one: tierlog_dead_letter
LAST_OFFSET_PREFIX = "tierlog.last-offset."
LOG_START_PREFIX = "tierlog.log-start-offset."
# the writer retries, checking what is covered (writer.py); a commit deletes the metadata JSON files
# beyond the last METADATA_VERSIONS_MAX (Iceberg's own properties: otherwise one file per commit, forever)
METADATA_VERSIONS_MAX = 20
# commit.manifest-merge.enabled: each append adds a manifest and the manifest list names them all,
# so without merging a commit costs in proportion to the commits before it (15 ms at 100, 52 at 600);
# merged as Iceberg's Java writer does by default (100 or more small manifests into one)
TABLE_PROPERTIES = {"commit.retry.num-retries": "0", "write.metadata.delete-after-commit.enabled": "true",
                    "write.metadata.previous-versions-max": str(METADATA_VERSIONS_MAX),
                    "commit.manifest-merge.enabled": "true"}
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
    namespace: tuple[str, ...] = (NAMESPACE,)

    @property
    def dead_letter_namespace(self) -> tuple[str, ...]:
        return (*self.namespace[:-1], self.namespace[-1] + DEAD_LETTER_SUFFIX)

    @property
    def chooses_locations(self) -> bool:
        """Whether tables are made at tierlog's locations (a SQL catalog) rather than the catalog's own
        (a REST catalog owns its warehouse: Lakana refuses a location given, Polaris confines it)."""
        return self.catalog["type"] == "sql"


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
    passed = catalog_properties(broker_config)
    return TableSettings({"type": kind, "uri": uri, "warehouse": warehouse, **io, **passed}, warehouse, local_dir, io,
                         _namespace(broker_config))


def _namespace(config: Mapping[str, Any]) -> tuple[str, ...]:
    given = str(config.get(NAMESPACE_CONFIG) or NAMESPACE).strip()
    levels = tuple(level.strip() for level in given.split("."))
    if not all(levels):
        raise RemoteStorageError(f"{NAMESPACE_CONFIG} must be namespace levels separated by dots, got {given!r}")
    return levels


def catalog_properties(config: Mapping[str, Any]) -> dict[str, str]:
    """The pyiceberg catalog properties given as ``tierlog.table.catalog.<property>`` (as Iceberg's Kafka
    Connect sink takes ``iceberg.catalog.<property>``): a REST catalog's ``credential``, ``token``,
    ``scope``, ``warehouse``, ``header.<name>``, ... passed to ``load_catalog`` as they are; ``type``
    and ``uri`` are the settings above."""
    return {k[len(CATALOG_PREFIX):]: str(v) for k, v in config.items()
            if k.startswith(CATALOG_PREFIX) and k not in (CATALOG_TYPE, CATALOG_URI) and len(k) > len(CATALOG_PREFIX)}


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
    """Open (create, evolve) a topic's table and dead-letter table.

    The tables opened are kept (``table(..., cached=True)`` returns the kept one): a commit
    updates its Table in place, and one that another process changed meanwhile fails
    with CommitFailedException, after which the committer reloads it (``Table.refresh``).
    So the upload path reads the catalog and the metadata JSON once, not per segment."""

    def __init__(self, settings: TableSettings) -> None:
        self.settings = settings
        self._catalog: Catalog | None = None
        self._lock = threading.Lock()       # copier threads open it at once
        self._tables: dict[tuple[str, ...], Table] = {}
        self._tables_lock = threading.Lock()

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
                catalog = _load(self.settings.catalog)
                if self.settings.local_catalog_dir is not None:
                    _sqlite_wal(catalog)
                for ns in self.namespaces():
                    for depth in range(1, len(ns) + 1):         # a REST catalog makes each level itself
                        catalog.create_namespace_if_not_exists(ns[:depth])
                return catalog
            except Exception as e:
                if attempt == _OPEN_ATTEMPTS - 1:
                    raise RemoteStorageError(f"table catalog ({CATALOG_TYPE}={self.settings.catalog['type']}, "
                                             f"{CATALOG_URI}={self.settings.catalog['uri']}): {type(e).__name__}: "
                                             f"{_one_line(e)}") from e
                time.sleep(0.1 * (attempt + 1))
        raise AssertionError("unreachable")

    def table(self, topic: str, schema: pa.Schema, dead_letter: bool = False, cached: bool = False) -> Table:
        """The table of ``topic`` with at least the columns of ``schema`` (created or evolved); with
        ``cached`` the one kept from before when it has them (it may be behind the catalog)."""
        ident, folder = self.identifier(topic, dead_letter), "dead-letter" if dead_letter else "topics"
        with self._tables_lock:         # one Table object per table: every thread sees every commit's metadata
            kept = self._tables.get(ident)
            if kept is None:
                kept = self._tables[ident] = self._open_table(ident, folder, schema)
            elif not cached or not all(name in kept.schema().column_names for name in schema.names):
                fresh = self._open_table(ident, folder, schema)
                kept.metadata, kept.metadata_location = fresh.metadata, fresh.metadata_location   # as Table.refresh
                kept.io, kept.config = fresh.io, fresh.config
            return kept

    def kept(self, topic: str, dead_letter: bool = False) -> Table:
        """The table of ``topic`` opened last (by ``table``), as it is now."""
        return self._tables[self.identifier(topic, dead_letter)]

    def namespaces(self) -> tuple[tuple[str, ...], tuple[str, ...]]:
        """The tables' namespace and the dead-letter tables'."""
        return self.settings.namespace, self.settings.dead_letter_namespace

    def identifier(self, topic: str, dead_letter: bool = False) -> tuple[str, ...]:
        return (*self.namespaces()[dead_letter], topic)

    def is_dead_letter(self, table: Table) -> bool:
        return tuple(table.name()[:-1]) == self.settings.dead_letter_namespace

    def _open_table(self, ident: tuple[str, ...], folder: str, schema: pa.Schema) -> Table:
        topic = ident[-1]
        try:
            table = self.catalog.load_table(ident)
        except NoSuchTableError:
            location = f"{self.settings.warehouse}/{folder}/{topic}" if self.settings.chooses_locations else None
            try:
                table = self.catalog.create_table(ident, _iceberg_schema(schema), location=location,
                                                  partition_spec=_by_partition(),
                                                  properties={"tierlog.topic": topic, **TABLE_PROPERTIES})
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
            return self.catalog.load_table(self.identifier(topic, dead_letter))
        except NoSuchTableError:
            return None

    def list_tables(self) -> list[tuple[str, ...]]:
        return [tuple(t) for ns in self.namespaces() for t in self.catalog.list_tables(ns)]


def _load(properties: dict[str, str]) -> Catalog:
    """pyiceberg's catalog of ``properties``; a SQL one commits on the metadata its tables hold
    (``sql_commit.py``)."""
    if properties.get("type") == "sql":
        from .sql_commit import SqlCatalogOnBase
        return SqlCatalogOnBase("tierlog", **{k: v for k, v in properties.items() if k != "type"})
    return load_catalog("tierlog", **properties)


def _one_line(e: Exception) -> str:
    text = " ".join(str(e).split())
    return text if len(text) <= 300 else text[:297] + "..."


def _sqlite_wal(catalog: Catalog) -> None:
    """The default SQLite catalog in write-ahead-log mode, synced at checkpoints rather than at each commit.

    A commit then survives a crash of the process (kill -9: the log is on disk), as the fs store's own
    objects do, which are renamed into place but not synced either; an operating system crash may lose
    the last commits, and with them the table's record of segments it may also have lost. Without it each
    commit waits for two or three syncs of the file (about 45 ms here: the largest single cost of an
    upload's commit). WAL needs every process using the file on one host (shared memory), as the fs store
    of several brokers needs one shared directory."""
    from sqlalchemy import event

    engine = catalog.engine     # type: ignore[attr-defined]

    def pragmas(connection: Any, _record: Any) -> None:
        cursor = connection.cursor()
        cursor.execute("PRAGMA journal_mode=WAL")
        cursor.execute("PRAGMA synchronous=NORMAL")
        cursor.execute("PRAGMA busy_timeout=10000")
        cursor.close()
    event.listen(engine, "connect", pragmas)
    engine.dispose()            # the connection opened to make the catalog's tables had none of it


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
