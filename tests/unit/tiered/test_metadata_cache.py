"""RemoteLogMetadataCache: state transitions, readable segments, epoch lookups, sizes."""

from __future__ import annotations

import pytest
from tiered_helpers import NOW, TP, metadata

from tierlog.tiered import (
    RemoteLogSegmentMetadataUpdate,
    RemoteLogSegmentState,
    RemotePartitionDeleteMetadata,
    RemotePartitionDeleteState,
    TopicIdPartition,
    is_valid_partition_delete_transition,
    is_valid_segment_transition,
)
from tierlog.tiered.metadata_cache import ApplyResult, RemoteLogMetadataCache

S = RemoteLogSegmentState
P = RemotePartitionDeleteState


@pytest.mark.parametrize(("src", "target", "ok"), [
    (None, S.COPY_SEGMENT_STARTED, True),
    (None, S.COPY_SEGMENT_FINISHED, False),
    (None, S.DELETE_SEGMENT_STARTED, False),
    (S.COPY_SEGMENT_STARTED, S.COPY_SEGMENT_STARTED, True),
    (S.COPY_SEGMENT_STARTED, S.COPY_SEGMENT_FINISHED, True),
    (S.COPY_SEGMENT_STARTED, S.DELETE_SEGMENT_STARTED, True),
    (S.COPY_SEGMENT_STARTED, S.DELETE_SEGMENT_FINISHED, False),
    (S.COPY_SEGMENT_FINISHED, S.COPY_SEGMENT_FINISHED, True),
    (S.COPY_SEGMENT_FINISHED, S.COPY_SEGMENT_STARTED, False),
    (S.COPY_SEGMENT_FINISHED, S.DELETE_SEGMENT_STARTED, True),
    (S.COPY_SEGMENT_FINISHED, S.DELETE_SEGMENT_FINISHED, False),
    (S.DELETE_SEGMENT_STARTED, S.DELETE_SEGMENT_STARTED, True),
    (S.DELETE_SEGMENT_STARTED, S.COPY_SEGMENT_FINISHED, False),
    (S.DELETE_SEGMENT_STARTED, S.DELETE_SEGMENT_FINISHED, True),
    (S.DELETE_SEGMENT_FINISHED, S.DELETE_SEGMENT_FINISHED, True),
    (S.DELETE_SEGMENT_FINISHED, S.COPY_SEGMENT_STARTED, False),
])
def test_segment_transitions(src, target, ok):
    assert is_valid_segment_transition(src, target) is ok


@pytest.mark.parametrize(("src", "target", "ok"), [
    (None, P.DELETE_PARTITION_MARKED, True),
    (None, P.DELETE_PARTITION_STARTED, False),
    (P.DELETE_PARTITION_MARKED, P.DELETE_PARTITION_MARKED, True),
    (P.DELETE_PARTITION_MARKED, P.DELETE_PARTITION_STARTED, True),
    (P.DELETE_PARTITION_MARKED, P.DELETE_PARTITION_FINISHED, False),
    (P.DELETE_PARTITION_STARTED, P.DELETE_PARTITION_FINISHED, True),
    (P.DELETE_PARTITION_FINISHED, P.DELETE_PARTITION_MARKED, False),
])
def test_partition_delete_transitions(src, target, ok):
    assert is_valid_partition_delete_transition(src, target) is ok


def _update(meta, state, at=1):
    return RemoteLogSegmentMetadataUpdate(meta.segment_id, NOW + at, state, 2)


def _finished(cache, meta):
    assert cache.apply(meta) is ApplyResult.APPLIED
    assert cache.apply(_update(meta, S.COPY_SEGMENT_FINISHED)) is ApplyResult.APPLIED
    return meta


def test_only_finished_segments_are_readable():
    cache = RemoteLogMetadataCache(TP)
    meta = metadata(0, 99, size=500)
    cache.apply(meta)
    assert cache.segment_for(0, 10) is None
    assert cache.highest_offset_for_epoch(0) is None
    assert cache.remote_size_bytes() == 0
    assert [m.state for m in cache.segments()] == [S.COPY_SEGMENT_STARTED]
    cache.apply(_update(meta, S.COPY_SEGMENT_FINISHED))
    assert cache.segment_for(0, 10).segment_id == meta.segment_id
    assert cache.highest_offset_for_epoch(0) == 99
    assert cache.remote_size_bytes() == 500
    cache.apply(_update(meta, S.DELETE_SEGMENT_STARTED))
    assert cache.segment_for(0, 10) is None
    assert [m.state for m in cache.segments()] == [S.DELETE_SEGMENT_STARTED]
    cache.apply(_update(meta, S.DELETE_SEGMENT_FINISHED))
    assert cache.segments() == []
    assert cache.highest_offset_for_epoch(0) == 99          # Kafka keeps the epoch's high mark


