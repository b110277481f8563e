"""Where a fetch is served from, and ListOffsets -2/-4/-5/-6 (table-driven)."""

from __future__ import annotations

import pytest

from tierlog.tiered.read_rules import (
    EARLIEST,
    EARLIEST_LOCAL,
    EARLIEST_PENDING_UPLOAD,
    LATEST_TIERED,
    FetchSource,
    TieredLogState,
    epoch_for_offset,
    fetch_source,
    list_offsets_answer,
)

F = FetchSource
ENTRIES = ((1, 0), (3, 500), (4, 800))
TIERED = TieredLogState(True, log_start_offset=100, local_log_start_offset=600, log_end_offset=1000,
                        highest_remote_offset=699, epoch_entries=ENTRIES)
LOCAL_ONLY = TieredLogState(False, 100, 100, 1000, -1, ENTRIES)


@pytest.mark.parametrize(("state", "offset", "follower", "expected"), [
    (TIERED, 99, False, F.OFFSET_OUT_OF_RANGE),            # below the log start
    (TIERED, 100, False, F.REMOTE),
    (TIERED, 599, False, F.REMOTE),
    (TIERED, 599, True, F.OFFSET_MOVED_TO_TIERED_STORAGE),
    (TIERED, 100, True, F.OFFSET_MOVED_TO_TIERED_STORAGE),
    (TIERED, 600, True, F.LOCAL),
    (TIERED, 600, False, F.LOCAL),
    (TIERED, 1000, False, F.LOCAL),                        # at the log end: an empty local read
    (TIERED, 1001, True, F.OFFSET_OUT_OF_RANGE),
    (LOCAL_ONLY, 100, False, F.LOCAL),
    (LOCAL_ONLY, 99, True, F.OFFSET_OUT_OF_RANGE),
    (TieredLogState(False, 100, 600, 1000, -1), 300, False, F.OFFSET_OUT_OF_RANGE),   # tiering switched off
])
def test_fetch_source(state, offset, follower, expected):
    assert fetch_source(state, offset, from_follower=follower) is expected


@pytest.mark.parametrize(("offset", "epoch"), [(-1, -1), (0, 1), (499, 1), (500, 3), (799, 3), (800, 4), (10**6, 4)])
def test_epoch_for_offset(offset, epoch):
    assert epoch_for_offset(ENTRIES, offset) == epoch


def _state(remote=True, log_start=100, local_start=600, highest_remote=699, entries=ENTRIES):
    return TieredLogState(remote, log_start, local_start, 1000, highest_remote, entries)


@pytest.mark.parametrize(("state", "target", "expected"), [
    (_state(), EARLIEST, (100, 1)),
    (_state(entries=((3, 500),)), EARLIEST, (100, -1)),          # earliest entry starts after the log start
    (_state(), EARLIEST_LOCAL, (600, 3)),
    (_state(remote=False, local_start=100), EARLIEST_LOCAL, (100, 1)),
    (_state(), LATEST_TIERED, (699, 3)),
    (_state(highest_remote=-1), LATEST_TIERED, (-1, -1)),
    (_state(remote=False), LATEST_TIERED, (-1, -1)),
    # KIP-1023's -6
    (_state(remote=False), EARLIEST_PENDING_UPLOAD, (-1, -1)),                        # remote storage off
    (_state(highest_remote=-1, log_start=0, local_start=0), EARLIEST_PENDING_UPLOAD, (0, 1)),   # nothing uploaded
    (_state(highest_remote=-1, log_start=100, local_start=100), EARLIEST_PENDING_UPLOAD, (100, 1)),
    (_state(highest_remote=-1), EARLIEST_PENDING_UPLOAD, (-1, -1)),                   # not known yet: retry
    (_state(), EARLIEST_PENDING_UPLOAD, (700, 3)),                                    # highest uploaded + 1
    (_state(highest_remote=799), EARLIEST_PENDING_UPLOAD, (800, 4)),                  # epoch from the cache
    (_state(highest_remote=50, log_start=100), EARLIEST_PENDING_UPLOAD, (100, 1)),    # clamped to the log start
])
def test_list_offsets(state, target, expected):
    assert tuple(list_offsets_answer(state, target)) == expected


def test_other_targets_are_not_tiered_rules():
    with pytest.raises(ValueError, match="-1"):
        list_offsets_answer(_state(), -1)
