"""Which ``__consumer_offsets`` partition coordinates a group.

Kafka's rule: ``Utils.abs(groupId.hashCode()) % offsets.topic.num.partitions``,
with Java's ``String.hashCode`` (``h = 31 * h + c`` over the UTF-16 code units,
wrapping at 32 bits) and Kafka's ``Utils.abs``, which maps Integer.MIN_VALUE to
0 rather than leaving it negative.
"""
from __future__ import annotations

from functools import lru_cache

__all__ = ["coordinator_partition", "java_string_hash"]

_MASK = 0xFFFFFFFF
#: Group / transactional ids whose partition is remembered: every group request asks, and the
#: hash is a Python loop over the id (1 % of a coordinator's samples under 10 committers).
PARTITION_CACHE_IDS = 4096


def java_string_hash(s: str) -> int:
    """Java's ``String.hashCode``: a signed 32-bit int."""
    h = 0
    data = s.encode("utf-16-be")
    for i in range(0, len(data), 2):
        h = (31 * h + (data[i] << 8 | data[i + 1])) & _MASK
    return h - (1 << 32) if h & 0x80000000 else h


def _kafka_abs(n: int) -> int:
    return 0 if n == -(1 << 31) else abs(n)


@lru_cache(maxsize=PARTITION_CACHE_IDS)
def coordinator_partition(group_id: str, num_partitions: int) -> int:
    assert num_partitions > 0, num_partitions
    return _kafka_abs(java_string_hash(group_id)) % num_partitions
