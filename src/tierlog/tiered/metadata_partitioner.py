"""Which ``__remote_log_metadata`` partition holds a user partition's records.

Kafka's ``RemoteLogMetadataTopicPartitioner``: the 4-byte big-endian form of
Java's ``Objects.hash(topicId.leastSignificantBits, topicId.mostSignificantBits,
partition)``, hashed with Kafka's murmur2, made positive (``& 0x7fffffff``),
modulo the metadata topic's partition count.
"""

from __future__ import annotations

__all__ = [
    "REMOTE_LOG_METADATA_TOPIC",
    "REMOTE_LOG_METADATA_TOPIC_PARTITIONS_DEFAULT",
    "java_objects_hash_longs_int",
    "metadata_partition",
    "murmur2",
]

REMOTE_LOG_METADATA_TOPIC = "__remote_log_metadata"
REMOTE_LOG_METADATA_TOPIC_PARTITIONS_DEFAULT = 50

_M32 = 0xFFFFFFFF
_MURMUR_SEED = 0x9747B28C
_MURMUR_M = 0x5BD1E995
_MURMUR_R = 24


def _int32(value: int) -> int:
    value &= _M32
    return value - (1 << 32) if value & 0x80000000 else value


def murmur2(data: bytes) -> int:
    """Kafka's ``Utils.murmur2`` (a signed 32-bit result)."""
    length = len(data)
    h = (_MURMUR_SEED ^ length) & _M32
    whole = length - length % 4
    for i in range(0, whole, 4):
        k = int.from_bytes(data[i:i + 4], "little")
        k = (k * _MURMUR_M) & _M32
        k ^= k >> _MURMUR_R
        k = (k * _MURMUR_M) & _M32
        h = ((h * _MURMUR_M) & _M32) ^ k
    tail = length % 4
    if tail == 3:
        h ^= data[whole + 2] << 16
    if tail >= 2:
        h ^= data[whole + 1] << 8
    if tail >= 1:
        h ^= data[whole]
        h = (h * _MURMUR_M) & _M32
    h ^= h >> 13
    h = (h * _MURMUR_M) & _M32
    h ^= h >> 15
    return _int32(h)


def _java_long_hash(value: int) -> int:
    """``Long.hashCode``: (int)(value ^ (value >>> 32)) of a signed 64-bit value."""
    unsigned = value & 0xFFFFFFFFFFFFFFFF
    return _int32(unsigned ^ (unsigned >> 32))


def java_objects_hash_longs_int(lsb: int, msb: int, partition: int) -> int:
    """``Objects.hash(Long lsb, Long msb, Integer partition)`` with Java's int overflow."""
    result = 1
    for element_hash in (_java_long_hash(lsb), _java_long_hash(msb), _int32(partition)):
        result = _int32(31 * result + element_hash)
    return result


def metadata_partition(topic_id: bytes, partition: int,
                       num_partitions: int = REMOTE_LOG_METADATA_TOPIC_PARTITIONS_DEFAULT) -> int:
    """The metadata topic partition for (topic id, partition)."""
    assert len(topic_id) == 16 and num_partitions > 0, (topic_id, num_partitions)
    msb = int.from_bytes(topic_id[:8], "big", signed=True)
    lsb = int.from_bytes(topic_id[8:], "big", signed=True)
    hashed = java_objects_hash_longs_int(lsb, msb, partition)
    return (murmur2(hashed.to_bytes(4, "big", signed=True)) & 0x7FFFFFFF) % num_partitions
