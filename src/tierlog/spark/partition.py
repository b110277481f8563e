"""One task's work (``TierlogPartition``), and broker ranges cut into tasks."""

from __future__ import annotations

from pyspark.sql.datasource import InputPartition

from tierlog.spark.options import SourceOptions
from tierlog.spark.planning import OffsetRange, split_ranges
from tierlog.spark.remote_grouping import RemotePiece
from tierlog.spark.remote_store import StoreSpec
from tierlog.tiered import RemoteLogSegmentMetadata

__all__ = ["TierlogPartition", "broker_partitions"]


class TierlogPartition(InputPartition):
    """``[start, end)`` of one topic partition, through the brokers or, when ``pieces`` are given,
    straight from remote storage (``store``): each piece a ``[start, end)`` of one segment, the
    pieces contiguous and covering the range. At read_committed, ``txn_segments`` are the partition's
    segments from the first piece's on that were uploaded with a ``.txnindex`` (``remote_txn``)."""

    def __init__(self, topic: str, partition: int, start: int, end: int,
                 pieces: tuple[tuple[int, int, RemoteLogSegmentMetadata], ...] = (),
                 store: StoreSpec | None = None, txn_segments: tuple[RemoteLogSegmentMetadata, ...] | None = None):
        super().__init__((topic, partition, start, end))
        self.topic, self.partition, self.start, self.end = topic, partition, start, end
        self.pieces, self.store, self.txn_segments = pieces, store, txn_segments

    @classmethod
    def remote(cls, task: list[RemotePiece], store: StoreSpec,
               txn_segments: tuple[RemoteLogSegmentMetadata, ...] | None = None) -> TierlogPartition:
        first, last = task[0].range, task[-1].range
        pieces = tuple((p.range.start, p.range.end, p.segment) for p in task)
        return cls(first.topic, first.partition, first.start, last.end, pieces, store, txn_segments)

    @property
    def segment(self) -> RemoteLogSegmentMetadata | None:
        """The first segment read directly (None: read through the brokers)."""
        return self.pieces[0][2] if self.pieces else None

    def __repr__(self) -> str:
        where = f" remote segments {[s.start_offset for _, _, s in self.pieces]}" if self.pieces else ""
        return f"TierlogPartition({self.topic}-{self.partition} [{self.start}, {self.end}){where})"


def broker_partitions(opts: SourceOptions, ranges: list[OffsetRange]) -> list[TierlogPartition]:
    ranges = split_ranges(ranges, opts.min_partitions, opts.max_records_per_partition)
    return [TierlogPartition(r.topic, r.partition, r.start, r.end) for r in ranges]
