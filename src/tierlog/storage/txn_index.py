"""The aborted-transaction index of a log (Kafka's ``TransactionIndex`` / ``AbortedTxn``).

One ``<20-digit segment base>.txnindex`` file per segment that holds ABORT markers
of non-empty transactions, an append-only list of 34-byte entries, big-endian::

    Version int16 (0) | ProducerId int64 | FirstOffset int64 | LastOffset int64 | LastStableOffset int64

LastOffset is the abort marker's offset; LastStableOffset the first offset of
another producer's transaction that was still open then (else LastOffset + 1),
so a reader can stop scanning once it passes the end of what it fetched.
``TransactionIndexes`` keeps every entry of the log in memory in marker order
(one per aborted transaction: few) and the files in step: written as markers are
appended, truncated with the log, dropped with their segments, read when the log
opens.  ``aborted_between`` is what a read_committed fetch answers as
AbortedTransactions.
"""
from __future__ import annotations

import bisect
import logging
import struct
from pathlib import Path
from typing import NamedTuple

__all__ = ["TXN_ENTRY_BYTES", "TXN_INDEX_SUFFIX", "AbortedTxn", "TransactionIndexes", "collect_aborted",
           "decode_entries"]

log = logging.getLogger(__name__)

TXN_INDEX_SUFFIX = ".txnindex"
VERSION = 0
_ENTRY = struct.Struct(">hqqqq")        # 34 bytes
TXN_ENTRY_BYTES = _ENTRY.size


class AbortedTxn(NamedTuple):
    producer_id: int
    first_offset: int
    last_offset: int            # the ABORT marker
    last_stable_offset: int


def encode_entry(e: AbortedTxn) -> bytes:
    return _ENTRY.pack(VERSION, e.producer_id, e.first_offset, e.last_offset, e.last_stable_offset)


def decode_entries(data: bytes) -> list[AbortedTxn]:
    """The whole entries of a file (a torn tail is dropped); an unknown version ends the file."""
    out = []
    for pos in range(0, len(data) - _ENTRY.size + 1, _ENTRY.size):
        version, *fields = _ENTRY.unpack_from(data, pos)
        if version != VERSION:
            break
        out.append(AbortedTxn(*fields))
    return out


def collect_aborted(entries, fetch_offset: int, upper_bound: int) -> tuple[list[AbortedTxn], bool]:
    """Kafka's ``TransactionIndex.collectAbortedTxns`` over ``entries`` (in marker order): those
    whose transaction overlaps [fetch_offset, upper_bound) (lastOffset >= fetch offset and
    firstOffset < the bound), and whether the search is complete (an entry's lastStableOffset
    reached the bound: no later entry, in this index or a later segment's, starts below it)."""
    out = []
    for e in entries:
        if e.last_offset >= fetch_offset and e.first_offset < upper_bound:
            out.append(e)
        if e.last_stable_offset >= upper_bound:
            return out, True
    return out, False


def _path(directory: Path, segment_base: int) -> Path:
    return directory / f"{segment_base:020d}{TXN_INDEX_SUFFIX}"


def _base_of(path: Path) -> int | None:
    stem = path.name[:-len(TXN_INDEX_SUFFIX)] if path.name.endswith(TXN_INDEX_SUFFIX) else ""
    return int(stem) if len(stem) == 20 and stem.isdigit() else None


class TransactionIndexes:
    def __init__(self, directory: Path) -> None:
        self.directory = directory
        self._entries: list[tuple[int, AbortedTxn]] = []       # (segment base, entry), by last offset
        for path in sorted(directory.glob(f"*{TXN_INDEX_SUFFIX}")):
            base = _base_of(path)
            if base is not None:
                try:
                    self._entries += [(base, e) for e in decode_entries(path.read_bytes())]
                except OSError as exc:
                    log.warning("%s: cannot read %s: %s", directory.name, path.name, exc)
        self._entries.sort(key=lambda be: be[1].last_offset)
        self._lasts = [e.last_offset for _b, e in self._entries]     # for bisect

    def __len__(self) -> int:
        return len(self._entries)

    def append(self, segment_base: int, entry: AbortedTxn) -> None:
        assert not self._entries or self._entries[-1][1].last_offset < entry.last_offset, (self._entries[-1], entry)
        with open(_path(self.directory, segment_base), "ab") as f:
            f.write(encode_entry(entry))
        self._entries.append((segment_base, entry))
        self._lasts.append(entry.last_offset)

    def aborted_between(self, fetch_offset: int, upper_bound: int) -> list[AbortedTxn]:
        """Entries whose transaction overlaps [fetch_offset, upper_bound) (Kafka's
        ``collectAbortedTxns``: lastOffset >= fetch offset and firstOffset < the end)."""
        after = (e for _b, e in self._entries[bisect.bisect_left(self._lasts, fetch_offset):])
        return collect_aborted(after, fetch_offset, upper_bound)[0]

    def file_for(self, segment_base: int) -> Path | None:
        """The ``.txnindex`` of the segment at ``segment_base`` (None: it has no entry, so no file),
        uploaded with the segment (KIP-405: RemoteStorageManager's IndexType.TRANSACTION)."""
        if not any(b == segment_base for b, _e in self._entries):
            return None
        path = _path(self.directory, segment_base)
        return path if path.exists() else None

    def entries(self) -> list[AbortedTxn]:
        """Every entry, in marker order."""
        return [e for _b, e in self._entries]

    def replace(self, bases: list[int], new_base: int, kept: list[AbortedTxn]) -> None:
        """The log cleaner swapped the segment at ``new_base`` in for those at ``bases``: their
        entries become ``kept`` (the ABORT markers it kept whose data was still there)."""
        gone = set(bases)
        self._entries = sorted([be for be in self._entries if be[0] not in gone] + [(new_base, e) for e in kept],
                               key=lambda be: be[1].last_offset)
        self._lasts = [e.last_offset for _b, e in self._entries]
        self._rewrite(gone | {new_base})

    def truncate_to(self, offset: int) -> None:
        """Drop entries whose marker is at or above ``offset`` (the log was truncated, or a replay
        from ``offset`` writes them again)."""
        keep = [be for be in self._entries if be[1].last_offset < offset]
        if len(keep) == len(self._entries):
            return
        self._entries = keep
        self._lasts = self._lasts[:len(keep)]
        self._rewrite({b for b, _e in self._entries} | {b for b in self._bases_on_disk()})

    def drop_segments_below(self, base: int) -> None:
        """Segments below ``base`` are gone: their entries and files too."""
        if not self._entries or self._entries[0][0] >= base:
            return
        self._entries = [be for be in self._entries if be[0] >= base]
        self._lasts = [e.last_offset for _b, e in self._entries]
        for b in self._bases_on_disk():
            if b < base:
                _path(self.directory, b).unlink(missing_ok=True)

    def clear(self) -> None:
        self._entries, self._lasts = [], []
        for b in self._bases_on_disk():
            _path(self.directory, b).unlink(missing_ok=True)

    def _bases_on_disk(self) -> list[int]:
        return [b for b in (_base_of(p) for p in self.directory.glob(f"*{TXN_INDEX_SUFFIX}")) if b is not None]

    def _rewrite(self, bases: set[int]) -> None:
        for b in bases:
            data = b"".join(encode_entry(e) for sb, e in self._entries if sb == b)
            path = _path(self.directory, b)
            if data:
                path.write_bytes(data)
            else:
                path.unlink(missing_ok=True)
