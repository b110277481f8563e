"""Copy candidates and where uploads stopped (table-driven)."""

from __future__ import annotations

import pytest
from tiered_helpers import metadata

from tierlog.tiered import RemoteLogSegmentState
from tierlog.tiered.copy_rules import (
    LocalSegment,
    copy_candidates,
    find_highest_remote_offset,
    upload_resume_offset,
)


def _segments(*bases, log_end):
    """Segments starting at ``bases``; the last one is active and ends at ``log_end``."""
    ends = [*bases[1:], log_end]
    return [LocalSegment(b, e, 100, 0, active=(i == len(bases) - 1)) for i, (b, e) in enumerate(zip(bases, ends))]


SEGS = _segments(0, 100, 200, 300, log_end=350)


@pytest.mark.parametrize(("highest_remote", "log_start", "lso", "expected"), [
    (-1, 0, 350, [0, 100, 200]),          # everything rolled, oldest first; never the active one
    (-1, 0, 300, [0, 100, 200]),          # next base 300 <= LSO 300: segment 200 lies wholly below
    (-1, 0, 299, [0, 100]),               # 200..299 not wholly below the LSO yet
    (-1, 0, 99, []),
    (-1, 0, 100, [0]),
    (99, 0, 350, [100, 200]),             # resume after the highest remote offset
    (149, 0, 350, [100, 200]),            # the segment holding the resume point is uploaded again
    (199, 0, 350, [200]),
    (299, 0, 350, []),
    (-1, 150, 350, [100, 200]),           # from max(highest remote + 1, log start)
    (-1, 200, 350, [200]),
    (120, 250, 350, [200]),
])
def test_copy_candidates(highest_remote, log_start, lso, expected):
    chosen = copy_candidates(SEGS, highest_remote_offset=highest_remote, log_start_offset=log_start,
                             last_stable_offset=lso)
    assert [s.base_offset for s in chosen] == expected


def test_a_log_with_only_the_active_segment_has_no_candidates():
    assert copy_candidates(_segments(0, log_end=50), highest_remote_offset=-1, log_start_offset=0,
                           last_stable_offset=50) == []


ENTRIES = ((0, 0), (2, 100), (5, 250))       # epoch 0: 0..99, epoch 2: 100..249, epoch 5: 250..


@pytest.mark.parametrize(("remote", "log_end", "expected"), [
    ({}, 400, (-1, -1)),                              # nothing uploaded
    ({5: 299}, 400, (299, 5)),                        # the latest epoch has remote data
    ({0: 99, 2: 180}, 400, (180, 2)),                 # walk back past epoch 5
    ({0: 99}, 400, (99, 0)),
    ({2: 300}, 400, (249, 2)),                        # metadata beyond this log's epoch end: clamp
    ({5: 500}, 400, (399, 5)),                        # beyond the log end: clamp to log end - 1
    ({7: 10}, 400, (-1, -1)),                         # an epoch this log never had is ignored
])
def test_find_highest_remote_offset(remote, log_end, expected):
    assert tuple(find_highest_remote_offset(ENTRIES, log_end, remote.get)) == expected


def _finished(start, end, epochs):
    return metadata(start, end, epochs).with_state(RemoteLogSegmentState.COPY_SEGMENT_FINISHED)


@pytest.mark.parametrize(("highest_remote", "finished", "expected"), [
    (-1, [], -1),
    (99, [(0, 99, ((0, 0),))], 99),
    (-1, [(0, 99, ((0, 0),)), (100, 180, ((2, 100),))], 180),     # an old leader's late FINISHED counts
    (180, [(0, 99, ((0, 0),))], 180),                             # never lower than what the log knows
    (99, [(100, 180, ((1, 100),))], 99),                          # a zombie upload (epoch 1 never in this log)
    (99, [(200, 260, ((2, 200), (5, 240)))], 99),                 # epoch 5 began at 240 elsewhere
    (99, [(250, 400, ((5, 250),))], 99),                          # reaches the log end
])
def test_uploads_resume_after_the_highest_finished_segment_of_the_lineage(highest_remote, finished, expected):
    segments = [_finished(*f) for f in finished]
    assert upload_resume_offset(highest_remote, segments, ENTRIES, 400) == expected
