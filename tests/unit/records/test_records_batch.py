"""Batch build/decode round trips and cross-checks against kafka-python's record code."""

import struct

import pytest
from crc32c import crc32c
from hypothesis import given, settings
from hypothesis import strategies as st
from kafka.record.default_records import DefaultRecordBatchBuilder
from kafka.record.memory_records import MemoryRecords

from tierlog.records import (
    HEADER_SIZE,
    CompressionType,
    Record,
    TimestampType,
    build_batch,
    decode_batches,
    parse_header,
    validate,
)

KAFKA_PYTHON_CODECS = [CompressionType.NONE, CompressionType.GZIP, CompressionType.LZ4, CompressionType.ZSTD]

headers_st = st.lists(st.tuples(st.text(max_size=8), st.none() | st.binary(max_size=8)), max_size=3)
record_st = st.tuples(
    st.integers(min_value=0, max_value=3),  # offset gap
    st.integers(min_value=-(2**40), max_value=2**40),  # timestamp delta
    st.none() | st.binary(max_size=20),
    st.none() | st.binary(max_size=200),
    headers_st,
)


def _records(specs, base_offset=0, base_ts=1_700_000_000_000, gaps=True):
    records, offset = [], base_offset
    for gap, ts_delta, key, value, headers in specs:
        offset += gap if gaps else 0
        records.append(Record(offset, base_ts + ts_delta, key, value, headers))
        offset += 1
    return records


@settings(max_examples=40, deadline=None)
@given(st.lists(record_st, min_size=1, max_size=12), st.sampled_from(list(CompressionType)),
       st.integers(min_value=0, max_value=2**40))
def test_build_decode_round_trip(specs, codec, base_offset):
    records = _records(specs, base_offset)
    batch = build_batch(records, base_offset=base_offset, compression=codec, partition_leader_epoch=7,
                        producer_id=42, producer_epoch=3, base_sequence=9)
    ((header, decoded),) = list(decode_batches(batch))
    assert decoded == records
    assert header.base_offset == base_offset
    assert header.last_offset == records[-1].offset
    assert header.records_count == len(records)
    assert header.max_timestamp == max(r.timestamp for r in records)
    assert header.base_timestamp == records[0].timestamp
    assert (header.partition_leader_epoch, header.producer_id, header.producer_epoch, header.base_sequence) == (
        7, 42, 3, 9)
    assert header.compression == codec and header.size == len(batch)


def test_header_layout_and_crc_range():
    batch = build_batch([Record(5, 1000, b"k", b"v")], base_offset=5, partition_leader_epoch=2)
    base, length, epoch, magic, crc, attributes = struct.unpack_from(">qiibIh", batch)
    assert (base, length + 12, epoch, magic, attributes) == (5, len(batch), 2, 2, 0)
    assert crc == crc32c(batch[21:])
    header = parse_header(batch)
    assert header.timestamp_type == TimestampType.CREATE_TIME
    assert not header.is_transactional and not header.is_control and not header.has_producer_id
    assert HEADER_SIZE == 61


def test_attribute_bits():
    batch = build_batch([Record(0, 5, None, b"")], compression=CompressionType.ZSTD,
                        timestamp_type=TimestampType.LOG_APPEND_TIME, transactional=True, control=True)
    header = parse_header(batch)
    assert header.attributes == 4 | 8 | 16 | 32
    assert header.is_transactional and header.is_control
    assert header.timestamp_type == TimestampType.LOG_APPEND_TIME


def test_log_append_time_batches_report_max_timestamp_for_every_record():
    batch = build_batch([Record(0, 10, None, b"a"), Record(1, 30, None, b"b")],
                        timestamp_type=TimestampType.LOG_APPEND_TIME)
    ((_, records),) = list(decode_batches(batch))
    assert [r.timestamp for r in records] == [30, 30]


def test_build_rejects_empty_and_unordered():
    with pytest.raises(ValueError):
        build_batch([])
    with pytest.raises(ValueError):
        build_batch([Record(1, 0, None, None), Record(1, 0, None, None)])
    with pytest.raises(ValueError):
        build_batch([Record(0, 0, None, None)], base_offset=1)


def test_decode_partial_tail_as_consumers_do():
    one = build_batch([Record(0, 1, None, b"x" * 50)])
    two = build_batch([Record(1, 2, None, b"y" * 50)], base_offset=1)
    blob = one + two[:-10]
    assert [h.base_offset for h, _ in decode_batches(blob, partial_ok=True)] == [0]
    assert [h.base_offset for h, _ in decode_batches(one + two[:30], partial_ok=True)] == [0]


@settings(max_examples=25, deadline=None)
@given(st.lists(record_st, min_size=1, max_size=10), st.sampled_from(KAFKA_PYTHON_CODECS))
def test_kafka_python_reads_ours(specs, codec):
    records = _records(specs, gaps=False)
    batch = build_batch(records, compression=codec)
    theirs = MemoryRecords(batch).next_batch()
    assert theirs.validate_crc()
    got = [Record(r.offset, r.timestamp, r.key, r.value, list(r.headers)) for r in theirs]
    assert got == records


@settings(max_examples=25, deadline=None)
@given(st.lists(record_st, min_size=1, max_size=10), st.sampled_from(KAFKA_PYTHON_CODECS))
def test_we_read_kafka_python(specs, codec):
    records = _records(specs, gaps=False)
    builder = DefaultRecordBatchBuilder(2, codec, False, 1234, 1, 0, 10_000_000)
    for record in records:
        builder.append(record.offset, record.timestamp, record.key, record.value, record.headers)
    batch = bytes(builder.build())
    validated = validate(batch, client=True)
    assert validated.record_count == len(records)
    ((header, decoded),) = list(decode_batches(batch))
    assert decoded == records
    assert header.producer_id == 1234
    assert header.compression in (codec, CompressionType.NONE)  # kafka-python skips codecs that do not help
