"""The ``.snapshot`` files of one partition directory (see ``producer_snapshot_codec`` for the format).

Written without fsync (a lost or torn snapshot only costs a longer replay: a
file that does not decode is ignored and the state is rebuilt from the batches).
Snapshots above a truncation point are deleted with the data; below the local
log start they go with the segments, except the latest one.
"""

from __future__ import annotations

import bisect
import logging
import os
from pathlib import Path

from tierlog.records.control import read_marker
from tierlog.storage.batch_scan import read_exact, scan_headers
from tierlog.storage.producer_snapshot_codec import (
    ProducerSnapshotError,
    SnapshotEntry,
    decode_snapshot,
    encode_snapshot,
    snapshot_offset,
    snapshot_path,
)

__all__ = ["ProducerSnapshots", "replay_source"]

log = logging.getLogger(__name__)

HISTORY_SEGMENTS = 2        # segments read below a snapshot for a producer's batches before its last


class ProducerSnapshots:
    def __init__(self, directory: Path) -> None:
        self.directory = directory

    def offsets(self) -> list[int]:
        found = (snapshot_offset(p) for p in self.directory.iterdir())
        return sorted(o for o in found if o is not None)

    def path(self, offset: int) -> Path | None:
        path = snapshot_path(self.directory, offset)
        return path if path.exists() else None

    def write(self, offset: int, entries: list[SnapshotEntry]) -> None:
        path = snapshot_path(self.directory, offset)
        tmp = path.with_name(path.name + ".tmp")
        tmp.write_bytes(encode_snapshot(entries))
        os.replace(tmp, path)

    def latest(self, at_most: int) -> tuple[int, list[SnapshotEntry]] | None:
        """The newest readable snapshot at or below ``at_most``."""
        for offset in reversed([o for o in self.offsets() if o <= at_most]):
            try:
                return offset, decode_snapshot(snapshot_path(self.directory, offset).read_bytes())
            except (OSError, ProducerSnapshotError) as exc:
                log.warning("%s: ignoring producer snapshot at %d: %s", self.directory.name, offset, exc)
        return None

    def delete_above(self, offset: int) -> None:
        for o in self.offsets():
            if o > offset:
                snapshot_path(self.directory, o).unlink(missing_ok=True)

    def delete_below(self, offset: int) -> None:
        """Drop snapshots below ``offset`` but the newest of all."""
        offsets = self.offsets()
        for o in offsets[:-1]:
            if o < offset:
                snapshot_path(self.directory, o).unlink(missing_ok=True)


def replay_source(snapshots: ProducerSnapshots, segments, bases: list[int], log_end_offset: int):
    """(batch headers to replay, snapshot entries, the offset the replay starts at, the markers
    of the replayed control batches, the history) that rebuild a log's producer state: the latest
    readable snapshot and the batches from its offset on, or without one the last two segments.
    The markers dict (base offset -> (control type, coordinator epoch)) fills as the headers are
    iterated.  A snapshot holds each producer's last batch only (Kafka's format), so the history
    is the batches below it in the segment holding the offset before it and the one before that
    (``HISTORY_SEGMENTS``, as the replay without a snapshot): what gives back the earlier of a
    producer's last ``MAX_CACHED_BATCHES`` batches, whose retries are duplicates."""
    found = snapshots.latest(log_end_offset)
    markers: dict[int, tuple[int, int]] = {}
    entries: list[SnapshotEntry]
    if found is None:
        chosen, offset, entries, history = segments[-2:], -1, [], iter(())
    else:
        offset, entries = found
        first = max(0, bisect.bisect_right(bases, offset) - 1)
        chosen = segments[first:]
        before = max(0, bisect.bisect_right(bases, offset - 1) - HISTORY_SEGMENTS)
        history = _headers(segments[before:first + 1], -1, markers, below=offset)
    start = max(offset, chosen[0].base_offset) if chosen else offset
    return _headers(chosen, offset, markers), entries, start, markers, history


def _headers(segments, from_offset: int, markers: dict, below: int | None = None):
    for seg in segments:
        for pos, h in scan_headers(seg.fd, 0, seg.size):
            if h.base_offset < from_offset:
                continue
            if below is not None and h.base_offset >= below:
                return
            if h.is_control:
                markers[h.base_offset] = read_marker(read_exact(seg.fd, h.size, pos), h)
            yield h
