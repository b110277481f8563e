"""pyiceberg's Transaction, with the metadata it stages computed once per change, and not deep-copied.

pyiceberg (0.12) answers ``Transaction.table_metadata`` by applying the staged updates to
the table's metadata and deep-copying the result, every time it is read; one append reads
it about seventeen times (the snapshot producer, the summary, the manifest list). A deep
copy costs in proportion to the metadata (every snapshot, the metadata log), so an append
cost seventeen copies of the table's whole history: 45 % of a segment's commit with ten
snapshots, and growing with every commit until snapshots expire. The metadata models are
frozen (pydantic ``frozen=True``) and each update builds new ones (``model_copy`` with the
changed fields, new lists), so the copy protects nothing: this one keeps the result until
the staged updates change (``_updates`` is a tuple, replaced on each change), and applies
the updates with pyiceberg's own ``_apply_table_update`` without the closing deep copy
(``update_table_metadata`` otherwise: the same steps, the same checks). A SQL catalog's
commit applies them once more the same way (``sql_commit.py``). The pyiceberg version is pinned below
0.13 in pyproject.toml; a change of these internals fails the table tests rather than the
data.
"""

from __future__ import annotations

from datetime import datetime
from typing import Any

from pyiceberg.table import Table, Transaction
from pyiceberg.table.metadata import TableMetadata
from pyiceberg.table.update import (
    TableUpdate,
    _apply_table_update,
    _TableMetadataUpdateContext,
    _update_table_metadata_log,
)
from pyiceberg.utils.datetime import datetime_to_millis

__all__ = ["staged_metadata", "transaction"]


class _StagedOnce(Transaction):
    _staged: tuple[Any, Any, TableMetadata] | None = None

    @property
    def table_metadata(self) -> TableMetadata:
        base, updates = self._table.metadata, self._updates
        staged = self._staged
        if staged is None or staged[0] is not base or staged[1] is not updates:
            staged = self._staged = (base, updates, staged_metadata(base, updates))
        return staged[2]


def staged_metadata(base: TableMetadata, updates: tuple[TableUpdate, ...],
                    base_location: str | None = None) -> TableMetadata:
    """``base`` with ``updates`` applied (pyiceberg's ``update_table_metadata`` without its deep copy);
    with ``base_location`` (a commit: where ``base`` is stored) that file goes into the metadata log."""
    context = _TableMetadataUpdateContext()
    metadata = base
    for update in updates:
        metadata = _apply_table_update(update, metadata, context)
    if context.has_changes() and base_location:
        metadata = _update_table_metadata_log(metadata, base_location, base.last_updated_ms)
    if context.has_changes() and base.last_updated_ms == metadata.last_updated_ms:
        metadata = metadata.model_copy(update={"last_updated_ms": datetime_to_millis(datetime.now().astimezone())})
    metadata.spec().check_compatible(metadata.schema())
    metadata.sort_order().check_compatible(metadata.schema())
    return metadata


def transaction(table: Table) -> Transaction:
    """``table.transaction()``, computing the staged metadata once per change."""
    return _StagedOnce(table)
