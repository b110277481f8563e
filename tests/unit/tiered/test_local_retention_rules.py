"""Local deletion of a tiered partition's segments (table-driven)."""

from __future__ import annotations

import pytest

from tierlog.tiered.copy_rules import LocalSegment
from tierlog.tiered.local_retention_rules import (
    LocalRetention,
    local_segments_to_delete,
)

NOW = 1_000_000
# four segments of 100 bytes: [0,100) ts 100, [100,200) ts 200, [200,300) ts 300, active [300,350) ts 400
SEGS = [LocalSegment(0, 100, 100, 100), LocalSegment(100, 200, 100, 200),
        LocalSegment(200, 300, 100, 300), LocalSegment(300, 350, 100, 400, active=True)]


@pytest.mark.parametrize(("limits", "now", "hw", "remote", "log_start", "expected"), [
    (LocalRetention(-1, -1, 0, -2), NOW, 350, 299, 0, 3),          # local.retention.ms 0: every uploaded one
    (LocalRetention(-1, -1, 0, -2), NOW, 350, 199, 0, 2),          # never past the highest remote offset
    (LocalRetention(-1, -1, 0, -2), NOW, 350, 150, 0, 1),          # 100..199 only partly uploaded
    (LocalRetention(-1, -1, 0, -2), NOW, 350, -1, 0, 0),           # nothing uploaded: nothing goes
    (LocalRetention(-1, -1, 0, -2), NOW, 150, 299, 0, 1),          # never at or past the high watermark
    (LocalRetention(-1, -1, NOW - 250, -2), NOW, 350, 299, 0, 2),  # by time: now - max ts > limit
    (LocalRetention(-1, -1, -2, 200), NOW, 350, 299, 0, 2),        # by size: 400 local bytes, keep 200
    (LocalRetention(-1, -1, -2, 250), NOW, 350, 299, 0, 1),
    (LocalRetention(-1, 100, -2, -2), NOW, 350, 299, 0, 3),        # -2: use retention.bytes
    (LocalRetention(-1, -1, -2, -2), NOW, 350, 299, 0, 0),         # no limits at all
    (LocalRetention(-1, -1, -2, -2), NOW, 350, -1, 200, 2),        # below the log start: always
    (LocalRetention(-1, -1, 0, -2, copy_disabled=True), NOW, 350, -1, 0, 0),   # falls back to retention.ms -1
    (LocalRetention(0, -1, -1, -2, copy_disabled=True), NOW, 350, -1, 0, 3),   # retention.ms 0, no upload bound
])
def test_local_deletion(limits, now, hw, remote, log_start, expected):
    assert local_segments_to_delete(SEGS, limits, now_ms=now, high_watermark=hw, highest_remote_offset=remote,
                                    log_start_offset=log_start) == expected
