"""records.record_bounds: every path (runs of one size, lockstep over many batches, the loop)
gives the bounds a plain record-by-record walk gives, and rejects lengths that do not add up."""
import random

import numpy as np
import pytest

from tierlog.protocol.primitives import encode_varint
from tierlog.records import (
    HEADER_SIZE,
    InvalidRecordError,
    Record,
    build_batch,
    validate_batch,
)
from tierlog.records import record_bounds as rb
from tierlog.records.record import read_varint


def _chunk(batches: list[list[int]], keyed: bool = False) -> tuple[bytes, list[tuple[int, int, int]]]:
    """Batches of records with the given value sizes, and their (payload start, end, count) spans."""
    buf, offset = bytearray(), 0
    for sizes in batches:
        records = [Record(offset + i, 1_700_000_000_000 + 3 * i, b"k%d" % (offset + i) if keyed else None,
                          bytes([i % 251]) * size) for i, size in enumerate(sizes)]
        buf += build_batch(records, base_offset=offset)
        offset += len(sizes)
    view, spans, pos = memoryview(bytes(buf)), [], 0
    while pos < len(view):
        header = validate_batch(view, pos)
        spans.append((pos + HEADER_SIZE, pos + header.size, header.records_count))
        pos += header.size
    return bytes(buf), spans


def _walk(buf: bytes, spans) -> tuple[list[int], list[int]]:
    starts, ends = [], []
    for pos, _end, count in spans:
        for _ in range(count):
            n, pos = read_varint(buf, pos)
            starts.append(pos)
            pos += n
            ends.append(pos)
    return starts, ends


def _check(batches, keyed=False):
    buf, spans = _chunk(batches, keyed)
    starts, ends = rb.record_bounds(buf, spans)
    assert (starts.tolist(), ends.tolist()) == _walk(buf, spans)


def test_runs_of_one_size_and_size_steps():
    # 1 KiB values: the offset delta's varint grows at 64 and 8,192, the timestamp's at 22
    _check([[1024] * 1000, [1024] * 70, [7] * 300])


def test_runs_that_break_anywhere():
    rng = random.Random(3)
    _check([[rng.choice([100, 100, 100, 101, 5000]) for _ in range(rng.randint(64, 400))] for _ in range(12)])
    _check([[100 + (i // 20) % 2 for i in range(3000)], [300] * 17 + [5] * 200])     # runs of 20, then of 200


def test_many_small_batches_go_in_lockstep():
    rng = random.Random(4)
    batches = [[rng.randint(0, 300) for _ in range(rng.randint(1, 20))] for _ in range(rb.LOCKSTEP_MIN_BATCHES * 3)]
    _check(batches, keyed=True)


def test_records_over_8_kib_in_lockstep():
    _check([[9000 if i % 3 else 10] for i in range(rb.LOCKSTEP_MIN_BATCHES + 5)] + [[20000, 5, 20000]])


def test_few_batches_of_every_size_take_the_loop():
    rng = random.Random(5)
    _check([[rng.randint(0, 3000) for _ in range(200)] for _ in range(3)])


def test_no_batch():
    starts, ends = rb.record_bounds(b"", [])
    assert starts.size == ends.size == 0


@pytest.mark.parametrize("batches", [[[50] * 100], [[50, 60, 70]] * (rb.LOCKSTEP_MIN_BATCHES + 1), [[50, 60, 70]]])
def test_lengths_that_do_not_add_up_are_corrupt(batches):
    buf, spans = _chunk(batches)
    first, end, count = spans[0]
    with pytest.raises(InvalidRecordError):         # one record more than the batch holds
        rb.record_bounds(buf, [(first, end, count + 1), *spans[1:]])
    with pytest.raises(InvalidRecordError):         # the last record runs past the payload
        rb.record_bounds(buf, [(first, end - 1, count), *spans[1:]])
    with pytest.raises(InvalidRecordError):         # a record fewer: the lengths stop short
        rb.record_bounds(buf, [(first, end, count - 1), *spans[1:]])


def test_a_record_count_the_batch_cannot_hold_is_corrupt_before_any_allocation():
    with pytest.raises(InvalidRecordError, match="count"):
        rb.record_bounds(b"\x00" * 100, [(0, 100, 2**31 - 1)])


def test_negative_length_is_corrupt():
    buf = bytes([0x01]) + bytes(20)                 # zigzag 0x01 = -1
    with pytest.raises(InvalidRecordError):
        rb.record_bounds(buf, [(0, 21, 1)])


def test_varints_match_the_scalar_reader():
    rng = random.Random(6)
    values = [rng.choice([0, -1, 63, 64, -65, 8191, 8192, 2**31 - 1, -2**31]) for _ in range(500)]
    buf = b"".join(encode_varint(v) for v in values)
    positions, pos = [], 0
    for _ in values:
        positions.append(pos)
        pos = read_varint(buf, pos)[1]
    got, after = rb.varints(np.frombuffer(buf, dtype=np.uint8), np.asarray(positions, dtype=np.int64))
    assert got.tolist() == values
    assert after.tolist() == positions[1:] + [len(buf)]
