"""An executor reads ``[start, end)`` of one partition straight from a remote segment's objects.

The segment's offset index gives the file position to start at (entries are
relative to the file's own base offset, its first batch's); then the ``.log``
is read with ranged GETs of ``READ_CHUNK_BYTES``, up to ``remoteReadAheadChunks`` of them in flight
while the current chunk is decoded (``read_ahead``; a batch cut at a chunk's end is completed from
the next chunk, a batch larger than a chunk spans several) and each run of whole batches is decoded into Arrow by the same
decoder the broker path uses (``records.arrow_records.decode_fetched``: every
batch's CRC-32C checked, payloads decompressed, control batches and records
outside the range left out), so both paths produce the same rows.

A segment deleted (by retention) between planning and reading is data loss:
with ``failOnDataLoss`` (the default) the task fails naming the offsets,
otherwise they are skipped with a warning. A batch that fails its checks always
fails the task.
"""

from __future__ import annotations

import logging
from collections.abc import Generator, Iterator, Sequence
from contextlib import closing

import pyarrow as pa

from tierlog.client import DataLossError
from tierlog.records import InvalidRecordError
from tierlog.records.aborted import AbortedFilter
from tierlog.records.arrow_records import decode_fetched
from tierlog.records.header import (
    HEADER_SIZE,
    LENGTH_OFFSET,
    LOG_OVERHEAD,
    base_offset_at,
    batch_size_at,
)
from tierlog.spark.options import REMOTE_READ_AHEAD_CHUNKS
from tierlog.spark.read_ahead import read_ahead
from tierlog.spark.remote_txn import aborted_for
from tierlog.storage.txn_index import decode_entries
from tierlog.tiered import (
    CorruptRemoteDataError,
    EncryptionSettings,
    IndexType,
    ObjectStore,
    RemoteLogSegmentMetadata,
    RemoteResourceNotFoundError,
    RemoteSegmentStore,
    segment_key,
)
from tierlog.tiered.layout import LOG_SUFFIX
from tierlog.tiered.offset_index import parse_offset_index

__all__ = ["READ_CHUNK_BYTES", "read_segment_range"]

log = logging.getLogger(__name__)

READ_CHUNK_BYTES = 8 * 1024 * 1024      # one ranged GET of the .log


def read_segment_range(store: ObjectStore, segment: RemoteLogSegmentMetadata, start: int, end: int, *,
                       include_headers: bool, fail_on_data_loss: bool,
                       encryption: EncryptionSettings | None = None,
                       txn_segments: Sequence[RemoteLogSegmentMetadata] | None = None,
                       read_ahead_chunks: int = REMOTE_READ_AHEAD_CHUNKS) -> Iterator[pa.RecordBatch]:
    """Arrow batches of the records of ``segment`` with ``start <= offset < end`` (an encrypted
    segment decrypted with ``encryption``'s keys, only the chunks read), at read_committed without
    the aborted transactions the ``.txnindex`` of ``txn_segments`` list; up to ``read_ahead_chunks``
    GETs of the ``.log`` in flight while a chunk is decoded."""
    segments = RemoteSegmentStore(store, encryption)
    try:
        aborted = None if txn_segments is None else AbortedFilter(_aborted(segments, txn_segments, start, end))
        yield from _read(segments, segment, start, end, include_headers, aborted, read_ahead_chunks)
    except RemoteResourceNotFoundError as exc:
        tp = segment.topic_id_partition
        lost = (f"{tp.topic}-{tp.partition}: remote segment [{segment.start_offset}, {segment.end_offset}] "
                f"({segment_key(segment.segment_id, segment.start_offset, LOG_SUFFIX)}) is gone from remote "
                f"storage (deleted by retention after the read was planned?): {exc}")
        if fail_on_data_loss:
            raise DataLossError(lost + f"; offsets {start}..{end - 1} cannot be read "
                                "(set failOnDataLoss=false to skip them)") from None
        log.warning("tierlog: %s; skipping offsets %d..%d", lost, start, end - 1)


def _aborted(segments: RemoteSegmentStore, txn_segments: Sequence[RemoteLogSegmentMetadata],
             start: int, end: int) -> list[dict]:
    """The aborted transactions overlapping ``[start, end)``, each ``.txnindex`` read (one GET) only
    until the search is complete. Their manifests list them: one gone is data loss, like the segment."""
    later = (s for s in txn_segments if s.end_offset >= start)
    return aborted_for((decode_entries(segments.fetch_index(s, IndexType.TRANSACTION)) for s in later), start, end)


