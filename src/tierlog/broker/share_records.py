"""Which records of a share fetch's read go out, and which acquired offsets are no records at all
(KIP-932), over the batch bytes the leader read; only batch headers are looked at.

A member may only be handed what it can consume: data batches.  An acquired offset outside every
data batch -- a transaction marker (control batch), a record of an aborted transaction when the
group reads read_committed (the log's aborted transactions: producer id, first offset, marker
offset), an offset compaction removed -- is a gap: the leader archives it for the member (Kafka's
share-partition does the same for control records and aborted transactions) and leaves it out of
AcquiredRecords.  The records sent are the data batches overlapping what stays acquired.
"""
from __future__ import annotations

from collections.abc import Iterable, Iterator, Sequence
from typing import NamedTuple

from tierlog.group.share_partition import Acquired
from tierlog.records.header import HEADER_SIZE, BatchHeader, parse_header

__all__ = ["Selection", "covered_end", "headers", "select"]


class Selection(NamedTuple):
    records: bytes                          # the data batches that hold acquired records
    acquired: list[Acquired]                # what stays acquired (runs within data batches)
    gaps: list[tuple[int, int]]             # acquired (first, last inclusive) that are no records: archive them


def headers(buf: bytes) -> Iterator[tuple[int, BatchHeader]]:
    """(position, header) of each whole batch of ``buf``, headers only: the log checked each
    batch's CRC when it was appended (and a consumer checks it again), so this costs one
    header parse per batch, not a pass over the bytes."""
    pos = 0
    while pos + HEADER_SIZE <= len(buf):
        header = parse_header(buf, pos)
        if header.batch_length <= 0 or pos + header.size > len(buf):
            return
        yield pos, header
        pos += header.size


def covered_end(buf: bytes) -> int | None:
    """The offset after the last whole batch of ``buf`` (None: no whole batch)."""
    end = None
    for _pos, header in headers(buf):
        end = header.next_offset
    return end


def select(buf: bytes, acquired: Sequence[Acquired], aborted: Iterable[tuple[int, int, int]] = ()) -> Selection:
    """Split ``acquired`` into what the data batches of ``buf`` hold and the gaps; ``aborted`` are
    (producer id, first offset, marker offset) of aborted transactions (read_committed only)."""
    aborted_by_producer: dict[int, list[tuple[int, int]]] = {}
    for producer_id, first, last in aborted:
        aborted_by_producer.setdefault(producer_id, []).append((first, last))
    data: list[tuple[int, int, int, int]] = []          # (first, last, pos, size) of each data batch
    for pos, h in headers(buf):
        if h.is_control or (h.is_transactional and any(
                f <= h.base_offset <= m for f, m in aborted_by_producer.get(h.producer_id, ()))):
            continue
        data.append((h.base_offset, h.last_offset, pos, h.size))
    kept: list[Acquired] = []
    gaps: list[tuple[int, int]] = []
    used: set[int] = set()
    for run in acquired:
        cursor = run.first_offset
        for i, (first, last, _pos, _size) in enumerate(data):
            lo, hi = max(first, run.first_offset), min(last, run.last_offset)
            if lo > hi:
                continue
            if lo > cursor:
                gaps.append((cursor, lo - 1))
            if kept and kept[-1].last_offset == lo - 1 and kept[-1].delivery_count == run.delivery_count:
                kept[-1] = Acquired(kept[-1].first_offset, hi, run.delivery_count)
            else:
                kept.append(Acquired(lo, hi, run.delivery_count))
            used.add(i)
            cursor = hi + 1
        if cursor <= run.last_offset:
            gaps.append((cursor, run.last_offset))
    records = b"".join(buf[pos:pos + size] for i, (_f, _l, pos, size) in enumerate(data) if i in used)
    return Selection(records, kept, gaps)
