"""Remote offset indexes: parse Kafka's 8-byte entries and find where to start reading (sans-IO).

An uploaded ``.index`` holds (offset relative to the file's base offset, file
position) entries, both int32 big-endian, increasing. The base offset is the
file's own (its first batch's), which can be below the segment's declared start
offset (a new leader's upload declares the first offset not yet uploaded).
Shared by the broker's remote reader and the Spark source's direct reads.
"""

from __future__ import annotations

import bisect
import struct
from typing import NamedTuple

__all__ = ["OFFSET_ENTRY_BYTES", "OffsetIndex", "parse_offset_index"]

OFFSET_ENTRY_BYTES = 8
_ENTRY = struct.Struct(">ii")


class OffsetIndex(NamedTuple):
    relatives: list[int]        # offset - file base offset, increasing
    positions: list[int]        # file position of the batch holding that offset

    def position_for(self, file_base_offset: int, offset: int) -> int:
        """The file position of the last entry at or below ``offset`` (0 without one)."""
        found = bisect.bisect_right(self.relatives, offset - file_base_offset) - 1
        return self.positions[found] if found >= 0 else 0


def parse_offset_index(data: bytes) -> OffsetIndex:
    """The entries of an index object (a trailing partial entry is ignored)."""
    usable = len(data) - len(data) % OFFSET_ENTRY_BYTES
    entries = [_ENTRY.unpack_from(data, i) for i in range(0, usable, OFFSET_ENTRY_BYTES)]
    return OffsetIndex([r for r, _ in entries], [p for _, p in entries])
