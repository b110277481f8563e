"""Shared helpers for the tiered storage tests: segments on disk and their metadata."""

from __future__ import annotations

import uuid
from pathlib import Path

from tierlog.records import Record, build_batch
from tierlog.tiered import (
    LogSegmentData,
    RemoteLogSegmentId,
    RemoteLogSegmentMetadata,
    TopicIdPartition,
)

NOW = 1_700_000_000_000
TOPIC_ID = bytes(range(16))
TP = TopicIdPartition(TOPIC_ID, "orders", 0)


def batches(base_offset: int, count: int, per_batch: int = 5, value_size: int = 50,
            epoch: int = 0) -> bytes:
    """``count`` batches of ``per_batch`` records from ``base_offset``."""
    out = bytearray()
    offset = base_offset
    for _ in range(count):
        records = [Record(offset + i, NOW + offset + i, b"k%d" % (offset + i), b"v" * value_size)
                   for i in range(per_batch)]
        out += build_batch(records, base_offset=offset, partition_leader_epoch=epoch)
        offset += per_batch
    return bytes(out)


def write_segment(directory: Path, base_offset: int, data: bytes, snapshot: bool = True) -> LogSegmentData:
    """A rolled segment's files under ``directory`` (index contents are opaque to the store)."""
    directory.mkdir(parents=True, exist_ok=True)
    log = directory / f"{base_offset:020d}.log"
    log.write_bytes(data)
    index = directory / f"{base_offset:020d}.index"
    index.write_bytes((0).to_bytes(4, "big") + (0).to_bytes(4, "big"))
    time_index = directory / f"{base_offset:020d}.timeindex"
    time_index.write_bytes(NOW.to_bytes(8, "big") + (0).to_bytes(4, "big"))
    snap = None
    if snapshot:
        snap = directory / f"{base_offset:020d}.snapshot"
        snap.write_bytes(b"producer-state")
    return LogSegmentData(log, index, time_index, snap, b"0\n1\n0 0\n")


def metadata(start: int, end: int, epochs=((0, None),), tp: TopicIdPartition = TP, size: int = 1000,
             max_ts: int | None = None, segment_uuid: bytes | None = None) -> RemoteLogSegmentMetadata:
    """Segment metadata [start, end]; an epoch start of None means ``start``."""
    leader_epochs = tuple((e, start if o is None else o) for e, o in epochs)
    return RemoteLogSegmentMetadata(
        segment_id=RemoteLogSegmentId(tp, segment_uuid or uuid.uuid4().bytes),
        start_offset=start, end_offset=end, max_timestamp_ms=NOW + end if max_ts is None else max_ts,
        broker_id=1, event_timestamp_ms=NOW, segment_leader_epochs=leader_epochs,
        segment_size_in_bytes=size)
