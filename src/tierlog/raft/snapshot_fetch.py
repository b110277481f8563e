"""The follower's snapshot download (KIP-630 FetchSnapshot).

Rules:

- A Fetch answered with a SnapshotId starts a download of that snapshot into a
  ``.part`` writer, position 0; one download at a time (a new id replaces the old).
  A snapshot already held locally is not downloaded: the caller installs it.
- While downloading, the follower sends FetchSnapshot instead of Fetch, for
  ``snapshot_chunk_bytes`` at the current position.
- An answer for another snapshot or position is ignored. An error answer (or an id,
  position or size that does not match) abandons the download; the follower
  rediscovers with Fetch after its backoff.
- When position reaches the size the snapshot is frozen and checked; a snapshot that
  does not parse is deleted, a good one is installed by the caller.
- A replica downloading a snapshot votes as if its log were empty (vote.py), and a
  new leader abandons its download.
"""

from __future__ import annotations

import enum
from dataclasses import dataclass

from tierlog.raft.messages import FetchSnapshotRequest, FetchSnapshotResponse
from tierlog.raft.snapshots import (
    InvalidSnapshotError,
    RawSnapshotWriter,
    SnapshotReader,
    SnapshotStore,
)
from tierlog.raft.types import Err, OffsetAndEpoch

__all__ = ["ChunkResult", "SnapshotFetcher"]


class ChunkResult(enum.Enum):
    IGNORED = "ignored"    # not an answer to the current download's request
    MORE = "more"          # chunk written; ask for the next one
    FAILED = "failed"      # download abandoned; back off and Fetch again
    INVALID = "invalid"    # complete but unreadable; deleted
    COMPLETE = "complete"  # complete and valid: install it


@dataclass
class _Download:
    snapshot_id: OffsetAndEpoch
    writer: RawSnapshotWriter
    position: int = 0


class SnapshotFetcher:
    def __init__(self, snapshots: SnapshotStore, chunk_bytes: int, metrics: dict[str, float]):
        self._snapshots = snapshots
        self._chunk_bytes = chunk_bytes
        self._metrics = metrics
        self._download: _Download | None = None

    @property
    def active(self) -> bool:
        return self._download is not None

    @property
    def snapshot_id(self) -> OffsetAndEpoch | None:
        return None if self._download is None else self._download.snapshot_id

    def start(self, sid: OffsetAndEpoch) -> bool:
        """Begin downloading ``sid``; False when it is held already (install it instead)."""
        self.abort()
        if sid in self._snapshots.list():
            return False
        self._download = _Download(sid, self._snapshots.create(sid))
        return True

    def abort(self) -> None:
        d, self._download = self._download, None
        if d is not None:
            d.writer.close()

    def request(self, cluster_id: str, node_id: int, epoch: int) -> FetchSnapshotRequest:
        d = self._download
        assert d is not None, "no snapshot download in progress"
        return FetchSnapshotRequest(cluster_id, node_id, epoch, d.snapshot_id, d.position, self._chunk_bytes)

    def matches(self, req: FetchSnapshotRequest) -> bool:
        d = self._download
        return d is not None and d.snapshot_id == req.snapshot_id and d.position == req.position

    def on_response(self, resp: FetchSnapshotResponse) -> ChunkResult:
        """Apply a chunk answering the current request (check ``matches`` first)."""
        d = self._download
        assert d is not None
        if resp.error != Err.NONE or resp.snapshot_id != d.snapshot_id or resp.position != d.position \
                or (not resp.data and d.position < resp.size):
            # SNAPSHOT_NOT_FOUND, POSITION_OUT_OF_RANGE, NOT_LEADER...: rediscover with Fetch
            self.abort()
            return ChunkResult.FAILED
        d.writer.append(resp.data)
        d.position += len(resp.data)
        if d.position < resp.size:
            return ChunkResult.MORE
        self._metrics["snapshots-fetched"] += 1
        self._download = None
        d.writer.freeze()
        try:
            SnapshotReader(d.snapshot_id, self._snapshots.read_all(d.snapshot_id) or b"")
        except InvalidSnapshotError:
            self._snapshots.delete(d.snapshot_id)
            return ChunkResult.INVALID
        return ChunkResult.COMPLETE