def test_illegal_transitions_and_unknown_segments_are_rejected_without_change():
    cache = RemoteLogMetadataCache(TP)
    meta = metadata(0, 99)
    assert cache.apply(_update(meta, S.COPY_SEGMENT_FINISHED)) is ApplyResult.UNKNOWN_SEGMENT
    assert cache.apply(meta.with_state(S.COPY_SEGMENT_FINISHED)) is ApplyResult.INVALID_TRANSITION
    cache.apply(meta)
    assert cache.apply(_update(meta, S.DELETE_SEGMENT_FINISHED)) is ApplyResult.INVALID_TRANSITION
    assert cache.apply(_update(meta, S.COPY_SEGMENT_STARTED)) is ApplyResult.INVALID_TRANSITION
    assert [m.state for m in cache.segments()] == [S.COPY_SEGMENT_STARTED]
    other = metadata(0, 9, tp=TopicIdPartition(TP.topic_id, TP.topic, 1))
    assert cache.apply(other) is ApplyResult.OTHER_PARTITION


def test_repeated_states_are_accepted():
    cache = RemoteLogMetadataCache(TP)
    meta = _finished(cache, metadata(0, 99))
    assert cache.apply(_update(meta, S.COPY_SEGMENT_FINISHED, at=9)) is ApplyResult.APPLIED
    assert cache.segment_for(0, 99).event_timestamp_ms == NOW + 9


def test_started_may_go_straight_to_delete():
    cache = RemoteLogMetadataCache(TP)
    meta = metadata(0, 99)
    cache.apply(meta)
    assert cache.apply(_update(meta, S.DELETE_SEGMENT_STARTED)) is ApplyResult.APPLIED
    assert cache.apply(_update(meta, S.DELETE_SEGMENT_FINISHED)) is ApplyResult.APPLIED
    assert cache.segments() == []


@pytest.mark.parametrize(("epoch", "offset", "expected_start"), [
    (0, 0, 0), (0, 49, 0), (0, 50, None),          # epoch 0 ends at 49 inside segment 1
    (1, 50, 0), (1, 99, 0), (1, 100, 100), (1, 149, 100), (1, 150, None),
    (2, 150, 100), (2, 199, 100), (2, 200, None),  # beyond the highest remote offset
    (3, 120, None), (0, -1, None),
])
def test_segment_lookup_by_epoch_and_offset(epoch, offset, expected_start):
    cache = RemoteLogMetadataCache(TP)
    _finished(cache, metadata(0, 99, epochs=((0, 0), (1, 50))))
    _finished(cache, metadata(100, 199, epochs=((1, 100), (2, 150))))
    found = cache.segment_for(epoch, offset)
    assert (found.start_offset if found else None) == expected_start


def test_highest_offset_per_epoch():
    cache = RemoteLogMetadataCache(TP)
    _finished(cache, metadata(0, 99, epochs=((0, 0), (1, 50))))
    _finished(cache, metadata(100, 199, epochs=((1, 100), (2, 150))))
    assert [cache.highest_offset_for_epoch(e) for e in range(4)] == [49, 149, 199, None]
    assert cache.remote_log_start_offset() == 0


def test_a_new_leaders_overlapping_upload_replaces_the_old_one_which_stays_listed():
    cache = RemoteLogMetadataCache(TP)
    old = _finished(cache, metadata(0, 99, epochs=((0, 0),)))
    new = _finished(cache, metadata(0, 149, epochs=((0, 0),)))
    assert cache.segment_for(0, 50).segment_id == new.segment_id
    assert cache.highest_offset_for_epoch(0) == 149
    assert {m.segment_id for m in cache.segments_for_epoch(0)} == {old.segment_id, new.segment_id}


def test_partition_delete_states():
    cache = RemoteLogMetadataCache(TP)
    def delete(state):
        return cache.apply(RemotePartitionDeleteMetadata(TP, state, NOW, 1))
    assert delete(P.DELETE_PARTITION_STARTED) is ApplyResult.INVALID_TRANSITION
    assert delete(P.DELETE_PARTITION_MARKED) is ApplyResult.APPLIED
    assert delete(P.DELETE_PARTITION_STARTED) is ApplyResult.APPLIED
    assert delete(P.DELETE_PARTITION_FINISHED) is ApplyResult.APPLIED
    assert cache.partition_delete_state is P.DELETE_PARTITION_FINISHED
