"""The __remote_log_metadata partition of a user partition (Kafka's partitioner)."""

from __future__ import annotations

import pytest
from kafka.partitioner.default import murmur2 as kafka_python_murmur2

from tierlog.tiered.metadata_partitioner import (
    java_objects_hash_longs_int,
    metadata_partition,
    murmur2,
)


@pytest.mark.parametrize(("data", "expected"), [       # Kafka's UtilsTest.testMurmur2 cases
    (b"21", -973932308),
    (b"foobar", -790332482),
    (b"a-little-bit-long-string", -985981536),
    (b"a-little-bit-longer-string", -1486304829),
    (b"lkjh234lh9fiuh90y23oiuhsafujhadof229phr9h19h89h8", -58897971),
    (b"abc", 479470107),
])
def test_murmur2_matches_kafka(data, expected):
    assert murmur2(data) == expected


@pytest.mark.parametrize("data", [b"", b"x", b"\xff\xfe\xfd\xfc", bytes(range(37)), b"\x80" * 9])
def test_murmur2_agrees_with_kafka_python(data):
    assert murmur2(data) & 0x7FFFFFFF == kafka_python_murmur2(bytearray(data)) & 0x7FFFFFFF


@pytest.mark.parametrize(("lsb", "msb", "partition", "expected"), [
    (1, 0, 0, 31 * 31 * 32),                   # ((31 + 1) * 31 + 0) * 31 + 0
    (-1, -1, 0, 31 * 31 * 31),                 # Long.hashCode(-1) == 0
    (1 << 32, 0, 5, 31 * 31 * 32 + 5),         # Long.hashCode(2^32) == 1
    (0x7FFFFFFF, 0x7FFFFFFF, 0x7FFFFFFF, 31**3 + (31**2 + 31 + 1) * 0x7FFFFFFF),   # wraps past 2^31
])
def test_objects_hash_overflows_like_java(lsb, msb, partition, expected):
    """``expected`` is the unbounded result; Java keeps its low 32 bits, signed."""
    wrapped = ((expected + 2**31) % 2**32) - 2**31
    assert java_objects_hash_longs_int(lsb, msb, partition) == wrapped


def test_metadata_partition_is_stable_in_range_and_spreads():
    topic_id = bytes.fromhex("0f1e2d3c4b5a69788796a5b4c3d2e1f0")
    assert metadata_partition(topic_id, 0) == metadata_partition(topic_id, 0)
    chosen = {metadata_partition(topic_id, p) for p in range(200)}
    assert chosen <= set(range(50)) and len(chosen) > 30
    assert {metadata_partition(topic_id, p, 1) for p in range(10)} == {0}
