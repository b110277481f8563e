"""Where every record of some v2 record batches starts and ends, with numpy.

A batch's records follow each other, each led by its length (a zigzag varint), so a
record's position depends on every length before it: a plain loop is one Python step
per record. Two things make most of that vector work:

1. **Runs of one size.** Records of a batch often have one size for long runs
   (fixed-width values; a producer's records differ by a byte where the offset or
   timestamp delta needs one more varint byte). From a record's size, the positions
   of all the batch's later records are predicted and checked at once: the run holds
   up to the first record whose length disagrees, which then gives the next size.
   Each round settles at least one record of every open batch; a batch of fewer than
   ``RUN_FIRST_WINDOW`` records, or one that settles fewer than ``RUN_MIN_RECORDS`` in a
   round, leaves this path.
2. **Lockstep over many batches.** Batches are independent: the k-th record of every
   batch still open is read in one numpy step, so a chunk of many small batches (a
   producer's default 16 KiB ``batch.size``) takes as many steps as its longest batch
   has records.

What is left once fewer than ``LOCKSTEP_MIN_BATCHES`` batches are open (a step costs
about as much as that many records of the loop) is read by the per-record loop.
Every record length is checked: not negative, inside its batch, and the lengths add
up to the batch's size.
"""
from __future__ import annotations

from array import array
from typing import Any, NoReturn

import numpy as np

from tierlog.records import InvalidRecordError
from tierlog.records.errors import CORRUPT_MESSAGE
from tierlog.records.record import read_varint

__all__ = ["LOCKSTEP_MIN_BATCHES", "MIN_RECORD_BYTES", "RUN_FIRST_WINDOW", "RUN_GROWTH", "RUN_MIN_RECORDS", "record_bounds",
           "varints"]

LOCKSTEP_MIN_BATCHES = 64
RUN_MIN_RECORDS = 16
RUN_FIRST_WINDOW = 64       # a batch's first round predicts this many records: a batch of
                            # records of every size costs little before it leaves the runs
RUN_GROWTH = 4              # a round predicts this many times what the batch's last round settled:
                            # the predictions checked stay proportional to the records settled
# length, attributes, timestamp delta, offset delta, key length, value length, header count
MIN_RECORD_BYTES = 7


class _Open:
    """The batches not read to their end yet: per batch, the position of its next record,
    its payload end, where its next record's bounds go in the output, and how many are left."""

    __slots__ = ("end", "left", "out", "pos")

    def __init__(self, pos: np.ndarray, end: np.ndarray, out: np.ndarray, left: np.ndarray) -> None:
        self.pos, self.end, self.out, self.left = pos, end, out, left

    def __len__(self) -> int:
        return len(self.pos)

    def keep(self, mask: np.ndarray) -> _Open:
        return _Open(self.pos[mask], self.end[mask], self.out[mask], self.left[mask])

    def close_finished(self) -> _Open:
        """The batches with records left; a finished one must end exactly at its payload's end."""
        done = self.left == 0
        if not done.any():
            return self
        if np.any(self.pos[done] != self.end[done]):
            _corrupt("record lengths do not add up to the batch size")
        return self.keep(~done)


def record_bounds(buf: Any, spans: Any) -> tuple[np.ndarray, np.ndarray]:
    """Start (after the length varint) and end of every record, batch by batch.

    ``spans`` holds (payload start, payload end, record count) per batch in ``buf``.
    """
    raw = np.frombuffer(buf, dtype=np.uint8)
    table = np.asarray(spans, dtype=np.int64).reshape(-1, 3)
    pos, end, count = table[:, 0], table[:, 1], table[:, 2]
    if np.any(count * MIN_RECORD_BYTES > end - pos):
        _corrupt("a batch's record count does not fit its size")
    starts = np.empty(int(count.sum()), dtype=np.int64)
    ends = np.empty_like(starts)
    batches = _Open(pos.copy(), end, np.cumsum(count) - count, count.copy()).close_finished()
    slow = [batches.keep(batches.left < RUN_FIRST_WINDOW)]       # small batches: lockstep or the loop
    batches = batches.keep(batches.left >= RUN_FIRST_WINDOW)
    window = np.full(len(batches), RUN_FIRST_WINDOW, dtype=np.int64)
    while len(batches):
        batches, settled = _runs(raw, batches, window, starts, ends)
        going = (settled >= RUN_MIN_RECORDS) & (batches.left > 0)
        slow.append(batches.keep(~going))                   # finished ones are checked with the rest
        batches, window = batches.keep(going), settled[going] * RUN_GROWTH
    rest = _concat(slow).close_finished()
    while len(rest) >= LOCKSTEP_MIN_BATCHES:
        rest = _step(raw, rest, starts, ends).close_finished()
    for i in range(len(rest)):
        _loop(buf, int(rest.pos[i]), int(rest.end[i]), int(rest.left[i]), int(rest.out[i]), starts, ends)
    return starts, ends


