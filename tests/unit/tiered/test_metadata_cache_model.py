"""RemoteLogMetadataCache against a plain model, over random record sequences (hypothesis)."""

from __future__ import annotations

from hypothesis import given, settings
from hypothesis import strategies as st
from tiered_helpers import NOW, TP, metadata

from tierlog.tiered import (
    RemoteLogSegmentMetadataUpdate,
    RemoteLogSegmentState,
    is_valid_segment_transition,
)
from tierlog.tiered.metadata_cache import ApplyResult, RemoteLogMetadataCache

S = RemoteLogSegmentState
# five adjacent segments of 100 offsets; the epoch changes inside segments 1 and 3
SEGMENTS = [
    metadata(0, 99, epochs=((0, None),)),
    metadata(100, 199, epochs=((0, None), (1, 150))),
    metadata(200, 299, epochs=((1, None),)),
    metadata(300, 399, epochs=((1, None), (4, 340))),
    metadata(400, 499, epochs=((4, None),)),
]
EVENTS = st.lists(st.tuples(st.integers(0, len(SEGMENTS) - 1), st.sampled_from(list(S))), max_size=40)


def _apply(cache, model, index, state):
    meta = SEGMENTS[index]
    if state == S.COPY_SEGMENT_STARTED:
        result = cache.apply(meta)
    else:
        result = cache.apply(RemoteLogSegmentMetadataUpdate(meta.segment_id, NOW, state, 1))
    current = model.get(index)         # a DELETE_SEGMENT_FINISHED segment is forgotten, as in Kafka
    if current is None and state != S.COPY_SEGMENT_STARTED:
        assert result is ApplyResult.UNKNOWN_SEGMENT
    elif is_valid_segment_transition(current, state):
        assert result is ApplyResult.APPLIED, (current, state, result)
        model[index] = state
        if state == S.DELETE_SEGMENT_FINISHED:
            del model[index]
    else:
        assert result is ApplyResult.INVALID_TRANSITION, (current, state, result)


def _expected_segment(model, epoch, offset):
    for index, meta in enumerate(SEGMENTS):
        if model.get(index) != S.COPY_SEGMENT_FINISHED:
            continue
        epochs = dict(meta.segment_leader_epochs)
        if epoch in epochs and epochs[epoch] <= offset <= meta.epoch_end_offset(epoch):
            return meta.segment_id
    return None


@settings(max_examples=200, deadline=None)
@given(EVENTS)
def test_the_cache_agrees_with_the_model(events):
    cache, model = RemoteLogMetadataCache(TP), {}
    for index, state in events:
        _apply(cache, model, index, state)
        live = {SEGMENTS[i].segment_id: s for i, s in model.items()}
        assert {m.segment_id: m.state for m in cache.segments()} == live
        finished = [SEGMENTS[i] for i, s in model.items() if s == S.COPY_SEGMENT_FINISHED]
        assert cache.remote_size_bytes() == sum(m.segment_size_in_bytes for m in finished)
    for epoch in (0, 1, 4):
        for offset in range(0, 500, 10):
            found = cache.segment_for(epoch, offset)
            assert (found.segment_id if found else None) == _expected_segment(model, epoch, offset)
