"""pyiceberg's SQL catalog, committing on the metadata the committing table already holds.

pyiceberg (0.12) ``SqlCatalog.commit_table`` first loads the table again (a query, then the
current metadata JSON read and parsed), applies the updates to that, and deep-copies the
result (the whole metadata: every snapshot and the metadata log): about 20 of a segment's
75 ms of table CPU. The broker's writer keeps each table open between its commits
(``TableCatalog.table(cached=True)``) and its commits are the table's only writer most of
the time, so the metadata it holds is nearly always the current one.

``SqlCatalogOnBase`` commits on that metadata: the requirements checked against it, the
updates applied to it (``transaction.staged_metadata``, no deep copy: the models are
frozen and each update builds new ones), the new metadata file written, and the catalog
row moved with the same conditional UPDATE pyiceberg uses (``metadata_location`` still
the one the table holds). A table that is behind (another broker or thread committed
since) moves no row; its metadata file is deleted and the commit goes pyiceberg's way,
on the current metadata, where the requirements decide as they always did: an append's
(the branch still at the snapshot it was planned on) fails with ``CommitFailedException``
and the writer reloads and plans again (``writer._append``); a change of properties alone
lands. So the outcome of every commit is pyiceberg's; only the common case is cheaper. A
new table, a staged one, and a database without reliable row counts take pyiceberg's path.
"""

from __future__ import annotations

from typing import Any

from pyiceberg.catalog import Catalog
from pyiceberg.catalog.sql import IcebergTables, SqlCatalog
from pyiceberg.table import CommitTableResponse, StagedTable, Table
from pyiceberg.table.locations import load_location_provider
from sqlalchemy import CursorResult, update
from sqlalchemy.orm import Session

from .transaction import staged_metadata

__all__ = ["SqlCatalogOnBase"]


class SqlCatalogOnBase(SqlCatalog):
    def commit_table(self, table: Table, requirements: tuple[Any, ...], updates: tuple[Any, ...]) -> CommitTableResponse:
        base_location = table.metadata_location
        if isinstance(table, StagedTable) or not base_location or not self.engine.dialect.supports_sane_rowcount:
            return super().commit_table(table, requirements, updates)
        base = table.metadata
        for requirement in requirements:
            requirement.validate(base)
        metadata = staged_metadata(base, updates, base_location)
        location = load_location_provider(metadata.location, metadata.properties) \
            .new_table_metadata_file_location(self._parse_metadata_version(base_location) + 1)
        self._write_metadata(metadata=metadata, io=table.io, metadata_path=location)
        ident = table.name()
        namespace, name = Catalog.namespace_to_string(Catalog.namespace_from(ident)), Catalog.table_name_from(ident)
        with Session(self.engine) as session:
            moved: CursorResult[Any] = session.execute(  # type: ignore[assignment]  # an UPDATE's result
                update(IcebergTables)
                .where(IcebergTables.catalog_name == self.name, IcebergTables.table_namespace == namespace,
                       IcebergTables.table_name == name, IcebergTables.metadata_location == base_location)
                .values(metadata_location=location, previous_metadata_location=base_location))
            if moved.rowcount == 1:
                session.commit()
                return CommitTableResponse(metadata=metadata, metadata_location=location)  # type: ignore[call-arg]  # by name
        table.io.delete(location)       # never referenced: the table was behind
        return super().commit_table(table, requirements, updates)
