"""The leader epochs an upload carries (Kafka's epochEntriesInRange), table-driven."""

from __future__ import annotations

import pytest

from tierlog.tiered.upload_epochs import (
    EpochCheckpointError,
    epoch_entries_in_range,
    leader_epoch_checkpoint,
    parse_leader_epoch_checkpoint,
    segment_leader_epochs,
)

ENTRIES = [(0, 0), (2, 100), (5, 250)]


@pytest.mark.parametrize(("start", "end", "expected"), [
    (-1, -1, ENTRIES),
    (-1, 250, [(0, 0), (2, 100)]),            # end is exclusive
    (-1, 251, ENTRIES),
    (-1, 100, [(0, 0)]),
    (0, 400, ENTRIES),
    (50, 400, [(0, 50), (2, 100), (5, 250)]),  # the epoch holding the start moves up to it
    (100, 400, [(2, 100), (5, 250)]),
    (120, 200, [(2, 120)]),
    (300, 400, [(5, 300)]),
])
def test_epoch_entries_in_range(start, end, expected):
    assert epoch_entries_in_range(ENTRIES, start, end) == expected


def test_segment_epochs_and_the_uploaded_checkpoint():
    assert segment_leader_epochs(ENTRIES, 50, 200) == ((0, 50), (2, 100))
    data = leader_epoch_checkpoint(ENTRIES, 200)
    assert data == b"0\n2\n0 0\n2 100\n"
    assert parse_leader_epoch_checkpoint(data) == [(0, 0), (2, 100)]
    assert parse_leader_epoch_checkpoint(leader_epoch_checkpoint([], 10)) == []


@pytest.mark.parametrize("data", [b"", b"1\n0\n", b"0\n2\n0 0\n", b"0\nx\n", b"0\n1\n0\n", b"\xff\xfe"])
def test_malformed_checkpoints_are_rejected(data):
    with pytest.raises(EpochCheckpointError):
        parse_leader_epoch_checkpoint(data)
