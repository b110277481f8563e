"""Table upkeep: Iceberg snapshot expiry and the removal of Parquet objects no snapshot references.

Run by a partition's leader at the end of its copy pass, after its uploads (so no commit of its own
for the partition is under way), at most once per ``tierlog.table.maintenance.interval.ms``
(``broker/remote/tables.py``; docs/tables.md, "Upkeep"):

1. snapshot expiry (the leader of partition 0 only, one commit per table): snapshots
   older than ``tierlog.table.snapshot.retention.ms`` are removed from the table's
   metadata (pyiceberg's ``expire_snapshots``; the current snapshot is always kept).
   The table's properties, which say which offsets it covers, are not in snapshots;
2. orphans of the partition: Parquet objects under the table's
   ``data/partition=<p>/`` that no remaining snapshot references (``inspect.all_files``)
   and whose first offset (the 20-digit name) is at or below what the table covers for
   the partition. Those are the files of attempts that crashed between the put and the
   commit (the re-upload committed its own), and files only expired snapshots referenced
   (a retention cut's dropped and rewritten files). A file of a commit under way is
   above the covered offset, so never taken: only a deposed leader's commit racing the
   new leader's pass could lose its file (its commit then fails reading it, or, if it
   read it first, references a deleted object: the window is that commit's).
"""

from __future__ import annotations

import datetime
import re
from collections.abc import Iterable

from pyiceberg.table import Table

from tierlog.tiered.object_store import ObjectStore

from .catalog import WAREHOUSE_KEY, covered_offsets

__all__ = ["expire_snapshots", "orphan_keys", "remove_orphans"]

_NAME = re.compile(r"/(\d{20})-[0-9a-f-]{36}\.parquet$")


def expire_snapshots(table: Table, now_ms: int, retention_ms: int) -> int:
    """Expire the snapshots older than ``retention_ms`` (never the current one); returns how many."""
    current = table.current_snapshot()
    cutoff = now_ms - retention_ms
    old = [s.snapshot_id for s in table.snapshots()
           if s.timestamp_ms < cutoff and (current is None or s.snapshot_id != current.snapshot_id)]
    if old:
        table.maintenance.expire_snapshots().older_than(
            datetime.datetime.fromtimestamp(cutoff / 1000, tz=datetime.UTC)).commit()
    return len(old)


def orphan_keys(listed: Iterable[str], referenced: set[str], covered: int) -> list[str]:
    """The keys of ``listed`` that no snapshot references and that start at or below ``covered``
    (sans-IO; ``referenced`` holds keys as the store names them)."""
    out = []
    for key in listed:
        match = _NAME.search(key)
        if match is None or key in referenced:
            continue
        if int(match.group(1)) <= covered:
            out.append(key)
    return out


def remove_orphans(store: ObjectStore, table: Table, folder: str, topic: str, partition: int) -> list[str]:
    """Delete the partition's orphan Parquet objects of ``table`` (at ``folder``: topics or
    dead-letter); returns their keys."""
    covered = covered_offsets(table).get(partition, -1)
    if covered < 0:
        return []
    prefix = f"{WAREHOUSE_KEY}/{folder}/{topic}/data/partition={partition}/"
    listed = store.list_keys(prefix)
    if not listed:
        return []
    marker = f"/{WAREHOUSE_KEY}/"
    referenced = {WAREHOUSE_KEY + "/" + p.split(marker, 1)[1] for p in table.inspect.all_files().column("file_path")
                  .to_pylist() if marker in p}
    doomed = orphan_keys(listed, referenced, covered)
    for key in doomed:
        store.delete(key)
    return doomed
