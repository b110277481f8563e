"""The replicated log on disk: ``<metadata.log.dir>/__cluster_metadata-0/`` through
tierlog.storage.Log (segments, indexes, leader-epoch-checkpoint).

Batches are record batch v2 bytes with the leader epoch in partitionLeaderEpoch;
control batches hold LeaderChange records (type 2). The log begin offset and the
epoch of the record before it live in ``raft-log-start`` (JSON, atomic write),
written before the storage changes so a crash in between is repaired on open.
The leader-epoch-checkpoint is written at ``flush`` (not at each append), so the
shell's writer thread does it: every open recovers all segments (no recovery
point is passed), which re-adds the epochs of the batches found.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Sequence
from pathlib import Path

from tierlog.clock import wall_clock_ms
from tierlog.raft.codec import decode_log_batches, encode_log_batch, encode_log_batches
from tierlog.raft.log import ReplicatedLog
from tierlog.raft.types import LogBatch
from tierlog.storage.files import atomic_write
from tierlog.storage.log import Log
from tierlog.storage.log_config import LogConfig

__all__ = ["METADATA_PARTITION_DIR", "FileLog"]

METADATA_PARTITION_DIR = "__cluster_metadata-0"
START_FILE = "raft-log-start"


class FileLog(ReplicatedLog):
    def __init__(self, log: Log, start: int, start_epoch: int, clock_ms: Callable[[], int]):
        self._log = log
        self._start = start
        self._start_epoch = start_epoch
        self._clock = clock_ms

    @classmethod
    def open(cls, directory: Path | str, *, segment_bytes: int = 64 * 1024 * 1024,
             clock_ms: Callable[[], int] = wall_clock_ms) -> FileLog:
        """Open (or create) the log in ``directory`` (the ``__cluster_metadata-0`` dir)."""
        directory = Path(directory)
        directory.mkdir(parents=True, exist_ok=True)
        start, epoch = _read_start(directory)
        config = LogConfig({"retention.ms": -1, "retention.bytes": -1, "segment.bytes": segment_bytes})
        now = clock_ms()
        log = Log.open(directory, config, now, log_start_offset=start if start > 0 else None)
        if start > log.log_end_offset:  # crashed after raft-log-start, before the truncation
            log.truncate_fully_and_start_at(start)
        elif start > 0:
            log.increment_log_start_offset(start)
        log.enforce_retention(now)
        log.defer_epoch_checkpoint()  # written by flush(), which the shell runs off the event loop
        return cls(log, max(start, log.log_start_offset), epoch, clock_ms)

    @property
    def storage(self) -> Log:
        return self._log

    @property
    def directory(self) -> Path:
        return self._log.directory

    @property
    def start_offset(self) -> int:
        return self._start

    @property
    def start_epoch(self) -> int:
        return self._start_epoch

    @property
    def end_offset(self) -> int:
        return self._log.log_end_offset

    @property
    def flushed_end_offset(self) -> int:
        recovery_point: int = self._log.recovery_point
        return max(min(recovery_point, self.end_offset), self._start)

    def last_fetched_epoch(self) -> int:
        if self.end_offset == self._start:
            return self._start_epoch
        latest = self._log.latest_epoch
        return self._start_epoch if latest is None else latest

    def append_as_leader(self, records: Sequence[bytes], epoch: int, timestamp_ms: int,
                         control: bool = False, control_type: int = 2) -> LogBatch:
        batch = LogBatch(self.end_offset, epoch, timestamp_ms, tuple(bytes(r) for r in records), control,
                         control_type)
        self._log.append_as_follower(bytearray(encode_log_batch(batch)), self._clock())
        return batch

    def append_as_follower(self, batches: Sequence[LogBatch]) -> None:
        if batches:
            self._log.append_as_follower(bytearray(encode_log_batches(batches)), self._clock())

    def read(self, offset: int, max_bytes: int, end: int | None = None) -> list[LogBatch]:
        end = self.end_offset if end is None else min(end, self.end_offset)
        if offset >= end or offset < self._start:
            return []
        data = self._log.read(offset, max_bytes, upper_bound=end).to_bytes()
        return [b for b in decode_log_batches(data) if b.next_offset <= end and b.last_offset >= offset]

    def truncate_to(self, offset: int) -> None:
        if self._log.truncate_to(max(offset, self._start)):
            self._log.flush(self._clock())

    def truncate_fully_and_start_at(self, offset: int, epoch: int) -> None:
        _write_start(self.directory, offset, epoch)
        self._log.truncate_fully_and_start_at(offset)
        self._log.flush(self._clock())
        self._start, self._start_epoch = offset, epoch

    def delete_before(self, offset: int, epoch: int) -> None:
        if offset <= self._start:
            return
        assert offset <= self.end_offset
        _write_start(self.directory, offset, epoch)
        self._log.increment_log_start_offset(offset)
        self._log.enforce_retention(self._clock())
        self._start, self._start_epoch = offset, epoch

    def epoch_entries(self) -> list[tuple[int, int]]:
        entries = [(self._start_epoch, self._start)]
        for epoch, start in self._log.epoch_entries():
            if start < self._start or start >= self.end_offset:
                continue
            if epoch != entries[-1][0]:
                entries.append((epoch, start))
        return entries

    def is_batch_boundary(self, offset: int) -> bool:
        if offset in (self._start, self.end_offset):
            return True
        if not self._start < offset < self.end_offset:
            return False
        first = self.read(offset, 1)
        return bool(first) and first[0].base_offset == offset

    def flush(self) -> None:
        self._log.flush(self._clock())

    def close(self) -> None:
        self._log.close()


def _read_start(directory: Path) -> tuple[int, int]:
    try:
        doc = json.loads((directory / START_FILE).read_text())
        return int(doc["offset"]), int(doc["epoch"])
    except FileNotFoundError:
        return 0, 0


def _write_start(directory: Path, offset: int, epoch: int) -> None:
    atomic_write(directory / START_FILE, json.dumps({"version": 0, "offset": offset, "epoch": epoch}).encode())
