"""Validation error codes and in-place stamping."""

import struct

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from tierlog.records import (
    CORRUPT_MESSAGE,
    INVALID_RECORD,
    MESSAGE_TOO_LARGE,
    UNSUPPORTED_COMPRESSION_TYPE,
    UNSUPPORTED_FOR_MESSAGE_FORMAT,
    CompressionType,
    InvalidRecordError,
    Record,
    TimestampType,
    build_batch,
    compute_crc,
    decode_batches,
    parse_header,
    set_base_offset,
    set_log_append_time,
    set_partition_leader_epoch,
    validate,
)


def _batch(n=3, base_offset=0, ts=1000, **kwargs):
    return bytearray(build_batch([Record(base_offset + i, ts + i, b"k%d" % i, b"v" * 30) for i in range(n)],
                                 base_offset=base_offset, **kwargs))


def _error(buf, **kwargs):
    with pytest.raises(InvalidRecordError) as err:
        validate(buf, **kwargs)
    return err.value.error_code


def _recrc(buf, pos=0):
    struct.pack_into(">I", buf, pos + 17, compute_crc(buf, pos))
    return buf


def test_valid_blob_of_several_batches():
    blob = _batch(3) + _batch(2, base_offset=3, ts=2000) + _batch(4, base_offset=5, ts=1500)
    result = validate(blob)
    assert result.positions == [0, len(_batch(3)), len(_batch(3)) + len(_batch(2, 3, 2000))]
    assert result.record_count == 9
    assert result.max_timestamp == 2001 and result.max_timestamp_offset_delta == 4
    assert result.size == len(blob)
    assert [h.base_offset for h in result.headers] == [0, 3, 5]


def test_empty_blob_validates_to_nothing():
    assert validate(b"").headers == []


@settings(max_examples=60, deadline=None)
@given(st.data())
def test_any_flipped_byte_after_the_epoch_is_caught(data):
    buf = _batch(3)
    index = data.draw(st.integers(min_value=16, max_value=len(buf) - 1))
    buf[index] ^= data.draw(st.integers(min_value=1, max_value=255))
    assert _error(buf) in (CORRUPT_MESSAGE, UNSUPPORTED_FOR_MESSAGE_FORMAT)


@settings(max_examples=30, deadline=None)
@given(st.data())
def test_any_truncation_is_corrupt(data):
    buf = _batch(2) + _batch(2, base_offset=2)
    cut = data.draw(st.integers(min_value=1, max_value=len(buf) - 1).filter(lambda n: n != len(buf) // 2))
    assert _error(buf[:cut]) == CORRUPT_MESSAGE


@pytest.mark.parametrize("magic, code", [(0, UNSUPPORTED_FOR_MESSAGE_FORMAT), (1, UNSUPPORTED_FOR_MESSAGE_FORMAT),
                                         (3, CORRUPT_MESSAGE)])
def test_magic(magic, code):
    buf = _batch()
    buf[16] = magic
    assert _error(buf) == code


def test_length_below_header_is_corrupt():
    buf = _batch()
    struct.pack_into(">i", buf, 8, 10)
    assert _error(buf) == CORRUPT_MESSAGE


def test_unknown_codec():
    buf = _batch()
    struct.pack_into(">h", buf, 21, 5)
    assert _error(_recrc(buf)) == UNSUPPORTED_COMPRESSION_TYPE


def test_max_batch_bytes():
    buf = _batch(5)
    assert _error(buf, max_batch_bytes=len(buf) - 1) == MESSAGE_TOO_LARGE
    validate(buf, max_batch_bytes=len(buf))


def test_impossible_record_count():
    buf = _batch(2)
    struct.pack_into(">i", buf, 57, 1000)
    assert _error(_recrc(buf)) == INVALID_RECORD


@pytest.mark.parametrize("field, value", [(57, 2), (23, 0), (57, 0)])
def test_client_count_must_match_offsets(field, value):
    buf = _batch(3)
    struct.pack_into(">i", buf, field, value)
    _recrc(buf)
    validate(buf)  # a replicated (compacted) batch may have that shape
    assert _error(buf, client=True) == INVALID_RECORD


def test_client_cannot_write_control_batches():
    buf = bytearray(build_batch([Record(0, 0, b"\x00\x00\x00\x00", b"")], control=True))
    validate(buf)
    assert _error(buf, client=True) == INVALID_RECORD


def test_client_producer_id_needs_a_sequence():
    buf = _batch(producer_id=5, producer_epoch=0, base_sequence=-1)
    assert _error(buf, client=True) == INVALID_RECORD
    validate(_batch(producer_id=5, producer_epoch=0, base_sequence=0), client=True)


def test_stamping_offset_and_epoch_keeps_the_crc():
    buf = _batch(3, compression=CompressionType.LZ4)
    set_base_offset(buf, 0, 1_000_000)
    set_partition_leader_epoch(buf, 0, 17)
    header = validate(buf).headers[0]
    assert (header.base_offset, header.last_offset, header.partition_leader_epoch) == (1_000_000, 1_000_002, 17)
    ((_, records),) = list(decode_batches(buf))
    assert [r.offset for r in records] == [1_000_000, 1_000_001, 1_000_002]


def test_log_append_time_stamp_recomputes_crc():
    buf = _batch(3, ts=1000)
    before = parse_header(buf)
    set_log_append_time(buf, 0, 99_999)
    header = validate(buf).headers[0]
    assert header.timestamp_type == TimestampType.LOG_APPEND_TIME
    assert header.max_timestamp == 99_999 and header.base_timestamp == before.base_timestamp
    assert header.crc != before.crc
    assert all(r.timestamp == 99_999 for _, recs in decode_batches(buf) for r in recs)
    snapshot = bytes(buf)
    set_log_append_time(buf, 0, 99_999)
    assert bytes(buf) == snapshot