def _read(segments: RemoteSegmentStore, segment: RemoteLogSegmentMetadata, start: int, end: int,
          include_headers: bool, aborted: AbortedFilter | None, ahead: int) -> Iterator[pa.RecordBatch]:
    tp = segment.topic_id_partition
    position = _start_position(segments, segment, start)
    with closing(_whole_batch_runs(segments, segment, position, ahead)) as runs:    # stops the GETs ahead
        for position, data in runs:
            try:
                chunk = decode_fetched(data, tp.topic, tp.partition, start, end, include_headers, aborted)
            except InvalidRecordError as exc:
                raise CorruptRemoteDataError(f"{_where(segment)}: bad batch after position {position}: {exc}") from None
            if chunk.batch is not None and chunk.batch.num_rows:
                yield chunk.batch
            if chunk.next_offset >= end:
                return


def _whole_batch_runs(segments: RemoteSegmentStore, segment: RemoteLogSegmentMetadata, position: int,
                      ahead: int) -> Generator[tuple[int, memoryview], None, None]:
    """The ``.log`` from ``position`` on as runs of whole batches, each with its file position: read in
    chunks of ``READ_CHUNK_BYTES`` (up to ``ahead`` GETs ahead). A batch cut at a chunk's end is
    completed from the next chunks and is a run of its own (a batch larger than a chunk spans
    several): only its bytes are copied, never a whole chunk."""
    size = segment.segment_size_in_bytes
    ranges = ((p, min(size, p + READ_CHUNK_BYTES)) for p in range(position, size, READ_CHUNK_BYTES))
    cut = bytearray()
    for data in read_ahead(lambda r: segments.fetch_log_segment(segment, *r), ranges, ahead):
        view = memoryview(data)
        if cut:
            view = view[_complete(cut, view):]
            if len(cut) < _first_batch_size(cut):         # not yet: the batch goes on in the next chunk
                _check_cut(segment, cut, size - position, position)
                continue
            if _whole_batches_end(cut) != len(cut):
                raise _no_whole_batch(segment, position)
            yield position, memoryview(cut)
            position, cut = position + len(cut), bytearray()
        whole = _whole_batches_end(view)
        if whole:
            yield position, view[:whole]
            position += whole
        if len(view) > whole:
            cut = bytearray(view[whole:])
            _check_cut(segment, cut, size - position, position)
    if cut:
        raise _no_whole_batch(segment, position)


def _no_whole_batch(segment: RemoteLogSegmentMetadata, position: int) -> CorruptRemoteDataError:
    return CorruptRemoteDataError(f"{_where(segment)}: no whole batch at position {position}")


def _complete(cut: bytearray, view: memoryview) -> int:
    """Append to ``cut`` (the start of a batch) the bytes of ``view`` up to the batch's end, or all of
    ``view`` if it ends first (its length field read as soon as ``cut`` holds it); how many were taken."""
    taken = min(len(view), max(0, LOG_OVERHEAD - len(cut)))
    cut += view[:taken]
    if len(cut) >= LOG_OVERHEAD:
        more = min(len(view) - taken, _first_batch_size(cut) - len(cut))
        cut += view[taken:taken + more]
        taken += more
    return taken


def _check_cut(segment: RemoteLogSegmentMetadata, cut: bytearray, left: int, position: int) -> None:
    """A cut batch that claims more than the ``left`` bytes of the segment from its position is corrupt."""
    if len(cut) >= LOG_OVERHEAD and _first_batch_size(cut) > left:
        raise _no_whole_batch(segment, position)


def _start_position(segments: RemoteSegmentStore, segment: RemoteLogSegmentMetadata, offset: int) -> int:
    base = base_offset_at(segments.fetch_log_segment(segment, 0, LENGTH_OFFSET))
    return parse_offset_index(segments.fetch_index(segment, IndexType.OFFSET)).position_for(base, offset)


def _first_batch_size(data) -> int:
    """The size the first batch's header claims (its length field and what precedes it), at least
    one header: a truncated or nonsensical one then fails the whole-batch check."""
    if len(data) < LOG_OVERHEAD:
        return HEADER_SIZE
    return max(HEADER_SIZE, batch_size_at(data))


def _whole_batches_end(data) -> int:
    """Where the whole batches at the front of ``data`` end (0: not even one)."""
    pos = 0
    while len(data) - pos >= HEADER_SIZE:
        size = batch_size_at(data, pos)
        if size < HEADER_SIZE or pos + size > len(data):
            break
        pos += size
    return pos


def _where(segment: RemoteLogSegmentMetadata) -> str:
    return segment_key(segment.segment_id, segment.start_offset, LOG_SUFFIX)
