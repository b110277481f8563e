"""Filling a partition's future log from its current one (Kafka's ReplicaAlterLogDirsThread).

AlterReplicaLogDirs moves a replica to another log dir of this broker while it
serves: ``storage.LogManager.create_future`` opens an empty future log in the
target dir, ``copy_step`` appends the current log's batches to it as they are
(offsets, leader epochs, producer state and transaction index follow, as a
follower's do), at most ``max_bytes`` a step, and says whether it has caught
up; ``complete`` then makes it equal to the current log (log start, epochs with
no batch yet) just before ``Partition.swap_future`` makes it current.  All of it
runs on the event loop, so a step that catches up and the swap that follows see
no append in between (Kafka takes the partition's lock for that).

``CurrentLogView`` is the view the replica fetcher keeps of a partition: it reads
whatever log is current, so a swap needs no fetcher restart.
"""
from __future__ import annotations

from tierlog.storage import Log, UnexpectedAppendOffsetError

__all__ = ["CurrentLogView", "complete", "copy_step"]


def copy_step(current: Log, future: Log, max_bytes: int, now_ms: int) -> bool:
    """Append the current log's next batches (about ``max_bytes``; at least one) to ``future``;
    True once it holds everything the current log does."""
    first = max(current.log_start_offset, current.local_log_start_offset)
    if future.log_end_offset < first or future.log_end_offset > current.log_end_offset \
            or future.log_start_offset > current.log_start_offset:
        # a fresh start, or retention went past it: the local copy starts at the local log start, the log
        # start (below it for a tiered log, KIP-405) stays the current one's
        future.truncate_fully_and_start_at(first, log_start_offset=current.log_start_offset)
    end = future.log_end_offset
    if end < current.log_end_offset:
        read = current.read(end, max_bytes)
        if read.size:
            records = bytearray(read.to_bytes())
            try:
                future.append_as_follower(records, now_ms)
            except UnexpectedAppendOffsetError as e:
                if end != first or e.first_offset > end:
                    raise
                # the log start lies inside a batch (DeleteRecords, retention): the copy starts at that
                # batch's base offset, as Kafka's follower does for an empty log
                future.truncate_fully_and_start_at(e.first_offset, log_start_offset=current.log_start_offset)
                future.append_as_follower(records, now_ms)
    return future.log_end_offset == current.log_end_offset


def complete(current: Log, future: Log) -> None:
    """Carry what batches do not: a raised log start and leader epochs begun without a batch yet."""
    assert future.log_end_offset == current.log_end_offset, "copy_step has not caught up"
    if current.log_start_offset > future.log_start_offset:
        future.increment_log_start_offset(current.log_start_offset)
    latest = future.latest_epoch
    for epoch, start in current.epoch_entries():
        if latest is None or epoch > latest:
            future.assign_epoch_start_offset(epoch, start)
    future.highest_offset_in_remote_storage.set(current.highest_offset_in_remote_storage.value)


class CurrentLogView:
    """The follower's read-only view (``replication.FollowerLog``) of whichever log is current."""

    __slots__ = ("_part",)

    def __init__(self, part) -> None:
        self._part = part

    @property
    def log_end_offset(self) -> int:
        return self._part.log.log_end_offset

    @property
    def log_start_offset(self) -> int:
        return self._part.log.log_start_offset

    @property
    def latest_epoch(self) -> int | None:
        return self._part.log.latest_epoch

    @property
    def local_log_start_timestamp(self) -> int:
        return self._part.log.local_log_start_timestamp

    @property
    def local_log_size_bytes(self) -> int:
        return self._part.log.local_log_size_bytes

    def end_offset_for_epoch(self, epoch: int) -> tuple[int, int]:
        return self._part.log.end_offset_for_epoch(epoch)

    def fetch_position(self) -> tuple[int, int | None, int, int, int]:
        return self._part.log.fetch_position()
