"""pyiceberg's Transaction, with the metadata it stages computed once per change rather than per look.

pyiceberg (0.12) answers ``Transaction.table_metadata`` by applying the staged updates to
the table's metadata and deep-copying the result, every time it is read; one append reads
it about seventeen times (the snapshot producer, the summary, the manifest list). A deep
copy costs in proportion to the metadata (every snapshot, the metadata log), so an append
cost seventeen copies of the table's whole history: 45 % of a segment's commit with ten
snapshots, and growing with every commit until snapshots expire. The metadata models are
frozen (pydantic ``frozen=True``), so the copy protects nothing: this one keeps the result
until the staged updates change (``_updates`` is a tuple, replaced on each change). The
pyiceberg version is pinned below 0.13 in pyproject.toml; a change of these internals fails
the table tests rather than the data.
"""

from __future__ import annotations

from typing import Any

from pyiceberg.table import Table, Transaction
from pyiceberg.table.metadata import TableMetadata

__all__ = ["transaction"]


class _StagedOnce(Transaction):
    _staged: tuple[Any, Any, TableMetadata] | None = None

    @property
    def table_metadata(self) -> TableMetadata:
        base, updates = self._table.metadata, self._updates
        staged = self._staged
        if staged is None or staged[0] is not base or staged[1] is not updates:
            staged = self._staged = (base, updates, super().table_metadata)
        return staged[2]


def transaction(table: Table) -> Transaction:
    """``table.transaction()``, computing the staged metadata once per change."""
    return _StagedOnce(table)
