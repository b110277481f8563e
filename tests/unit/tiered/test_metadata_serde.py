"""__remote_log_metadata record values: Kafka's framing, round trips, bad input."""

from __future__ import annotations

import struct

import pytest
from hypothesis import given
from hypothesis import strategies as st
from tiered_helpers import NOW, TP, metadata

from tierlog.tiered import (
    RemoteLogSegmentMetadataUpdate,
    RemoteLogSegmentState,
    RemotePartitionDeleteMetadata,
    RemotePartitionDeleteState,
    TopicIdPartition,
)
from tierlog.tiered.metadata_serde import (
    RemoteLogMetadataFormatError,
    decode_remote_log_metadata,
    encode_remote_log_metadata,
)


def test_partition_delete_bytes_are_kafkas_layout():
    record = RemotePartitionDeleteMetadata(TP, RemotePartitionDeleteState.DELETE_PARTITION_STARTED, NOW, 3)
    expected = (bytes([1, 2, 0])                                     # frame 1, api key 2, version 0
                + bytes([len("orders") + 1]) + b"orders" + TP.topic_id + struct.pack(">i", 0) + b"\x00"
                + struct.pack(">iqb", 3, NOW, 1) + b"\x00")         # broker, event time, state, tags
    assert encode_remote_log_metadata(record) == expected
    assert decode_remote_log_metadata(expected) == record


def test_segment_metadata_and_update_round_trip():
    meta = metadata(100, 199, epochs=((2, None), (5, 150)))
    update = RemoteLogSegmentMetadataUpdate(meta.segment_id, NOW + 5, RemoteLogSegmentState.COPY_SEGMENT_FINISHED,
                                            7, custom_metadata=b"x")
    for record, key in ((meta, 0), (update, 1)):
        data = encode_remote_log_metadata(record)
        assert data[:3] == bytes([1, key, 0])
        assert decode_remote_log_metadata(data) == record


@given(start=st.integers(0, 2**40), length=st.integers(0, 2**20), epoch=st.integers(0, 2**31 - 1),
       partition=st.integers(0, 2**31 - 1), topic=st.text(min_size=1, max_size=30),
       state=st.sampled_from(list(RemoteLogSegmentState)), custom=st.none() | st.binary(max_size=20))
def test_segment_metadata_round_trips(start, length, epoch, partition, topic, state, custom):
    tp = TopicIdPartition(bytes(range(16)), topic, partition)
    meta = metadata(start, start + length, epochs=((epoch, None),), tp=tp, size=length)
    meta = meta.with_state(state)
    meta = type(meta)(**{**{f: getattr(meta, f) for f in meta.__slots__}, "custom_metadata": custom})
    assert decode_remote_log_metadata(encode_remote_log_metadata(meta)) == meta


@pytest.mark.parametrize(("data", "message"), [
    (b"", "truncated"),
    (bytes([0, 0, 0]), "frame version"),
    (bytes([1, 3, 0]), "key 3"),
    (bytes([1, 0, 1]), "v1"),
])
def test_bad_headers_are_rejected(data, message):
    with pytest.raises(RemoteLogMetadataFormatError, match=message):
        decode_remote_log_metadata(data)


def test_garbage_after_a_record_and_an_unknown_state_are_rejected():
    record = RemotePartitionDeleteMetadata(TP, RemotePartitionDeleteState.DELETE_PARTITION_MARKED, NOW, 1)
    data = encode_remote_log_metadata(record)
    with pytest.raises(RemoteLogMetadataFormatError, match="garbage"):
        decode_remote_log_metadata(data + b"\x00")
    bad_state = data[:-2] + b"\x09" + data[-1:]
    with pytest.raises(RemoteLogMetadataFormatError, match="bad remote log metadata"):
        decode_remote_log_metadata(bad_state)


def test_inconsistent_segment_offsets_are_rejected():
    data = bytearray(encode_remote_log_metadata(metadata(100, 199)))
    start = data.index(struct.pack(">q", 100))
    data[start:start + 8] = struct.pack(">q", 500)      # start offset past the end offset
    with pytest.raises(RemoteLogMetadataFormatError, match="inconsistent"):
        decode_remote_log_metadata(bytes(data))
