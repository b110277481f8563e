"""Whether a remote segment belongs to the log's leader-epoch lineage (Kafka's isRemoteSegmentWithinLeaderEpochs)."""

from __future__ import annotations

import pytest
from tiered_helpers import metadata

from tierlog.tiered.lineage import (
    highest_offset_in_lineage,
    within_leader_epochs,
    without_empty_epochs,
)
from tierlog.tiered.segment_metadata import RemoteLogSegmentState

LOG = [(0, 0), (1, 100), (3, 200), (4, 300)]        # epoch 2 never led; the log ends at 400


def test_epochs_with_no_records_are_left_out():
    assert without_empty_epochs([(0, 0), (1, 10), (2, 10), (3, 20)]) == [(0, 0), (2, 10), (3, 20)]


@pytest.mark.parametrize(("start", "end", "epochs", "within"), [
    (0, 99, ((0, 0),), True),
    (50, 149, ((0, 50), (1, 100)), True),
    (150, 250, ((1, 150), (3, 200)), True),
    (300, 399, ((4, 300),), True),
    (300, 400, ((4, 300),), False),                  # reaches the log end
    (50, 120, ((0, 50),), False),                    # epoch 0 ended at 99 in this log
    (150, 250, ((1, 150), (2, 200)), False),         # an epoch this log never had: a diverged history
    (150, 250, ((1, 150), (3, 190)), False),         # epoch 3 began elsewhere
    (500, 599, ((7, 500),), False),                  # beyond the log's last epoch
    (0, 99, ((0, 0), (1, 50)), False),
])
def test_within_leader_epochs(start, end, epochs, within):
    assert within_leader_epochs(metadata(start, end, epochs), LOG, 400) is within


def test_a_log_whose_start_moved_into_an_epoch_still_holds_segments_that_began_before():
    log = [(1, 150), (3, 200), (4, 300)]             # the log start moved to 150
    assert within_leader_epochs(metadata(100, 199, ((1, 100),)), log, 400)
    assert within_leader_epochs(metadata(50, 149, ((0, 50), (1, 100))), log, 400)
    assert not within_leader_epochs(metadata(0, 99, ((0, 0),)), log, 400)


def test_a_log_without_epochs_judges_nothing():
    assert within_leader_epochs(metadata(0, 99, ((9, 0),)), [], 0)


def test_the_highest_offset_in_lineage_ignores_zombie_uploads():
    finished = [metadata(0, 99, ((0, 0),)), metadata(100, 250, ((1, 100), (2, 200)))]
    finished = [m.with_state(RemoteLogSegmentState.COPY_SEGMENT_FINISHED) for m in finished]
    assert highest_offset_in_lineage(finished, LOG, 400) == 99
    assert highest_offset_in_lineage([], LOG, 400) == -1
