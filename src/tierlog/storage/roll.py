"""When the active segment rolls (Kafka's ``LogSegment.shouldRoll``).

A batch group of ``size`` bytes whose last offset is ``last_offset`` goes to a
new segment when the active one cannot index that offset (int32 relative
offsets), or, unless it is empty: the group would push it past segment.bytes,
one of its indexes is full, or segment.ms (less the segment's random jitter)
has passed - measured from the first batch's max timestamp, or from the
segment's creation when it has no timestamp.
"""

from __future__ import annotations

import random

from tierlog.storage.log_config import LogConfig
from tierlog.storage.segment import LogSegment

__all__ = ["roll_jitter_ms", "should_roll"]


def should_roll(active: LogSegment, config: LogConfig, jitter_ms: int, size: int, max_timestamp: int,
                last_offset: int, now_ms: int) -> bool:
    if not active.can_hold(last_offset):
        return True
    if active.size == 0:
        return False
    if active.size + size > config.segment_bytes:
        return True
    if active.indexes_full:
        return True
    rolling = active.rolling_timestamp
    waited = max_timestamp - rolling if rolling >= 0 else now_ms - active.created_ms
    return waited > config.segment_ms - jitter_ms


def roll_jitter_ms(config: LogConfig, rng: random.Random) -> int:
    """A new active segment's jitter: uniform below min(segment.jitter.ms, segment.ms)."""
    jitter = min(config.segment_jitter_ms, config.segment_ms)
    return rng.randrange(jitter) if jitter > 0 else 0