def _runs(raw: np.ndarray, b: _Open, window: np.ndarray, starts: np.ndarray, ends: np.ndarray) -> tuple[_Open, np.ndarray]:
    """One round of runs: each batch's records settled from its next record's size on (at
    most its ``window`` of them), and how many each settled (at least one)."""
    length, after = varints(raw, b.pos)
    stride = after + length - b.pos
    if length.min() < 0 or (b.pos + stride > b.end).any():
        _corrupt("a record's length runs outside its batch")
    take = np.minimum(b.left, window)
    first = np.cumsum(take) - take                          # each batch's slice of the predictions
    j = np.arange(int(take.sum()), dtype=np.int64) - np.repeat(first, take)
    step = np.repeat(stride, take)
    predicted = np.repeat(b.pos, take) + j * step
    length, after = _guessed_lengths(raw, predicted)
    holds = (after + length == predicted + step) & (length >= 0) & (predicted + step <= np.repeat(b.end, take))
    settled = np.minimum.reduceat(np.where(holds, np.repeat(take, take), j), first)
    keep = j < np.repeat(settled, take)
    out = np.repeat(b.out, take)[keep] + j[keep]
    starts[out] = after[keep]
    ends[out] = after[keep] + length[keep]
    moved = _Open(b.pos + settled * stride, b.end, b.out + settled, b.left - settled)
    return moved, settled


def _step(raw: np.ndarray, b: _Open, starts: np.ndarray, ends: np.ndarray) -> _Open:
    """Lockstep: the next record of every open batch."""
    if (b.pos >= b.end).any():
        _corrupt("record lengths do not add up to the batch size")
    length, after = _short_varints(raw, b.pos)
    end = after + length
    if length.min() < 0 or (end > b.end).any():
        _corrupt("a record's length runs outside its batch")
    starts[b.out] = after
    ends[b.out] = end
    return _Open(end, b.end, b.out + 1, b.left - 1)


def _short_varints(raw: np.ndarray, p: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """``varints`` with fewer numpy calls when every varint has 1 or 2 bytes (values below
    8,192: records under 8 KiB)."""
    b0 = raw[p].astype(np.int64)
    b1 = raw[np.minimum(p + 1, len(raw) - 1)].astype(np.int64)
    two = b0 >> 7
    if (two & (b1 >> 7)).any():
        return varints(raw, p)
    val = (b0 & 0x7F) | ((b1 << 7) * two)
    return (val >> 1) ^ -(val & 1), p + 1 + two


def _concat(parts: list[_Open]) -> _Open:
    if not parts:
        empty = np.empty(0, dtype=np.int64)
        return _Open(empty, empty, empty, empty)
    return _Open(*(np.concatenate([getattr(p, f) for p in parts]) for f in ("pos", "end", "out", "left")))


def _loop(buf: Any, pos: int, payload_end: int, left: int, out: int, starts: np.ndarray, ends: np.ndarray) -> None:
    """The per-record loop over the last ``left`` records of one batch, stored from index ``out``."""
    lo, hi = array("q"), array("q")
    add_start, add_end = lo.append, hi.append
    for _ in range(left):
        if pos >= payload_end:
            _corrupt("record lengths do not add up to the batch size")
        b = buf[pos]
        if b < 0x80:                                # 1-byte varint: lengths < 64
            n = (b >> 1) ^ -(b & 1)
            pos += 1
        else:
            b2 = buf[pos + 1]
            if b2 < 0x80:                           # 2-byte varint: lengths < 8192
                v = (b & 0x7F) | (b2 << 7)
                n = (v >> 1) ^ -(v & 1)
                pos += 2
            else:
                n, pos = read_varint(buf, pos)
        if n < 0:
            _corrupt("a record's length runs outside its batch")
        add_start(pos)
        pos += n
        add_end(pos)
    if pos != payload_end:
        _corrupt("record lengths do not add up to the batch size")
    starts[out:out + left] = np.frombuffer(lo, dtype=np.int64)
    ends[out:out + left] = np.frombuffer(hi, dtype=np.int64)


def varints(raw: np.ndarray, p: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Zigzag varints at positions ``p``, all at once: (values, positions after them)."""
    signed, p, too_long = _decode(raw, p, 10)
    if too_long.size:
        _corrupt("varint longer than 10 bytes")
    return signed, p


def _guessed_lengths(raw: np.ndarray, p: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Record lengths read at positions that may not be records: a varint longer than an
    int32's 5 bytes reads as -1 (no record there) instead of an error."""
    signed, p, too_long = _decode(raw, p, 5)
    signed[too_long] = -1
    return signed, p


def _decode(raw: np.ndarray, p: np.ndarray, max_bytes: int) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """(values, positions after them, indices of varints longer than ``max_bytes``)."""
    last = len(raw) - 1
    b = raw[np.minimum(p, last)]
    val = (b & 0x7F).astype(np.uint64)
    p = p + 1
    idx = np.flatnonzero(b >= 0x80)
    for shift in range(7, 7 * max_bytes, 7):
        if not idx.size:
            break
        b = raw[np.minimum(p[idx], last)]
        val[idx] |= (b & 0x7F).astype(np.uint64) << np.uint64(shift)
        p[idx] += 1
        idx = idx[b >= 0x80]
    signed = (val >> np.uint64(1)).astype(np.int64) ^ -(val & np.uint64(1)).astype(np.int64)
    return signed, p, idx


def _corrupt(why: str) -> NoReturn:
    raise InvalidRecordError(CORRUPT_MESSAGE, why)
